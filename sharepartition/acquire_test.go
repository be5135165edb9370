package sharepartition

import (
	"testing"
	"time"
)

func TestAcquireModes_KIP1206Example(t *testing.T) {
	// Producer batches [0,4] and [5,9], MaxRecords 6, BatchSize 2.
	h := newHarness(t, nil)
	h.log = batches(0, 10, 5)
	expectRanges(t, h.fetch("a", 6, BatchOptimized, 2), 0, 4, 1, 5, 9, 1)

	h = newHarness(t, nil)
	h.log = batches(0, 10, 5)
	expectRanges(t, h.fetch("a", 6, RecordLimit, 2), 0, 5, 1)
	h.expect(6, 9, Available, "", 0)
	if r := h.at(6); !r.Split {
		t.Fatal("tail past the cut-off should be tracked per offset")
	}
	h.expectSPSO(0, 10)
	// The tail is acquired next, joined with new records into one range.
	h.log = batches(0, 20, 5)
	expectRanges(t, h.fetch("b", 7, RecordLimit, 0), 6, 12, 1)
	h.expect(13, 14, Available, "", 0)
}

func TestAcquireBatchOptimizedCutsAtBatchSize(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 12, 3)
	// A new range starts at the first producer batch whose base is at
	// least BatchSize past the range start: [0,5] then [6,11].
	expectRanges(t, h.fetch("a", 12, BatchOptimized, 5), 0, 5, 1, 6, 11, 1)
	// MaxRecords is soft: it ends at the end of the producer batch.
	h = newHarness(t, nil)
	h.log = batches(0, 12, 3)
	expectRanges(t, h.fetch("a", 4, BatchOptimized, 0), 0, 5, 1)
	// Re-acquisition of whole AVAILABLE batches, one range each.
	h = newHarness(t, nil)
	h.log = batches(0, 12, 3)
	h.fetch("a", 12, BatchOptimized, 3)
	h.mustAck("a", 3, 8, AckRelease)
	expectRanges(t, h.fetch("b", 100, BatchOptimized, 3), 3, 5, 2, 6, 8, 2)
}

func TestAcquireRecordLimitSubsetOfWindowBatch(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 10, 10)
	h.acquire("a", 10)
	h.mustAck("a", 0, 9, AckRelease)
	expectRanges(t, h.fetch("b", 3, RecordLimit, 0), 0, 2, 2)
	expectRanges(t, h.fetch("c", 3, RecordLimit, 0), 3, 5, 2)
	h.expect(6, 9, Available, "", 1)
}

func TestAcquireNothingWhenMaxRecordsZero(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 10, 10)
	if got := h.fetch("a", 0, BatchOptimized, 0); len(got) != 0 {
		t.Fatalf("acquired %v", got)
	}
	if _, err := h.sp.Acquire(AcquireRequest{Member: "a", Mode: 2, MaxRecords: 1}, h.now()); err == nil {
		t.Fatal("mode 2 accepted")
	}
}

func TestThrottling(t *testing.T) {
	// limit 6: throttle 3; a 500-record batch at count 3 yields 250, at 4
	// 125, and at 5 (the last attempt) one record alone.
	h := newHarness(t, func(c *Config) { c.DeliveryCountLimit = 6 })
	h.log = batches(0, 500, 500)
	for i := 1; i <= 3; i++ {
		expectRanges(t, h.acquire("a", 500), 0, 499, int64(i))
		h.mustAck("a", 0, 499, AckRelease)
	}
	expectRanges(t, h.acquire("a", 500), 0, 249, 4)
	h.mustAck("a", 0, 249, AckRelease)
	expectRanges(t, h.acquire("a", 500), 0, 124, 5)
	h.mustAck("a", 0, 124, AckRelease)
	// Offsets 0-124 are at count 5 = limit-1: one at a time.
	expectRanges(t, h.acquire("a", 500), 0, 0, 6)
	expectRanges(t, h.acquire("b", 500), 1, 1, 6)
	h.mustAck("a", 0, 0, AckRelease) // at the limit: archived
	h.expectSPSO(1, 500)
}

func TestThrottledBatchGoesAlone(t *testing.T) {
	// limit 5: throttle 3. Batch A at count 1, batch B at count 3.
	h := newHarness(t, nil)
	h.log = batches(0, 20, 10)
	h.fetch("a", 20, BatchOptimized, 10)
	h.mustAck("a", 10, 19, AckRelease)
	for i := 0; i < 2; i++ {
		h.fetch("a", 10, BatchOptimized, 10)
		h.mustAck("a", 10, 19, AckRelease)
	}
	h.mustAck("a", 0, 9, AckRelease)
	h.expect(10, 19, Available, "", 3)
	// A goes whole; B is throttled and not touched in the same fetch.
	expectRanges(t, h.acquire("b", 100), 0, 9, 2)
	// Alone in the next fetch: 10 >> 1 = 5 records.
	expectRanges(t, h.acquire("b", 100), 10, 14, 4)
	if got := h.acquire("b", 100); len(got) != 1 || got[0].FirstOffset != 15 {
		t.Fatalf("next throttled slice: %v", got)
	}
}

