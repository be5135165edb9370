package broker

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The plan finds ErrorCode fields at the list depths where kmsg keeps them,
// through the embedded responses the broker wraps.
func TestErrorCodePlanDepths(t *testing.T) {
	for _, tc := range []struct {
		resp   any
		depths uint64
	}{
		{kmsg.JoinGroupResponse{}, 1 << 0},
		{kmsg.ProduceResponse{}, 1 << 2},
		{kmsg.FindCoordinatorResponse{}, 1<<0 | 1<<1},
		{kmsg.OffsetFetchResponse{}, 1<<0 | 1<<1 | 1<<2 | 1<<3},
		{shareFetchResponse{}, 1<<0 | 1<<2},
		{kmsg.ApiVersionsResponse{}, 1 << 0},
		{kmsg.SASLAuthenticateResponse{}, 1 << 0},
		{struct{ A []struct{ B int } }{}, 0},
	} {
		typ := reflect.TypeOf(tc.resp)
		if got := errorCodePlanOf(typ).depths; got != tc.depths {
			t.Errorf("%v: depths %b, want %b", typ, got, tc.depths)
		}
	}
}
