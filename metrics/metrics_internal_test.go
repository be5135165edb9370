package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// The request path pays atomic adds only: once a series exists, counting
// into it allocates nothing, whichever counter it is.
func TestCountingDoesNotAllocate(t *testing.T) {
	m := New(Config{Registry: prometheus.NewRegistry(), Lazy: true, FirstNode: 5, Nodes: 2})
	id := storage.TopicID{1}
	start := time.Now()
	count := func() {
		node := m.Node(6)
		m.Request(node, "ShareFetch", "0", start)
		m.Delivered(2, 100)
		m.RejectFrame(RejectBadBody, node)
		m.SASLAuth("PLAIN", true, node)
		m.Denied(acl.ResourceTopic, node)
		m.Panics().Inc()
		m.FireDelay(time.Millisecond)
		w := m.WaitsOf(6)
		w.Parked().Add(1)
		w.Parked().Add(-1)
		w.Expired()
		m.ShareFetchRequest(6, id, true)
		m.ShareAckRequest(6, id, false)
	}
	count() // series made once, on first use
	if allocs := testing.AllocsPerRun(100, count); allocs != 0 {
		t.Fatalf("%v allocations per count, want 0", allocs)
	}
}

// fakeState is broker state as the collectors read it.
type fakeState struct {
	conns    []int32
	counters sharepartition.Counters
	parts    []SharePartition
	sessions map[int32]SessionCache
	fetches  map[int32]SessionCache
	groups   []group.ShareGroupState
	topics   map[storage.TopicID]string
}

func (s *fakeState) Connections(count func(int32)) {
	for _, n := range s.conns {
		count(n)
	}
}
func (s *fakeState) LockTimers() int                         { return 3 }
func (s *fakeState) ShareCounters() *sharepartition.Counters { return &s.counters }
func (s *fakeState) SharePartitions(each func(SharePartition)) {
	for _, p := range s.parts {
		each(p)
	}
}
func (s *fakeState) ShareSessions(node int32) SessionCache { return s.sessions[node] }
func (s *fakeState) FetchSessions(node int32) SessionCache { return s.fetches[node] }
func (s *fakeState) ShareGroups(each func(group.ShareGroupState)) {
	for _, g := range s.groups {
		each(g)
	}
}
func (s *fakeState) ShareRebalances() int64 { return 4 }
func (s *fakeState) TopicName(id storage.TopicID) (string, bool) {
	name, ok := s.topics[id]
	return name, ok
}

func (s *fakeState) DeadLetters(written func(string, sharepartition.DeadLetterReason, int64), dropped func(int, int64)) {
	written("g", sharepartition.DeadLetterDeliveryLimit, 5)
	dropped(1, 2)
}

// A scrape reads the state it is given, shows the zero series of what the
// broker serves, and forgets the per-topic counters of a deleted topic.
func TestScrapeReadsState(t *testing.T) {
	kept, gone := storage.TopicID{1}, storage.TopicID{2}
	st := &fakeState{
		conns: []int32{6, 6, 5},
		parts: []SharePartition{{
			Group: "g", Topic: "t", Partition: 3, Stats: sharepartition.Stats{InFlight: 7, Batches: 2},
			FetchLockTime:  Histogram{Bounds: []float64{1}, Counts: []uint64{2, 1}, Sum: 3},
			FetchLockRatio: Histogram{Bounds: []float64{1}, Counts: []uint64{1, 0}, Sum: 0.5},
		}},
		sessions: map[int32]SessionCache{6: {Sessions: 1, Partitions: 4, Evictions: 2}},
		fetches:  map[int32]SessionCache{6: {Sessions: 2, Partitions: 9, Evictions: 3}},
		groups:   []group.ShareGroupState{group.ShareStable, group.ShareStable, group.ShareEmpty},
		topics:   map[storage.TopicID]string{kept: "t"},
	}
	st.counters.Acquired.Add(9)
	m := New(Config{Registry: prometheus.NewRegistry(), Lazy: true, FirstNode: 5, Nodes: 2,
		APIs: []string{"Produce"}, Authorizer: true, SASLMechanisms: []string{"PLAIN"}, State: st})
	m.ShareFetchRequest(6, kept, true)
	m.ShareFetchRequest(6, gone, false)
	m.WaitsOf(6).Parked().Add(1)
	m.Delivered(2, 10)

	families, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"sharebroker_connections", map[string]string{"node": "6"}, 2},
		{"sharebroker_connections", map[string]string{"node": "5"}, 1},
		{"sharebroker_locktimer_timers", nil, 3},
		{"sharebroker_share_records_acquired_total", nil, 9},
		{"sharebroker_share_records_in_flight", map[string]string{"group": "g", "topic": "t", "partition": "3"}, 7},
		{"sharebroker_share_fetch_lock_seconds", map[string]string{"group": "g", "topic": "t", "partition": "3"}, 3},
		{"sharebroker_share_session_partitions", map[string]string{"node": "6"}, 4},
		{"sharebroker_fetch_sessions", map[string]string{"node": "6"}, 2},
		{"sharebroker_fetch_session_partitions", map[string]string{"node": "6"}, 9},
		{"sharebroker_fetch_session_evictions_total", map[string]string{"node": "6"}, 3},
		{"sharebroker_fetch_sessions", map[string]string{"node": "5"}, 0},
		{"sharebroker_share_fetches_waiting", map[string]string{"node": "6"}, 1},
		{"sharebroker_share_fetch_requests_failed_total", map[string]string{"topic": "t", "node": "6"}, 1},
		{"sharebroker_share_groups", map[string]string{"state": "Stable"}, 2},
		{"sharebroker_share_groups", map[string]string{"state": "Dead"}, 0},
		{"sharebroker_share_group_rebalances_total", nil, 4},
		{"sharebroker_share_delivery_count", nil, 20},
		{"sharebroker_requests_total", map[string]string{"api": "Produce", "error_code": "0", "node": "5"}, 0},
		{"sharebroker_authorization_denials_total", map[string]string{"resource_type": "USER", "node": "6"}, 0},
		{"sharebroker_sasl_authentications_total", map[string]string{"mechanism": "PLAIN", "result": "failure", "node": "5"}, 0},
		{"sharebroker_frames_rejected_total", map[string]string{"reason": RejectTLS, "node": "5"}, 0},
		{"sharebroker_share_dead_letter_records_total", map[string]string{"group": "g", "reason": "delivery_limit"}, 5},
		{"sharebroker_share_dead_letter_records_dropped_total", map[string]string{"cause": "append_failed"}, 2},
	} {
		got, ok := value(families, c.name, c.labels)
		if !ok {
			t.Errorf("%s%v: no series", c.name, c.labels)
		} else if got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if _, ok := m.share.topics[shareTopicKey{6, gone}]; ok {
		t.Error("the deleted topic's counters outlived the scrape")
	}
}

// value is the value of the series of name whose labels include labels: a
// counter's or gauge's value, a histogram's sum.
func value(families []*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			have := make(map[string]string)
			for _, l := range s.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			switch {
			case s.Counter != nil:
				return s.GetCounter().GetValue(), true
			case s.Gauge != nil:
				return s.GetGauge().GetValue(), true
			case s.Histogram != nil:
				return s.GetHistogram().GetSampleSum(), true
			}
		}
	}
	return 0, false
}
