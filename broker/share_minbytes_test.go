package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/broker"
)

// share-fetch-min-bytes (docs/share-groups.md §2.8), with kgo: a share
// consumer asking for 1 MiB at least waits, its fetch parked with two
// small records acquirable, until MaxWait passes on the broker clock; then
// it gets them.
func TestShareFetchMinBytesKgo(t *testing.T) {
	e, base := newHTTPShareEnv(t, broker.Config{})
	e.produce("r0", "r1")
	const maxWait = 5 * time.Second
	cl := newShareConsumer(t, e.addr, semTopic, semGroup, kgo.FetchMinBytes(1<<20), kgo.FetchMaxWait(maxWait))
	got := make(chan []*kgo.Record, 1)
	go func() {
		var recs []*kgo.Record
		for e.ctx.Err() == nil && len(recs) == 0 {
			recs = cl.PollFetches(e.ctx).Records()
		}
		got <- recs
	}()
	// Parked although two records are there: MinBytes is not met.
	waitMetric(t, base, "sharebroker_share_fetches_waiting", map[string]string{"node": "0"}, 1)
	select {
	case recs := <-got:
		t.Fatalf("%d records delivered before MaxWait, MinBytes unmet", len(recs))
	default:
	}
	e.clock.Advance(maxWait)
	select {
	case recs := <-got:
		if len(recs) != 2 {
			t.Fatalf("delivered %d records at MaxWait, want both", len(recs))
		}
	case <-e.ctx.Done():
		t.Fatal("nothing delivered after MaxWait passed on the broker clock")
	}
}