func TestInFlightLimit(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRecordLocks = 100 })
	h.log = batches(0, 300, 10)
	expectRanges(t, h.fetch("a", 500, BatchOptimized, 1000), 0, 99, 1)
	if h.sp.CanAcquire() {
		t.Fatal("full window with nothing available can acquire")
	}
	if got := h.acquire("b", 500); len(got) != 0 {
		t.Fatalf("acquired %v beyond the limit", got)
	}
	// Re-delivery inside the full window, never beyond it.
	h.mustAck("a", 90, 99, AckRelease)
	if !h.sp.CanAcquire() {
		t.Fatal("released records not acquirable")
	}
	expectRanges(t, h.acquire("b", 500), 90, 99, 2)
	// Room again after the SPSO moves.
	h.mustAck("a", 0, 9, AckAccept)
	expectRanges(t, h.acquire("b", 500), 100, 109, 1)
	if h.sp.InFlight() != 100 {
		t.Fatalf("in flight %d", h.sp.InFlight())
	}
}

func TestInFlightLimitOvershootsToBatchEnd(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRecordLocks = 105 })
	h.log = batches(0, 300, 10)
	expectRanges(t, h.acquire("a", 500), 0, 109, 1)
	h = newHarness(t, func(c *Config) { c.MaxRecordLocks = 105 })
	h.log = batches(0, 300, 10)
	expectRanges(t, h.fetch("a", 500, RecordLimit, 0), 0, 104, 1)
}

func TestSPSOAdvancement(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 10, 2)
	h.fetch("a", 10, BatchOptimized, 2)
	h.mustAck("a", 2, 3, AckAccept)
	h.expectSPSO(0, 10)
	h.mustAck("a", 0, 1, AckAccept)
	h.expectSPSO(4, 10)
	if n := h.sp.Batches(); n != 3 {
		t.Fatalf("%d batches; want the 3 above SPSO", n)
	}
	h.mustAck("a", 4, 9, AckReject)
	h.expectSPSO(10, 10)
	if s := h.sp.Snapshot(); s.SPEO != 10 || s.InFlight != 0 || s.NextFetchOffset != 10 || len(s.Ranges) != 0 {
		t.Fatalf("empty window: %+v", s)
	}
}

func TestLateAcceptAfterExpiry(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 10, 10)
	h.acquire("a", 10)
	h.advance(lockDur)
	h.acquire("b", 10)
	// Owned by b now.
	expectErr(t, h.ack("a", 0, 9, AckAccept), ErrInvalidRecordState)
	h.mustAck("b", 0, 9, AckAccept)
	// ack-below-spso: wholly below SPSO now, so a's late accept succeeds
	// as in Kafka, and changes nothing: only b's accept is counted.
	h.mustAck("a", 0, 9, AckAccept)
	if h.ctr.Acknowledged[AckAccept].Load() != 10 {
		t.Fatal("two accepts counted")
	}
	// After expiry with nobody re-acquiring: the record is AVAILABLE.
	h.log = batches(0, 20, 10)
	h.acquire("a", 10)
	h.advance(lockDur)
	expectErr(t, h.ack("a", 10, 19, AckAccept), ErrInvalidRecordState)
}

func TestRenewKeepsLockPastOldDeadline(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 10, 10)
	h.acquire("a", 10)
	step := lockDur * 4 / 10
	for elapsed := time.Duration(0); elapsed < lockDur*3/2; elapsed += step {
		h.advance(step)
		h.expect(0, 9, Acquired, "a", 1)
		h.mustAck("a", 0, 9, AckRenew)
	}
	if h.ctr.LockExpirations.Load() != 0 {
		t.Fatal("a renewed lock expired")
	}
	h.mustAck("a", 0, 9, AckAccept)
	h.expectSPSO(10, 10)
	if h.timers.Len() != 0 {
		t.Fatalf("%d timers left", h.timers.Len())
	}
}

func TestRenewDisabled(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RenewEnabled = false })
	h.log = batches(0, 10, 10)
	h.acquire("a", 10)
	err := h.sp.Acknowledge("a", []AckBatch{{0, 4, []AckType{AckAccept}}, {5, 9, []AckType{AckRenew}}}, h.now())
	expectErr(t, err, ErrInvalidRecordState)
	h.check()
	h.expect(0, 9, Acquired, "a", 1) // nothing applied
	h.advance(lockDur)
	h.expect(0, 9, Available, "", 1)
}

