package metrics

import (
	"testing"

	"github.com/sharebroker/sharebroker/storage"
)

// The request path counts share requests per topic with no allocation once
// the topic's counters exist (share.go).
func TestShareTopicCountersDoNotAllocate(t *testing.T) {
	s := newShareMetrics(1)
	id := storage.TopicID{1}
	s.topic(0, id) // made once, on first use
	if allocs := testing.AllocsPerRun(100, func() {
		c := s.topic(0, id)
		c.fetches.Add(1)
		c.acksFailed.Add(1)
	}); allocs != 0 {
		t.Fatalf("%v allocations per count, want 0", allocs)
	}
	if got := s.topic(0, id).fetches.Load(); got != 101 {
		t.Fatalf("fetches %d, want 101", got)
	}
}

// BenchmarkShareTopicCounters is the per-topic counting a ShareFetch does.
func BenchmarkShareTopicCounters(b *testing.B) {
	s := newShareMetrics(3)
	ids := []storage.TopicID{{1}, {2}, {3}}
	b.ReportAllocs()
	for b.Loop() {
		for _, id := range ids {
			s.topic(2, id).fetches.Add(1)
		}
	}
}
