package sharepartition

import (
	"testing"
	"time"
)

// One test per row of the transition table in share-groups.md §1.2.

func TestRow1_AcquireAvailable(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 20, 10)
	expectRanges(t, h.acquire("a", 10), 0, 9, 1)
	h.expect(0, 9, Acquired, "a", 1)
	if r := h.at(0); !r.LockDeadline.Equal(epoch.Add(lockDur)) {
		t.Fatalf("lock deadline %v; want now+lock duration", r.LockDeadline)
	}
	if h.sp.NextFetchOffset() != 10 || h.sp.InFlight() != 10 {
		t.Fatalf("next fetch %d in flight %d", h.sp.NextFetchOffset(), h.sp.InFlight())
	}
	// An AVAILABLE record in the window is acquired again, count +1.
	h.mustAck("a", 0, 9, AckRelease)
	expectRanges(t, h.acquire("b", 10), 0, 9, 2)
	h.expect(0, 9, Acquired, "b", 2)
	if h.timers.Len() != 1 {
		t.Fatalf("%d timers; want one lock for the batch", h.timers.Len())
	}
	if got := h.ctr.Acquired.Load(); got != 20 {
		t.Fatalf("acquired counter %d", got)
	}
}

func TestRow2_AckAccept(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 10, 10)
	h.acquire("a", 10)
	h.mustAck("a", 0, 9, AckAccept)
	h.expectSPSO(10, 10)
	if h.timers.Len() != 0 || h.ctr.Acknowledged[AckAccept].Load() != 10 {
		t.Fatalf("timers %d, accepted %d", h.timers.Len(), h.ctr.Acknowledged[AckAccept].Load())
	}
	// Partial accept keeps the rest acquired and splits the batch.
	h.log = batches(0, 20, 10)
	h.acquire("a", 10)
	h.mustAck("a", 12, 13, AckAccept)
	h.expect(12, 13, Acknowledged, "", 1)
	h.expect(10, 11, Acquired, "a", 1)
	h.expectSPSO(10, 20)
}

func TestRow3_AckReject(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 10, 10)
	h.acquire("a", 10)
	h.mustAck("a", 0, 4, AckReject)
	h.expect(0, 4, Archived, "", 1)
	h.expectSPSO(5, 10)
	if h.ctr.Archived[ArchivedRejected].Load() != 5 {
		t.Fatal("archive reason not counted")
	}
}

func TestRow4_AckGap(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 10, 10)
	h.acquire("a", 10)
	h.mustAck("a", 0, 9, AckGap, AckAccept, AckGap, AckAccept, AckAccept, AckAccept, AckAccept, AckAccept, AckAccept, AckGap)
	h.expectSPSO(10, 10)
	if h.ctr.Acknowledged[AckGap].Load() != 3 || h.ctr.Acknowledged[AckAccept].Load() != 7 {
		t.Fatal("per-offset types miscounted")
	}
}

func TestRow5_AckRelease(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DeliveryCountLimit = 2 })
	h.log = batches(0, 10, 10)
	h.acquire("a", 10)
	h.mustAck("a", 5, 9, AckRelease)
	h.expect(5, 9, Available, "", 1)
	if h.sp.NextFetchOffset() != 5 || h.changes.Load() == 0 {
		t.Fatalf("next fetch %d, changes %d", h.sp.NextFetchOffset(), h.changes.Load())
	}
	expectRanges(t, h.acquire("b", 10), 5, 9, 2)
	// At the limit a release archives.
	h.mustAck("b", 5, 9, AckRelease)
	h.expect(5, 9, Archived, "", 2)
	if h.ctr.Archived[ArchivedDeliveryLimit].Load() != 5 {
		t.Fatal("limit archive not counted")
	}
	h.mustAck("a", 0, 4, AckAccept)
	h.expectSPSO(10, 10)
}

