package sharepartition

import (
	"slices"
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
	restored := New(defaultConfig(), h.timers)
	if err := restored.Restore(pl.replay()); err != nil {
		t.Fatal(err)
	}
	if err := restored.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	h.sp.LeaderMoved()
	want, got := h.sp.Snapshot(), restored.Snapshot()
	// LeaderMoved keeps a never-delivered tail of a split batch in the
	// window (28-29); the restored window ends at the last record written
	// and reads them from the log as new: the same state, AVAILABLE with
	// count 0.
	for o := got.End; o < want.End; o++ {
		if r := stateAt(want, o); r.State != Available || r.DeliveryCount != 0 {
			t.Fatalf("offset %d outside the restored window is %+v", o, r)
		}
	}
	want.Ranges = trimRanges(want.Ranges, got.End)
	if !slices.Equal(coalesce(want.Ranges), coalesce(got.Ranges)) || want.SPSO != got.SPSO {
		t.Fatalf("restored\n%+v\nwant (as LeaderMoved loads it)\n%+v", got, want)
	}
	if r := stateAt(got, 10); r.State != Available || r.DeliveryCount != 1 {
		t.Fatalf("offset 10 restored as %+v; want AVAILABLE count 1", r)
	}
}

// trimRanges cuts rs at end.
func trimRanges(rs []RangeState, end int64) []RangeState {
	var out []RangeState
	for _, r := range rs {
		if r.FirstOffset >= end {
			break
		}
		r.LastOffset = min(r.LastOffset, end-1)
		out = append(out, r)
	}
	return out
}

// coalesce merges adjacent ranges of equal state and count, ignoring how
// batches were split.
func coalesce(rs []RangeState) []RangeState {
	var out []RangeState
	for _, r := range rs {
		r.Split = false
		if n := len(out); n > 0 && out[n-1].LastOffset+1 == r.FirstOffset && out[n-1].State == r.State &&
			out[n-1].DeliveryCount == r.DeliveryCount && r.State != Acquired {
			out[n-1].LastOffset = r.LastOffset
			continue
		}
		out = append(out, r)
	}
	return out
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
