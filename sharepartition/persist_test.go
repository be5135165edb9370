package sharepartition

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// persistLog collects a partition's writes and replays them the way the
// share coordinator combines them: a snapshot replaces, an update
// overrides its offsets, and everything below the SPSO goes.
type persistLog struct {
	writes []Persisted
}

func (l *persistLog) persist(p Persisted) {
	p.Batches = slices.Clone(p.Batches) // Persist must not keep the slice
	l.writes = append(l.writes, p)
}

func (l *persistLog) replay() Persisted {
	var st Persisted
	byOffset := map[int64]PersistedBatch{}
	for _, w := range l.writes {
		if w.Snapshot {
			clear(byOffset)
		}
		st.SPSO, st.StateEpoch = w.SPSO, w.StateEpoch
		for _, b := range w.Batches {
			for o := b.First; o <= b.Last; o++ {
				byOffset[o] = PersistedBatch{First: o, Last: o, State: b.State, Count: b.Count}
			}
		}
	}
	offs := make([]int64, 0, len(byOffset))
	for o := range byOffset {
		if o >= st.SPSO {
			offs = append(offs, o)
		}
	}
	slices.Sort(offs)
	for _, o := range offs {
		st.Batches = append(st.Batches, byOffset[o])
	}
	return st
}

// Rule: share-state-as-kafka (docs/durability.md): what a partition
// persists, read back by Restore, is the state a new leader loads
// (LeaderMoved): finished records stay, released ones keep their count,
// acquired ones come back AVAILABLE with the count of their last write.
func TestRestoreEqualsLeaderMoved(t *testing.T) {
	var pl persistLog
	h := newHarness(t, func(c *Config) { c.Persist = pl.persist })
	h.log = batches(0, 40, 10)
	h.acquire("a", 10)
	h.mustAck("a", 0, 9, AckAccept)
	h.acquire("a", 10)
	h.mustAck("a", 10, 19, AckRelease)
	h.acquire("b", 10) // 10-19 second delivery, not written
	h.acquire("b", 10) // 20-29 first delivery
	h.mustAck("b", 25, 25, AckReject)
	h.mustAck("b", 27, 27, AckRelease)
	h.fetch("c", 2, RecordLimit, 0)
	h.advance(lockDur / 2)

	if len(pl.writes) == 0 || !pl.writes[0].Snapshot || pl.writes[0].SPSO != 0 {
		t.Fatalf("first write %+v; want the initialisation snapshot at 0", pl.writes)
	}
	restored := checkRestoreIsMove(t, h, &pl)
	if r := stateAt(restored.Snapshot(), 10); r.State != Available || r.DeliveryCount != 1 {
		t.Fatalf("offset 10 restored as %+v; want AVAILABLE count 1", r)
	}
}

// checkRestoreIsMove restores what h's partition persisted into a new
// partition and checks it against h's after LeaderMoved, offset by offset
// from the SPSO. LeaderMoved may keep a never-delivered tail of a split
// batch in its window; the restored window ends at the last offset
// written and reads the rest from the log as new: the same state,
// AVAILABLE with count 0.
func checkRestoreIsMove(t testing.TB, h *harness, pl *persistLog) *SharePartition {
	t.Helper()
	cfg := h.sp.Config()
	cfg.Persist, cfg.OnChange, cfg.Counters = nil, nil, nil
	restored := New(cfg, h.timers)
	if err := restored.Restore(pl.replay()); err != nil {
		t.Fatal(err)
	}
	if err := restored.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	h.sp.LeaderMoved(h.now())
	want, got := h.sp.Snapshot(), restored.Snapshot()
	if want.SPSO != got.SPSO || got.End > want.End {
		t.Fatalf("restored SPSO %d end %d; LeaderMoved leaves SPSO %d end %d", got.SPSO, got.End, want.SPSO, want.End)
	}
	for o := want.SPSO; o < want.End; o++ {
		w, g := stateAt(want, o), RangeState{State: Available}
		if o < got.End {
			g = stateAt(got, o)
		}
		if w.State != g.State || w.DeliveryCount != g.DeliveryCount {
			t.Fatalf("offset %d restored %v count %d; LeaderMoved leaves %v count %d\nrestored %+v\nmoved %+v",
				o, g.State, g.DeliveryCount, w.State, w.DeliveryCount, got, want)
		}
	}
	return restored
}

