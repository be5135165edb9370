package sharepartition

import "testing"

// Rule: move-frees-acquired (docs/cluster.md §5.2): ACQUIRED records become
// AVAILABLE with the count persisted when their attempt began, their locks
// die without firing, finished records and the SPSO stay, and the never
// delivered tail leaves the window.
func TestLeaderMovedLoadsPersistedState(t *testing.T) {
	h := newHarness(t, nil) // limit 5
	h.log = batches(0, 40, 10)
	expectRanges(t, h.acquire("a", 10), 0, 9, 1)
	h.mustAck("a", 0, 9, AckAccept)                // 0-9 acknowledged: SPSO 10
	expectRanges(t, h.acquire("a", 10), 10, 19, 1) // first delivery
	h.mustAck("a", 10, 19, AckRelease)             // persisted AVAILABLE, count 1
	expectRanges(t, h.acquire("b", 10), 10, 19, 2) // second delivery
	expectRanges(t, h.acquire("b", 10), 20, 29, 1) // first delivery
	h.mustAck("b", 25, 25, AckReject)              // 20-29 split; 25 archived
	h.fetch("c", 2, RecordLimit, 0)                // 30-31 acquired by c, 32-39 never delivered
	h.expect(30, 31, Acquired, "c", 1)
	h.expect(32, 39, Available, "", 0)
	before := h.changes.Load()

	if freed := h.sp.LeaderMoved(h.now()); freed != 21 {
		t.Fatalf("freed %d records; want 21", freed)
	}
	h.check()
	h.expect(10, 19, Available, "", 1)
	h.expect(20, 24, Available, "", 0)
	h.expect(25, 25, Archived, "", 1)
	h.expect(26, 29, Available, "", 0)
	if r := h.at(30); r.State != 0 {
		t.Fatalf("offset 30 still tracked: %+v", r) // 30-39: nothing persisted, read again as new
	}
	h.expectSPSO(10, 30)
	if h.sp.liveLocks != 0 || h.changes.Load() == before {
		t.Fatalf("live locks %d, OnChange calls %d->%d", h.sp.liveLocks, before, h.changes.Load())
	}
	if got := h.ctr.LeaderMoved.Load(); got != 21 {
		t.Fatalf("LeaderMoved counter %d; want 21", got)
	}
	h.advance(2 * lockDur) // the old locks never fire
	if got := h.ctr.LockExpirations.Load(); got != 0 {
		t.Fatalf("%d lock expirations after the move", got)
	}
	// The new leader hands them out again with the count Kafka would.
	expectRanges(t, h.acquire("b", 10), 10, 19, 2)
}

// The window ends at the last record something was persisted for: an
// acquired tail that was never delivered before leaves it.
func TestLeaderMovedTrimsUnpersistedTail(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 30, 10)
	h.acquire("a", 10)
	h.mustAck("a", 0, 9, AckAccept)
	h.acquire("a", 20) // 10-29, first delivery
	h.sp.LeaderMoved(h.now())
	h.check()
	h.expectSPSO(10, 10)
	expectRanges(t, h.acquire("b", 30), 10, 29, 1)

	// A record at the delivery limit gets one more attempt.
	h = newHarness(t, func(c *Config) { c.DeliveryCountLimit = 2 })
	h.log = batches(0, 10, 10)
	h.acquire("a", 10)
	h.mustAck("a", 0, 9, AckRelease)
	expectRanges(t, h.acquire("a", 10), 0, 9, 2)
	h.sp.LeaderMoved(h.now())
	h.check()
	expectRanges(t, h.acquire("b", 10), 0, 9, 2)
}
