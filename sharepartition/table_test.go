package sharepartition

import (
	"testing"
	"time"
)

// TestStateTableCells walks every (state, event) cell: the legal ones are
// exactly those of share-groups.md §1.2, and applying an illegal one panics
// (it is our bug; clients' illegal requests are refused before).
func TestStateTableCells(t *testing.T) {
	legal := map[State]map[event]State{
		Available: {evAcquire: Acquired, evLogStart: Archived, evVanish: Archived},
		Acquired: {evAccept: Acknowledged, evReject: Archived, evGap: Archived, evRelease: Available,
			evRenew: Acquired, evExpire: Available, evMemberGone: Available, evAbort: Archived,
			evLeaderMoved: Available},
	}
	for s := Available; s <= Archived; s++ {
		for e := event(0); e < numEvents; e++ {
			want := legal[s][e]
			if got := next[s][e]; got != want {
				t.Errorf("%v on %v: table says %v, want %v", e, s, got, want)
			}
			if want != 0 {
				continue
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%v on %v did not panic", e, s)
					}
				}()
				h := newHarness(t, nil)
				b := h.sp.appendLocked(0, 0)
				b.state = s
				h.sp.transitionLocked(slot{b, -1}, e, "m", time.Time{})
			}()
		}
	}
}

func TestLoweredLimitAppliesWhenAttemptEnds(t *testing.T) {
	h := newHarness(t, nil) // limit 5
	h.log = batches(0, 10, 10)
	for range 2 {
		h.acquire("a", 10)
		h.mustAck("a", 0, 9, AckRelease)
	}
	h.acquire("a", 10) // count 3, in flight
	cfg := h.sp.Config()
	cfg.DeliveryCountLimit = 3
	if err := h.sp.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	h.expect(0, 9, Acquired, "a", 3) // the running attempt is not cut short
	h.mustAck("a", 0, 9, AckRelease)
	h.expectSPSO(10, 10) // count 3 >= new limit 3: archived

	// Records already AVAILABLE at or past a lowered limit get one more
	// attempt, which may exceed it, and then go.
	h = newHarness(t, nil)
	h.log = batches(0, 10, 10)
	for range 3 {
		h.acquire("a", 10)
		h.mustAck("a", 0, 9, AckRelease)
	}
	cfg = h.sp.Config()
	cfg.DeliveryCountLimit = 3
	if err := h.sp.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	expectRanges(t, h.acquire("a", 10), 0, 0, 4) // last attempt: alone
	h.mustAck("a", 0, 0, AckRelease)
	h.expectSPSO(1, 10)
}

func TestConcurrentUse(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRecordLocks = 200 })
	lbs := batches(0, 1_000_000, 7)
	read := func(from int64) []LogBatch {
		i := from / 7
		return lbs[i:min(i+20, int64(len(lbs)))]
	}
	done := make(chan struct{})
	for _, m := range members {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 300 {
				f := h.sp.NextFetchOffset()
				got, err := h.sp.Acquire(AcquireRequest{Member: m, FetchOffset: f, Batches: read(f), MaxRecords: 20, Mode: AcquireMode(i % 2)}, h.clock.Now())
				if err != nil {
					t.Error(err)
					return
				}
				for _, r := range got {
					typ := AckType(i % 5)
					// Errors are expected when a lock expired meanwhile.
					_ = h.sp.Acknowledge(m, []AckBatch{{r.FirstOffset, r.LastOffset, []AckType{typ}}}, h.clock.Now())
				}
			}
		}()
	}
	go func() {
		defer func() { done <- struct{}{} }()
		for range 300 {
			h.clock.Advance(time.Second)
		}
	}()
	for range len(members) + 1 {
		<-done
	}
	if err := h.sp.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