func TestRenewThenAcceptInOneRequest(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 10, 10)
	h.acquire("a", 10)
	// Batches may share an offset (Kafka compares with <); after RENEW the
	// offset is still ACQUIRED, after anything else it is not.
	err := h.sp.Acknowledge("a", []AckBatch{{0, 4, []AckType{AckRenew}}, {4, 9, []AckType{AckAccept}}}, h.now())
	if err != nil {
		t.Fatal(err)
	}
	h.check()
	h.expect(4, 9, Acknowledged, "", 1)
	err = h.sp.Acknowledge("a", []AckBatch{{0, 2, []AckType{AckAccept}}, {2, 3, []AckType{AckAccept}}}, h.now())
	expectErr(t, err, ErrInvalidRecordState)
	h.check()
	h.expect(0, 3, Acquired, "a", 1)
}

func TestAckValidation(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 10, 10)
	h.acquire("a", 10)
	for _, tc := range []struct {
		name string
		acks []AckBatch
		want error
	}{
		{"inverted", []AckBatch{{5, 4, []AckType{AckAccept}}}, ErrInvalidRequest},
		{"out of order", []AckBatch{{5, 6, []AckType{AckAccept}}, {4, 4, []AckType{AckAccept}}}, ErrInvalidRequest},
		{"no types", []AckBatch{{0, 1, nil}}, ErrInvalidRequest},
		{"type count", []AckBatch{{0, 2, []AckType{AckAccept, AckAccept}}}, ErrInvalidRequest},
		{"bad type", []AckBatch{{0, 0, []AckType{5}}}, ErrInvalidRequest},
		{"negative type", []AckBatch{{0, 0, []AckType{-1}}}, ErrInvalidRequest},
		{"beyond window", []AckBatch{{5, 10, []AckType{AckAccept}}}, ErrInvalidRequest},
		{"other member", []AckBatch{{0, 0, []AckType{AckAccept}}}, ErrInvalidRecordState},
	} {
		member := "a"
		if tc.name == "other member" {
			member = "b"
		}
		err := h.sp.Acknowledge(member, tc.acks, h.now())
		expectErr(t, err, tc.want)
		h.check()
		h.expect(0, 9, Acquired, "a", 1)
	}
	// All or nothing: a good batch before a bad one is not applied.
	err := h.sp.Acknowledge("a", []AckBatch{{0, 4, []AckType{AckAccept}}, {5, 9, []AckType{AckGap}}, {20, 21, []AckType{AckAccept}}}, h.now())
	expectErr(t, err, ErrInvalidRequest)
	h.check()
	h.expect(0, 9, Acquired, "a", 1)
	h.mustAck("a", 0, 4, AckAccept)
	h.mustAck("a", 4, 5, AckAccept) // straddles SPSO 5: offset 4 is skipped
	h.mustAck("a", 7, 7, AckAccept)
	expectErr(t, h.ack("a", 6, 7, AckAccept), ErrInvalidRecordState) // 7 already acknowledged
	h.expect(6, 6, Acquired, "a", 1)
	if err := h.sp.Acknowledge("a", nil, h.now()); err != nil {
		t.Fatal(err)
	}
}

func TestStaleLockFireIsIgnored(t *testing.T) {
	h := newHarness(t, nil)
	h.log = batches(0, 10, 10)
	h.acquire("a", 10)
	b := h.sp.batches[0]
	oldGen := b.gen
	h.mustAck("a", 0, 9, AckRenew)
	// A fire of the old lock that lost its race with the renewal.
	h.sp.expire(b, -1, oldGen)
	h.check()
	h.expect(0, 9, Acquired, "a", 1)
	// And a batch lock firing after the batch was split.
	gen := b.gen
	h.mustAck("a", 0, 0, AckAccept)
	h.sp.expire(b, -1, gen)
	h.check()
	h.expect(1, 9, Acquired, "a", 1)
}

func TestResetStartAndInitialize(t *testing.T) {
	h := newHarness(t, nil)
	if h.sp.InitializeIfNeeded(50) {
		t.Fatal("initialised twice")
	}
	h.log = batches(0, 20, 10)
	h.acquire("a", 10)
	h.sp.ResetStart(5)
	h.check()
	h.expectSPSO(5, 5)
	if h.timers.Len() != 0 {
		t.Fatal("locks survive a reset")
	}
	expectRanges(t, h.acquire("a", 5), 5, 9, 1) // mid-batch start
	sp := New(defaultConfig(), h.timers)
	if _, err := sp.Acquire(AcquireRequest{Member: "a", MaxRecords: 1}, h.now()); err != ErrNotInitialized {
		t.Fatalf("uninitialised acquire: %v", err)
	}
}
