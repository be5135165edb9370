package wire

// An answer to any request that carries only an error code, as a test's
// injected fault answers (package faults), and the names a request
// carries, which decide whether a fault applies to it. Both work on every
// kmsg request and response type by reflection, so no API needs code of
// its own.
//
// The error response is built from the request, not by a handler: each
// response list whose entries mirror a request list (Produce topics and
// partitions, Fetch topics and partitions, Metadata topics, OffsetCommit
// topics and partitions, FindCoordinator v4+ keys, ...) gets one entry per
// request entry, with the names, IDs and indexes copied. The code then goes
// to the shallowest level that carries an ErrorCode at the request's
// version: the top-level ErrorCode where the response has one (JoinGroup,
// Heartbeat, SyncGroup, FindCoordinator v0-v3, Fetch v7+, ShareFetch,
// Metadata v13+, ...), else every entry of the first list level that has
// one (Metadata v0-v12 and DeleteTopics topics, FindCoordinator v4+
// coordinators), else every entry below that (Produce and OffsetCommit
// partitions). A Produce with acks=0 gets no answer, as ever.

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrorResponse answers req with code and nothing else, as described at the
// top of this file.
func ErrorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	v := reflect.ValueOf(resp).Elem()
	mirror(v, reflect.ValueOf(req).Elem())
	plan := errorCodePlanOf(v.Type())
	// Try each depth that has an ErrorCode, shallowest first; one that the
	// request's version does not encode is lost in an encode/decode round
	// trip, which is how we learn which fields exist at that version
	// without a table.
	for depth := 0; plan.depths>>depth != 0; depth++ {
		if !plan.hasDepth(depth) || plan.setAt(v, depth, code) == 0 {
			continue
		}
		check := req.ResponseKind()
		if check.ReadFrom(resp.AppendTo(nil)) == nil && plan.countAt(reflect.ValueOf(check).Elem(), depth, code) > 0 {
			return resp
		}
		plan.setAt(v, depth, 0)
	}
	return resp
}

// mirror copies into the response struct dst every field of the request
// struct src with the same name and type (topic names, IDs, partition
// indexes, group IDs, coordinator keys) and, for a list of structs in both,
// makes one response entry per request entry and mirrors each.
func mirror(dst, src reflect.Value) {
	for _, m := range stringListMirrors {
		sf, d := src.FieldByName(m.request), dst.FieldByName(m.response)
		if !sf.IsValid() || sf.Type() != reflect.TypeFor[[]string]() || !d.IsValid() ||
			d.Kind() != reflect.Slice || d.Type().Elem().Kind() != reflect.Struct || sf.Len() == 0 {
			continue
		}
		out := reflect.MakeSlice(d.Type(), sf.Len(), sf.Len())
		for j := range sf.Len() {
			e := out.Index(j)
			if def, ok := e.Addr().Interface().(interface{ Default() }); ok {
				def.Default()
			}
			switch k := e.FieldByName(m.entry); {
			case k.Kind() == reflect.String:
				k.Set(sf.Index(j))
			case k.Kind() == reflect.Pointer && k.Type().Elem().Kind() == reflect.String:
				s := sf.Index(j).String()
				k.Set(reflect.ValueOf(&s))
			}
		}
		d.Set(out)
	}
	for i := range dst.NumField() {
		df := dst.Type().Field(i)
		if !df.IsExported() || df.Name == "Version" {
			continue
		}
		sf := src.FieldByName(df.Name)
		if !sf.IsValid() {
			continue
		}
		d := dst.Field(i)
		switch {
		case d.Kind() == reflect.Slice && d.Type().Elem().Kind() == reflect.Struct &&
			sf.Kind() == reflect.Slice && sf.Type().Elem().Kind() == reflect.Struct:
			out := reflect.MakeSlice(d.Type(), sf.Len(), sf.Len())
			for j := range sf.Len() {
				e := out.Index(j)
				if def, ok := e.Addr().Interface().(interface{ Default() }); ok {
					def.Default()
				}
				mirror(e, sf.Index(j))
			}
			d.Set(out)
		case sf.Type() == d.Type() && isScalar(d.Type()):
			d.Set(sf)
		}
	}
}

// stringListMirrors are the request lists of plain names that a response
// answers with a list of entries, one per name.
var stringListMirrors = []struct{ request, response, entry string }{
	{"CoordinatorKeys", "Coordinators", "Key"}, // FindCoordinator v4+
	{"TopicNames", "Topics", "Topic"},          // DeleteTopics v0-v5
	{"Groups", "Groups", "Group"},              // DescribeGroups, ConsumerGroupDescribe
	{"GroupIDs", "Groups", "GroupID"},          // ShareGroupDescribe
	{"Groups", "Results", "Group"},             // DeleteGroups
}

func isScalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Bool:
		return true
	case reflect.Array:
		return t.Elem().Kind() == reflect.Uint8 // topic IDs
	case reflect.Pointer:
		return t.Elem().Kind() == reflect.String
	}
	return false
}

// RequestNames returns the topics and groups a request names, wherever in
// it they are: Topic and TopicID fields, TopicNames lists, Group and GroupID
// fields, Groups lists, and coordinator keys (a group ID or a transactional
// ID).
func RequestNames(req kmsg.Request, topicName func([16]byte) (string, bool)) (topics, groups []string) {
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := range v.NumField() {
			name, f := v.Type().Field(i).Name, v.Field(i)
			switch {
			case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
				for j := range f.Len() {
					walk(f.Index(j))
				}
			case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
				switch name {
				case "TopicNames", "Topics":
					topics = append(topics, f.Interface().([]string)...)
				case "Groups", "CoordinatorKeys":
					groups = append(groups, f.Interface().([]string)...)
				}
			case name == "TopicID" && f.Type() == reflect.TypeFor[[16]byte]():
				if id := f.Interface().([16]byte); id != [16]byte{} && topicName != nil {
					if name, ok := topicName(id); ok {
						topics = append(topics, name)
					}
				}
			default:
				s, ok := stringOf(f)
				if !ok {
					continue
				}
				switch name {
				case "Topic":
					topics = append(topics, s)
				case "Group", "GroupID", "CoordinatorKey":
					groups = append(groups, s)
				}
			}
		}
	}
	walk(reflect.ValueOf(req).Elem())
	return topics, groups
}

func stringOf(f reflect.Value) (string, bool) {
	switch {
	case f.Kind() == reflect.String:
		return f.String(), true
	case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.String && !f.IsNil():
		return f.Elem().String(), true
	}
	return "", false
}
