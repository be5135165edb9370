package wire

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The plan finds ErrorCode fields at the list depths where kmsg keeps them
// (bit d: d lists down), through a struct that embeds a response, as the broker wraps its Fetch answers.
func TestErrorCodePlanDepths(t *testing.T) {
	want := map[reflect.Type]uint64{
		reflect.TypeFor[kmsg.JoinGroupResponse]():       1 << 0,
		reflect.TypeFor[kmsg.ProduceResponse]():         1 << 2,
		reflect.TypeFor[kmsg.FindCoordinatorResponse](): 1<<0 | 1<<1,
		reflect.TypeFor[kmsg.OffsetFetchResponse]():     1<<0 | 1<<1 | 1<<2 | 1<<3,
		reflect.TypeFor[struct {
			kmsg.ShareFetchResponse
			pieces [][]byte
		}](): 1<<0 | 1<<2,
		reflect.TypeFor[kmsg.SASLAuthenticateResponse](): 1 << 0,
		reflect.TypeFor[struct{ A []struct{ B int } }](): 0,
	}
	for typ, depths := range want {
		if got := errorCodePlanOf(typ).depths; got != depths {
			t.Errorf("%v: depths %b, want %b", typ, got, depths)
		}
	}
}