func TestRow6_AckRenew(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 10, 10)
	h.acquire("a", 10)
	h.advance(20 * time.Second)
	h.mustAck("a", 0, 9, AckRenew)
	h.expect(0, 9, Acquired, "a", 1)
	if r := h.at(0); !r.LockDeadline.Equal(h.now().Add(lockDur)) || r.Split {
		t.Fatalf("after renew: %+v", r)
	}
	if h.timers.Len() != 1 || h.ctr.Acknowledged[AckRenew].Load() != 10 {
		t.Fatalf("timers %d renewed %d", h.timers.Len(), h.ctr.Acknowledged[AckRenew].Load())
	}
	// A renewal uses the lock duration in force now.
	cfg := h.sp.Config()
	cfg.LockDuration = time.Minute
	if err := h.sp.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	h.mustAck("a", 0, 9, AckRenew)
	if r := h.at(0); !r.LockDeadline.Equal(h.now().Add(time.Minute)) {
		t.Fatalf("deadline %v; want now+1m", r.LockDeadline)
	}
}

func TestRow7_LockExpiry(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DeliveryCountLimit = 2 })
	h.log = batches(0, 10, 10)
	h.acquire("a", 10)
	h.advance(lockDur - time.Millisecond)
	h.expect(0, 9, Acquired, "a", 1)
	h.advance(time.Millisecond)
	h.expect(0, 9, Available, "", 1)
	if h.changes.Load() == 0 || h.ctr.LockExpirations.Load() != 10 {
		t.Fatalf("changes %d expirations %d", h.changes.Load(), h.ctr.LockExpirations.Load())
	}
	h.acquire("b", 10)
	h.advance(lockDur)
	// At the limit: archived, and the SPSO passes (drops) them.
	h.expectSPSO(10, 10)
	if h.ctr.Archived[ArchivedDeliveryLimit].Load() != 10 {
		t.Fatal("limit archive not counted")
	}
	if h.timers.Len() != 0 {
		t.Fatalf("%d timers left", h.timers.Len())
	}
}

func TestRow7_SplitOffsetsKeepRemainingTime(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 10, 10)
	h.acquire("a", 10)
	h.advance(10 * time.Second)
	h.mustAck("a", 0, 4, AckAccept) // splits the batch
	if r := h.at(5); !r.Split || !r.LockDeadline.Equal(epoch.Add(lockDur)) {
		t.Fatalf("split offset: %+v", r)
	}
	h.advance(20*time.Second - time.Millisecond)
	h.expect(5, 9, Acquired, "a", 1)
	h.advance(time.Millisecond)
	h.expect(5, 9, Available, "", 1)
}

func TestRow8_MemberReleased(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DeliveryCountLimit = 2 })
	h.log = batches(0, 20, 10)
	h.acquire("a", 10)
	h.acquire("b", 10)
	h.sp.ReleaseMember("a", ReasonSessionClosed, h.now())
	h.expect(0, 9, Available, "", 1) // the attempt counted
	h.expect(10, 19, Acquired, "b", 1)
	h.acquire("c", 10)
	h.sp.ReleaseMember("c", ReasonSessionClosed, h.now())
	h.check()
	h.expectSPSO(10, 20) // archived at the limit, passed by the SPSO
	if h.ctr.Archived[ArchivedDeliveryLimit].Load() != 10 || h.ctr.MemberReleased.Load() != 20 {
		t.Fatal("member release miscounted")
	}
	if h.timers.Len() != 1 {
		t.Fatalf("%d timers; want b's only", h.timers.Len())
	}
}

func TestRow9_LogStartMoved(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 30, 10)
	h.acquire("a", 10) // 0-9 acquired
	h.acquire("b", 10) // 10-19
	h.mustAck("b", 10, 19, AckRelease)
	h.sp.LogStartMoved(15, h.now())
	h.check()
	s := h.sp.Snapshot()
	if s.SPSO != 15 || s.NextFetchOffset != 15 {
		t.Fatalf("SPSO %d next fetch %d", s.SPSO, s.NextFetchOffset)
	}
	h.expect(0, 9, Acquired, "a", 1) // stays until expiry
	h.expect(15, 19, Available, "", 1)
	if h.ctr.Archived[ArchivedLogStart].Load() != 5 {
		t.Fatalf("archived below log start: %d", h.ctr.Archived[ArchivedLogStart].Load())
	}
	// ack-below-spso: an ack wholly below SPSO succeeds and changes
	// nothing; the records stay acquired.
	h.mustAck("a", 0, 9, AckAccept)
	h.expect(0, 9, Acquired, "a", 1)
	// Expiry archives them (offset < SPSO) and the batch is dropped.
	h.advance(lockDur)
	if n := h.sp.Batches(); n != 1 {
		t.Fatalf("%d batches; want only [10,19]", n)
	}
	// The log start beyond the window empties it.
	h.sp.LogStartMoved(40, h.now())
	h.check()
	h.expectSPSO(40, 40)
}