// The SPSO is written when it moves, expiries are written with their
// count, renewals and acquisitions are not, and a reset is a snapshot
// with the next state epoch.
func TestPersistWhatAndWhen(t *testing.T) {
	var pl persistLog
	h := newHarness(t, func(c *Config) { c.Persist = pl.persist })
	h.log = batches(0, 20, 10)
	n := len(pl.writes)
	h.acquire("a", 10)
	h.mustAck("a", 0, 9, AckRenew)
	if len(pl.writes) != n {
		t.Fatalf("acquisition or renewal written: %+v", pl.writes[n:])
	}
	h.advance(2 * lockDur)
	if w := pl.writes[len(pl.writes)-1]; len(w.Batches) != 1 || w.Batches[0] != (PersistedBatch{0, 9, Available, 1}) {
		t.Fatalf("expiry wrote %+v", w)
	}
	h.acquire("a", 10)
	h.mustAck("a", 0, 9, AckAccept)
	if w := pl.writes[len(pl.writes)-1]; w.SPSO != 10 || len(w.Batches) != 0 {
		t.Fatalf("acceptance at the SPSO wrote %+v; want SPSO 10 and nothing below it", w)
	}
	h.sp.ResetStart(5)
	if w := pl.writes[len(pl.writes)-1]; !w.Snapshot || w.SPSO != 5 || w.StateEpoch != 1 {
		t.Fatalf("reset wrote %+v", w)
	}
}

func TestRestoreRefusesWhatWasNeverWritten(t *testing.T) {
	for _, st := range []Persisted{
		{SPSO: 0, Batches: []PersistedBatch{{0, 3, Acquired, 1}}},
		{SPSO: 5, Batches: []PersistedBatch{{0, 3, Available, 1}}},
		{SPSO: 0, Batches: []PersistedBatch{{0, 3, Available, 1}, {2, 4, Archived, 1}}},
	} {
		sp := New(defaultConfig(), nil)
		if err := sp.Restore(st); err == nil {
			t.Errorf("Restore(%+v) accepted", st)
		}
	}
}

// Rule: share-state-as-kafka, ack-after-write (docs/durability.md): no
// write is made with the share partition's lock held, yet the writes keep
// the order of the changes and each is made before the changing call
// returns. Members acknowledge their own records from several goroutines
// at once, with a writer that yields mid-write so calls overlap; the
// writes, replayed, are the state a new leader loads.
func TestPersistOutsideTheLockInOrder(t *testing.T) {
	var mu sync.Mutex
	var pl persistLog
	var sp *SharePartition
	var sequential atomic.Bool
	lockedWrites := 0
	h := newHarness(t, func(c *Config) {
		c.Persist = func(p Persisted) {
			// While one goroutine changes the partition, a held lock can
			// only be the caller's own: the hook runs on its goroutine.
			if sequential.Load() {
				if !sp.mu.TryLock() {
					lockedWrites++
				} else {
					sp.mu.Unlock()
				}
			}
			runtime.Gosched()
			mu.Lock()
			pl.persist(p)
			mu.Unlock()
		}
	})
	sp = h.sp
	h.log = batches(0, 90, 10)
	sequential.Store(true)
	h.fetch("z", 10, RecordLimit, 0)
	h.mustAck("z", 0, 4, AckAccept)
	h.mustAck("z", 5, 9, AckRelease)
	sequential.Store(false)
	members := []string{"a", "b", "c", "d"}
	owned := map[string][]AcquiredRange{}
	for _, m := range members {
		owned[m] = h.fetch(m, 20, RecordLimit, 0)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 80)
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, r := range owned[m] {
				for o := r.FirstOffset; o <= r.LastOffset; o++ {
					typ := []AckType{AckAccept, AckRelease, AckReject}[(int(o)+i)%3]
					mu.Lock()
					before := len(pl.writes)
					mu.Unlock()
					if err := sp.Acknowledge(m, []AckBatch{{o, o, []AckType{typ}}}, h.now()); err != nil {
						errs <- err
						return
					}
					mu.Lock()
					after := len(pl.writes)
					mu.Unlock()
					if after <= before {
						errs <- fmt.Errorf("%s acknowledged %d and returned before its write", m, o)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if lockedWrites > 0 {
		t.Fatalf("%d writes made with the partition lock held", lockedWrites)
	}
	if err := sp.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	checkRestoreIsMove(t, h, &pl)
}

// Rule: share-state-as-kafka. Once its owner stops a partition's writes
// (the share partition is dropped), no change of it reaches the journal
// any more, so nothing lands after the record that its state is gone.
func TestStopPersistingEndsWrites(t *testing.T) {
	var pl persistLog
	h := newHarness(t, func(c *Config) { c.Persist = pl.persist })
	h.log = batches(0, 20, 10)
	h.acquire("a", 10)
	h.mustAck("a", 0, 4, AckAccept)
	written := len(pl.writes)
	if written == 0 {
		t.Fatal("nothing written before the stop")
	}
	h.sp.StopPersisting()
	h.mustAck("a", 5, 9, AckRelease)
	h.advance(2 * lockDur)
	if len(pl.writes) != written {
		t.Fatalf("%d writes after the stop", len(pl.writes)-written)
	}
}
