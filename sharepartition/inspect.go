package sharepartition

import (
	"errors"
	"fmt"
	"time"
)

// Snapshot is a copy of a partition's state for inspection and tests.
type Snapshot struct {
	Initialized bool
	SPSO        int64
	// SPEO is Kafka's inclusive end offset: End-1 when the window is
	// non-empty, else SPSO.
	SPEO            int64
	End             int64 // first offset never brought into the window
	InFlight        int64
	NextFetchOffset int64
	// Ranges lists the tracked records in offset order: one range per
	// unsplit in-flight batch, and for a split batch its runs of offsets
	// with equal state, owner, count and deadline. Ranges below SPSO
	// are ACQUIRED leftovers of a log start move (row 9) or the finished
	// head of a batch that straddles SPSO.
	Ranges []RangeState
}

// RangeState is one run of records with the same state.
type RangeState struct {
	FirstOffset, LastOffset int64
	State                   State
	Owner                   string
	DeliveryCount           int16
	LockDeadline            time.Time // zero unless ACQUIRED
	Split                   bool      // tracked per offset
}

// Snapshot copies the current state.
func (sp *SharePartition) Snapshot() Snapshot {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	s := Snapshot{
		Initialized:     sp.initialized,
		SPSO:            sp.spso,
		SPEO:            sp.spso,
		End:             sp.end,
		InFlight:        sp.end - sp.spso,
		NextFetchOffset: sp.nextFetchLocked(),
	}
	if sp.end > sp.spso {
		s.SPEO = sp.end - 1
	}
	batchStart := 0 // ranges of the current batch start here: batches never merge
	add := func(first, last int64, r *rec, split bool) {
		rs := RangeState{FirstOffset: first, LastOffset: last, State: r.state, Owner: r.owner,
			DeliveryCount: r.count, Split: split}
		if r.h != nil {
			rs.LockDeadline = time.Unix(0, r.deadline)
		}
		if n := len(s.Ranges); n > batchStart {
			p := &s.Ranges[n-1]
			if p.LastOffset+1 == first && p.State == rs.State && p.Owner == rs.Owner &&
				p.DeliveryCount == rs.DeliveryCount && p.LockDeadline.Equal(rs.LockDeadline) && p.Split == split {
				p.LastOffset = last
				return
			}
		}
		s.Ranges = append(s.Ranges, rs)
	}
	for _, b := range sp.batches {
		batchStart = len(s.Ranges)
		if b.offs == nil {
			add(b.first, b.last, &b.rec, false)
			continue
		}
		for i := range b.offs {
			o := b.first + int64(i)
			add(o, o, &b.offs[i], true)
		}
	}
	return s
}

// Stats is what metrics read of one partition, cheaply: no ranges copied.
type Stats struct {
	InFlight        int64 // offsets in the window, as Snapshot.InFlight
	Batches         int   // in-flight batches, as Batches
	LockExpirations int64 // records whose lock expired, since the partition was made
}

// Stats returns the partition's figures for metrics under one lock.
func (sp *SharePartition) Stats() Stats {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return Stats{InFlight: sp.end - sp.spso, Batches: len(sp.batches), LockExpirations: sp.lockExpirations}
}

// Batches returns the number of in-flight batches (memory follows batches).
func (sp *SharePartition) Batches() int {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return len(sp.batches)
}

// CheckInvariants verifies the partition's invariants and returns every
// violation found. Tests call it after each step; it is O(records).
//
//   - SPSO <= end; SPSO never moves back (except ResetStart).
//   - Batches are ordered and disjoint; those reaching SPSO tile [SPSO, end).
//   - Batches wholly below SPSO hold an ACQUIRED record (row 9 leftovers).
//   - No AVAILABLE record below SPSO or below the next-fetch hint.
//   - ACQUIRED <=> owner set <=> exactly one live lock (counted).
//   - Delivery count <= the highest limit ever configured; ACQUIRED and
//     ACKNOWLEDGED records were delivered at least once.
//   - With Persist set, every change was handed to it: nothing is queued
//     between methods, and the SPSO written is the SPSO.
//
// Terminal states never changing is enforced by the state table (their rows
// are empty, so the code panics) and checked from outside by the tests.
func (sp *SharePartition) CheckInvariants() error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if sp.spso > sp.end {
		bad("SPSO %d > end %d", sp.spso, sp.end)
	}
	if sp.spso < sp.checkedSPSO {
		bad("SPSO moved back from %d to %d", sp.checkedSPSO, sp.spso)
	}
	sp.checkedSPSO = sp.spso
	if sp.cfg.Persist != nil && (len(sp.pending) != 0 || sp.persistedSPSO != sp.spso) {
		bad("persistence behind: %d batches queued, SPSO %d written, %d now", len(sp.pending), sp.persistedSPSO, sp.spso)
	}
	acquired := 0
	expect := int64(-1) // next offset the tiling must continue at
	for i, b := range sp.batches {
		if b.first > b.last {
			bad("batch [%d,%d] inverted", b.first, b.last)
		}
		if i > 0 && b.first <= sp.batches[i-1].last {
			bad("batch [%d,%d] overlaps or precedes [%d,%d]", b.first, b.last, sp.batches[i-1].first, sp.batches[i-1].last)
		}
		if b.last < sp.spso {
			if !b.holdsAcquired() {
				bad("batch [%d,%d] below SPSO %d holds nothing acquired", b.first, b.last, sp.spso)
			}
		} else if expect < 0 {
			if b.first > sp.spso {
				bad("window starts at %d, after SPSO %d", b.first, sp.spso)
			}
			expect = b.last + 1
		} else {
			if b.first != expect {
				bad("batch [%d,%d] leaves a hole after %d", b.first, b.last, expect-1)
			}
			expect = b.last + 1
		}
		check := func(o int64, r *rec) {
			switch {
			case r.state < Available || r.state > Archived:
				bad("offset %d: state %d", o, r.state)
			case (r.state == Acquired) != (r.owner != ""):
				bad("offset %d: %v with owner %q", o, r.state, r.owner)
			case (r.state == Acquired) != (r.h != nil):
				bad("offset %d: %v with lock %v", o, r.state, r.h != nil)
			case r.count > sp.maxLimit:
				bad("offset %d: delivery count %d > limit %d", o, r.count, sp.maxLimit)
			case r.count < 1 && (r.state == Acquired || r.state == Acknowledged):
				bad("offset %d: %v with delivery count %d", o, r.state, r.count)
			case r.state == Available && o < sp.spso:
				bad("offset %d: AVAILABLE below SPSO %d", o, sp.spso)
			case r.state == Available && o < sp.availHint:
				bad("offset %d: AVAILABLE below the next-fetch hint %d", o, sp.availHint)
			}
			if r.state == Acquired {
				acquired++
			}
		}
		if b.offs == nil {
			check(b.first, &b.rec)
			continue
		}
		if int64(len(b.offs)) != b.size() {
			bad("batch [%d,%d] has %d offset states", b.first, b.last, len(b.offs))
		}
		if b.rec != (rec{}) {
			bad("split batch [%d,%d] keeps batch-wide state", b.first, b.last)
		}
		for j := range b.offs {
			check(b.first+int64(j), &b.offs[j])
		}
	}
	if expect < 0 && sp.end != sp.spso {
		bad("window [%d,%d) has no batches", sp.spso, sp.end)
	}
	if expect >= 0 && expect != sp.end {
		bad("batches end at %d, window at %d", expect, sp.end)
	}
	if acquired != sp.liveLocks {
		bad("%d acquired records/batches but %d live locks", acquired, sp.liveLocks)
	}
	return errors.Join(errs...)
}
