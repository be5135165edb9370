package broker

// Fault injection for the test API: POST /v1/test/faults arms a fault for
// the next N requests of one API key (optionally only those naming a topic
// or a group). A fault does one of three things to a matching request:
//
//   - error: answer with a Kafka error code without calling the handler, so
//     the state change the error claims failed did not happen (a produce
//     answered NOT_LEADER_OR_FOLLOWER appended nothing);
//   - latency: wait that long on real time, then handle it normally;
//   - drop: close the connection instead of answering.
//
// The error response is built from the request, not by the handler: each
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
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/httpapi"
)

// maxFaultLatency bounds an injected delay: it must stay below the clients'
// request timeouts, or the test measures the client instead of the broker.
const maxFaultLatency = 30 * time.Second

// maxFaultCount bounds how many requests one fault applies to.
const maxFaultCount = 1_000_000

// errInjectedDrop closes a connection whose request matched a drop fault.
var errInjectedDrop = errors.New("connection dropped by an injected fault")

// fault is one armed fault. Its fields never change after arming except
// remaining, which faults.mu guards.
type fault struct {
	id        int64
	apiKey    int16
	topic     string // "" matches any request
	group     string // "" matches any request
	errorCode int16
	latency   time.Duration
	drop      bool
	remaining int
}

// faults is the set of armed faults, in the order they were armed; the
// first match takes a request.
type faults struct {
	armed  atomic.Int32 // len(list): lets requests skip the lock when idle
	mu     sync.Mutex
	list   []*fault
	nextID int64
}

func (fs *faults) add(f *fault) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.nextID++
	f.id = fs.nextID
	fs.list = append(fs.list, f)
	fs.armed.Store(int32(len(fs.list)))
}

// take returns a copy of the first fault matching r and uses up one of its
// requests, or nil when none matches. topicName resolves the topic IDs that
// requests carry instead of names (Produce v13, Fetch v13+); nil resolves
// none.
func (fs *faults) take(r *request, topicName func([16]byte) (string, bool)) *fault {
	if fs.armed.Load() == 0 {
		return nil
	}
	var topics, groups []string
	named := false
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.list {
		if f.apiKey != r.header.APIKey {
			continue
		}
		if (f.topic != "" || f.group != "") && !named {
			topics, groups = requestNames(r.body, topicName)
			named = true
		}
		if f.topic != "" && !slices.Contains(topics, f.topic) || f.group != "" && !slices.Contains(groups, f.group) {
			continue
		}
		f.remaining--
		taken := *f
		if f.remaining == 0 {
			fs.list = slices.Delete(fs.list, i, i+1)
			fs.armed.Store(int32(len(fs.list)))
		}
		return &taken
	}
	return nil
}

func (fs *faults) snapshot() []httpapi.FaultJSON {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make([]httpapi.FaultJSON, 0, len(fs.list))
	for _, f := range fs.list {
		out = append(out, f.json())
	}
	return out
}

func (fs *faults) clear() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := len(fs.list)
	fs.list = nil
	fs.armed.Store(0)
	return n
}

// dispatch runs r through the armed faults, then (unless a fault answered
// for it) through its handler.
func (c *conn) dispatch(a *api, r *request) (kmsg.Response, error) {
	f := c.b.faults.take(r, c.b.topicNameByID)
	switch {
	case f == nil:
		return c.call(a, r)
	case f.drop:
		return nil, errInjectedDrop
	case f.latency > 0:
		t := time.NewTimer(f.latency)
		select {
		case <-t.C:
		case <-c.b.done:
			t.Stop()
		}
		return c.call(a, r)
	}
	if p, ok := r.body.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil, nil
	}
	return faultResponse(r.body, f.errorCode), nil
}

// faultResponse answers req with code and nothing else, as described at the
// top of this file.
func faultResponse(req kmsg.Request, code int16) kmsg.Response {
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
	{"Groups", "Groups", "Group"},              // DescribeGroups, ShareGroupDescribe
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

// requestNames returns the topics and groups a request names, wherever in
// it they are: Topic and TopicID fields, TopicNames lists, Group and GroupID
// fields, Groups lists, and coordinator keys (a group ID or a transactional
// ID).
func requestNames(req kmsg.Request, topicName func([16]byte) (string, bool)) (topics, groups []string) {
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

func (f *fault) json() httpapi.FaultJSON {
	key := f.apiKey
	out := httpapi.FaultJSON{ID: f.id, API: kmsg.NameForKey(key), APIKey: &key, Count: f.remaining,
		Topic: f.topic, Group: f.group, ErrorCode: f.errorCode, Drop: f.drop}
	if f.latency > 0 {
		out.Latency = f.latency.String()
	}
	return out
}

// newFault validates a posted fault.
func newFault(in httpapi.FaultJSON) (*fault, error) {
	if in.APIKey == nil {
		return nil, errors.New("api_key is required")
	}
	a := lookupAPI(*in.APIKey)
	if a == nil {
		return nil, fmt.Errorf("api_key %d: not an API this broker serves", *in.APIKey)
	}
	f := &fault{apiKey: *in.APIKey, topic: in.Topic, group: in.Group, errorCode: in.ErrorCode, drop: in.Drop, remaining: in.Count}
	if f.remaining == 0 {
		f.remaining = 1
	}
	if f.remaining < 0 || f.remaining > maxFaultCount {
		return nil, fmt.Errorf("count %d: want 1 to %d", in.Count, maxFaultCount)
	}
	kinds := 0
	if in.ErrorCode != 0 {
		kinds++
		if errorCodePlanOf(reflect.TypeOf(kmsg.RequestForKey(f.apiKey).ResponseKind()).Elem()).empty() {
			return nil, fmt.Errorf("api_key %d (%s): its response has no error code to set", f.apiKey, kmsg.NameForKey(f.apiKey))
		}
	}
	if in.Latency != "" {
		kinds++
		d, err := time.ParseDuration(in.Latency)
		if err != nil || d <= 0 || d > maxFaultLatency {
			return nil, fmt.Errorf("latency %q: want a Go duration above 0 and at most %v", in.Latency, maxFaultLatency)
		}
		f.latency = d
	}
	if in.Drop {
		kinds++
	}
	if kinds != 1 {
		return nil, errors.New("want exactly one of error_code (non-zero), latency and drop")
	}
	return f, nil
}
