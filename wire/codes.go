package wire

import (
	"reflect"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The ErrorCode fields of a kmsg response are read for every request (the
// broker's error_code metric label) and set by fault injection
// (ErrorResponse); both go through one errorCodePlan per response type,
// worked out once by reflection and cached, so neither re-discovers the
// fields nor disagrees about where they are.

// errorCodePlan says where a struct type keeps int16 ErrorCode fields: its
// own, and those of nested structs (a response type embedding a kmsg
// response, as fetchResponse does) and lists of structs. A plan is built
// once per type and never changes, so any goroutine may use it.
type errorCodePlan struct {
	self   int // index of an int16 ErrorCode field, or -1
	nested []nestedCodes
	// depths has bit d set when an ErrorCode sits d list levels below
	// the struct (bit 0: its own field, or a nested struct's). Nested
	// structs that are not lists add no level.
	depths uint64
}

type nestedCodes struct {
	field int
	slice bool
	plan  *errorCodePlan
}

var errorCodePlans sync.Map // reflect.Type -> *errorCodePlan

// errorCodePlanOf returns the plan of struct type t.
func errorCodePlanOf(t reflect.Type) *errorCodePlan {
	if p, ok := errorCodePlans.Load(t); ok {
		return p.(*errorCodePlan)
	}
	p, _ := errorCodePlans.LoadOrStore(t, buildErrorCodePlan(t, map[reflect.Type]bool{}))
	return p.(*errorCodePlan)
}

// buildErrorCodePlan plans t; seen guards against a type that contains
// itself, whose inner occurrence is planned as empty.
func buildErrorCodePlan(t reflect.Type, seen map[reflect.Type]bool) *errorCodePlan {
	p := &errorCodePlan{self: -1}
	if seen[t] {
		return p
	}
	seen[t] = true
	defer delete(seen, t)
	for i := range t.NumField() {
		f := t.Field(i)
		switch {
		case f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16:
			p.self = i
			p.depths |= 1
		case f.Type.Kind() == reflect.Struct:
			if sub := buildErrorCodePlan(f.Type, seen); !sub.empty() {
				p.nested = append(p.nested, nestedCodes{field: i, plan: sub})
				p.depths |= sub.depths
			}
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			if sub := buildErrorCodePlan(f.Type.Elem(), seen); !sub.empty() {
				p.nested = append(p.nested, nestedCodes{field: i, slice: true, plan: sub})
				p.depths |= sub.depths << 1
			}
		}
	}
	return p
}

// empty reports whether the type carries no ErrorCode anywhere.
func (p *errorCodePlan) empty() bool { return p.depths == 0 }

// hasDepth reports whether an ErrorCode sits depth list levels down.
func (p *errorCodePlan) hasDepth(depth int) bool {
	return depth >= 0 && depth < 64 && p.depths&(1<<depth) != 0
}

// codeScan is what reading every ErrorCode of a value finds: the first
// non-zero code, and whether another non-zero code differs from it.
type codeScan struct {
	first int16
	mixed bool
}

func (s *codeScan) add(code int16) {
	switch {
	case code == 0:
	case s.first == 0:
		s.first = code
	case code != s.first:
		s.mixed = true
	}
}

// scan reads every ErrorCode of v, at any depth, into s. It runs for every
// response sent, so it takes no callback and allocates nothing.
func (p *errorCodePlan) scan(v reflect.Value, s *codeScan) {
	if p.self >= 0 {
		s.add(int16(v.Field(p.self).Int()))
	}
	for _, n := range p.nested {
		f := v.Field(n.field)
		if !n.slice {
			n.plan.scan(f, s)
			continue
		}
		for i := range f.Len() {
			n.plan.scan(f.Index(i), s)
		}
	}
}

// setAt sets every ErrorCode depth list levels below v (an addressable
// struct) to code and returns how many it set.
func (p *errorCodePlan) setAt(v reflect.Value, depth int, code int16) int {
	return p.atDepth(v, depth, func(f reflect.Value) bool { f.SetInt(int64(code)); return true })
}

// countAt returns how many ErrorCode fields depth list levels below v
// equal code.
func (p *errorCodePlan) countAt(v reflect.Value, depth int, code int16) int {
	return p.atDepth(v, depth, func(f reflect.Value) bool { return f.Int() == int64(code) })
}

// atDepth calls fn on every ErrorCode depth list levels below v and
// returns how many calls returned true; it skips branches with no code at
// that depth.
func (p *errorCodePlan) atDepth(v reflect.Value, depth int, fn func(reflect.Value) bool) int {
	if !p.hasDepth(depth) {
		return 0
	}
	n := 0
	if depth == 0 && p.self >= 0 && fn(v.Field(p.self)) {
		n++
	}
	for _, c := range p.nested {
		f := v.Field(c.field)
		if !c.slice {
			n += c.plan.atDepth(f, depth, fn)
			continue
		}
		for i := range f.Len() {
			n += c.plan.atDepth(f.Index(i), depth-1, fn)
		}
	}
	return n
}

// ResponseCodes reads every ErrorCode of resp, at any depth: the first
// non-zero code, and whether another non-zero code differs from it. A nil
// response (Produce with acks=0) has none. It allocates nothing, so it may
// run for every response sent.
func ResponseCodes(resp kmsg.Response) (first int16, mixed bool) {
	if resp == nil {
		return 0, false
	}
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return 0, false
	}
	var s codeScan
	errorCodePlanOf(v.Elem().Type()).scan(v.Elem(), &s)
	return s.first, s.mixed
}

// HasErrorCode reports whether the response to API key carries an
// ErrorCode anywhere, at some version.
func HasErrorCode(key int16) bool {
	return !errorCodePlanOf(reflect.TypeOf(kmsg.RequestForKey(key).ResponseKind()).Elem()).empty()
}
