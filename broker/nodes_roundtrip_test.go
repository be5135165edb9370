package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Rule unseen-round-trip (docs/cluster.md §5.2), step by step with raw
// requests on the manual clock: the leadership of t-0 goes from node A to
// another node and back while member m1, holding records 0-2 from A, sends
// nothing. Its share session on A never hears of the trip, yet the trip
// freed 0-2. m1 is handed offset 0 again and m2 offset 1; an
// acknowledgement that names both what m1 holds and what it held before
// the trip is refused whole, as Kafka's SharePartition.acknowledge refuses
// it (INVALID_REQUEST past the last in-flight offset, INVALID_RECORD_STATE
// for another member's record), and leaves offset 0 ACQUIRED by m1 until
// its lock would expire; the same acknowledgement of offset 0 alone
// succeeds. This is the stall TestShareStuckAfterNodeStop
// (sharebrokertest) meets with kgo.
func TestShareUnseenRoundTrip(t *testing.T) {
	s := newMoveSetup(t, 3) // t-0 holds offsets 0-2, one record per batch; locks last 15 s
	a := s.leader()
	other := s.b.Cluster().Nodes[0].ID
	if other == a {
		other = s.b.Cluster().Nodes[1].ID
	}
	limit := func(n int32) func(*kmsg.ShareFetchRequest) {
		return func(r *kmsg.ShareFetchRequest) { r.MaxRecords, r.BatchSize = n, n }
	}
	acquired := func(resp *kmsg.ShareFetchResponse, first, last int64) {
		t.Helper()
		p := partitionOf(t, resp)
		if p.ErrorCode != 0 || len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].FirstOffset != first ||
			p.AcquiredRecords[0].LastOffset != last || p.AcquiredRecords[0].DeliveryCount != 1 {
			t.Fatalf("want %d-%d acquired at delivery 1: %+v", first, last, p)
		}
	}

	m1 := s.member(a)
	acquired(m1.fetch(2, "m1", 0, nil, nil), 0, 2)

	// The round trip: A → other → A. Stopping the new leader hands t-0
	// back to A (failover-order: A is first in its replica list).
	if _, err := s.b.MoveLeader("t", 0, other); err != nil {
		t.Fatal(err)
	}
	if err := s.b.StopNode(other); err != nil {
		t.Fatal(err)
	}
	if got := s.leader(); got != a {
		t.Fatalf("t-0 led by %d after the trip; want %d", got, a)
	}
	for _, r := range s.window().Ranges {
		if r.State == "ACQUIRED" {
			t.Fatalf("the trip left %+v acquired", r)
		}
	}

	// m1's session on A goes on as if nothing happened: its next fetch is
	// answered normally (no NOT_LEADER_OR_FOLLOWER: A leads) and hands it
	// offset 0 again. m2 gets offset 1.
	acquired(m1.fetch(2, "m1", 1, nil, limit(1)), 0, 0)
	m2 := s.member(a)
	acquired(m2.fetch(2, "m2", 0, nil, limit(1)), 1, 1)

	// Acknowledgements that also name what the trip took from m1 are
	// refused whole.
	for i, c := range []struct {
		last int64
		want *kerr.Error
	}{
		{2, kerr.InvalidRequest},     // offset 2 is past the last in-flight offset (1)
		{1, kerr.InvalidRecordState}, // offset 1 is m2's
	} {
		r := m1.ack(2, "m1", int32(2+i), false, []ackSpec{{0, c.last, []int8{1}}})
		if r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != c.want.Code {
			t.Fatalf("m1 accepts 0-%d: %+v; want %v", c.last, r, c.want)
		}
	}
	// Nothing was applied: offset 0 is still m1's, and stays so for as
	// long as its lock lasts.
	s.clock.Advance(14 * time.Second)
	w := s.window()
	if len(w.Ranges) == 0 || w.Ranges[0].FirstOffset != 0 || w.Ranges[0].State != "ACQUIRED" || w.Ranges[0].Owner != "m1" || w.SPSO != 0 {
		t.Fatalf("after the refusals: %+v; want offset 0 ACQUIRED by m1", w)
	}
	// What m1 does hold, acknowledged alone, is accepted.
	if r := m1.ack(2, "m1", 4, false, []ackSpec{{0, 0, []int8{1}}}); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("m1 accepts 0: %+v", r)
	}
	if w := s.window(); w.SPSO != 1 {
		t.Fatalf("after m1's accept of 0: %+v; want SPSO 1", w)
	}
}