func TestRow9_LogStartSplitsAcquiredBatch(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 10, 10)
	h.acquire("a", 10)
	h.sp.LogStartMoved(5, h.now())
	h.check()
	// The straddling ack skips offsets below SPSO without error.
	h.mustAck("a", 0, 9, AckRelease)
	h.expect(5, 9, Available, "", 1)
	h.expect(0, 4, Acquired, "a", 1)
	h.advance(lockDur)
	h.expectSPSO(5, 10)
	// The batch straddles SPSO, so it stays, its head archived.
	h.expect(0, 4, Archived, "", 1)
	h.expect(5, 9, Available, "", 1)
}

func TestRow10_VanishedBatches(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 10, 5)
	expectRanges(t, h.fetch("a", 10, BatchOptimized, 5), 0, 4, 1, 5, 9, 1)
	h.mustAck("a", 0, 9, AckRelease)
	// Compaction removed [0,4]: the read from 0 starts at 5.
	h.log = batches(5, 10, 5)
	got, err := h.sp.Acquire(AcquireRequest{Member: "b", FetchOffset: 0, Batches: h.log, MaxRecords: 10}, h.now())
	if err != nil {
		t.Fatal(err)
	}
	h.check()
	expectRanges(t, got, 5, 9, 2)
	h.expectSPSO(5, 10)
	if h.ctr.Archived[ArchivedCompacted].Load() != 5 {
		t.Fatal("vanished records not counted")
	}
	// A hole past the window end is archived as its own batch.
	h.log = []LogBatch{{BaseOffset: 15, LastOffset: 19}}
	expectRanges(t, h.acquire("b", 10), 15, 19, 1)
	h.expect(10, 14, Archived, "", 0)
	h.mustAck("b", 5, 9, AckAccept)
	h.expectSPSO(15, 20)
	// With an empty window the start just moves over the hole.
	h.mustAck("b", 15, 19, AckAccept)
	h.log = []LogBatch{{BaseOffset: 30, LastOffset: 31}}
	expectRanges(t, h.acquire("b", 10), 30, 31, 1)
	h.expectSPSO(30, 32)
}

func TestRow11_AbortedUnderReadCommitted(t *testing.T) {
	log := []LogBatch{
		{BaseOffset: 0, LastOffset: 4},
		{BaseOffset: 5, LastOffset: 9, Aborted: true},
		{BaseOffset: 10, LastOffset: 10, Control: true}, // the ABORT marker
		{BaseOffset: 11, LastOffset: 15},
	}
	h := newHarness(t, func(c *Config) { c.ReadCommitted = true })
	h.log = log
	expectRanges(t, h.acquire("a", 100), 0, 4, 1, 10, 15, 1)
	h.expect(5, 9, Archived, "", 1) // was +1
	if h.ctr.Archived[ArchivedAborted].Load() != 5 {
		t.Fatal("aborted not counted")
	}
	h.mustAck("a", 0, 4, AckAccept)
	h.expectSPSO(10, 16)

	// Record-limit mode cuts them out as well.
	h = newHarness(t, func(c *Config) { c.ReadCommitted = true })
	h.log = log
	expectRanges(t, h.fetch("a", 7, RecordLimit, 0), 0, 4, 1)
	h.expect(5, 6, Archived, "", 1)
	h.expect(7, 9, Available, "", 0)

	// read_uncommitted delivers them like any record.
	h = newHarness(t, nil)
	h.log = log
	expectRanges(t, h.acquire("a", 100), 0, 15, 1)
}
