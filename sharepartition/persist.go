package sharepartition

import "fmt"

// What a share partition hands to persistence, and how it is rebuilt from
// it (docs/durability.md share-state-as-kafka). Kafka's SharePartition
// writes its state through the share coordinator after a record's attempt
// ends (acknowledge, release, lock expiry, session close) and when the
// SPSO moves, never on acquisition; a restarted or new leader reads back
// only what was written. LeaderMoved applies the same rule in memory.

// PersistedBatch is a run of offsets with one persisted state: AVAILABLE,
// ACKNOWLEDGED or ARCHIVED (never ACQUIRED), and the delivery count at the
// time of the write.
type PersistedBatch struct {
	First, Last int64
	State       State
	Count       int16
}

// Persisted is one write: Kafka's WriteShareGroupState for one partition.
// A Snapshot replaces everything kept before (the partition was
// initialised or its start offset reset); otherwise Batches override the
// kept state for their offsets only, and everything below SPSO is gone.
type Persisted struct {
	Snapshot   bool
	SPSO       int64
	StateEpoch int32
	Batches    []PersistedBatch
}

// notePersistLocked queues the end of an attempt, or an archive, for the
// next write, merging it into the last queued batch when it continues it.
func (sp *SharePartition) notePersistLocked(first, last int64, to State, count int16) {
	if n := len(sp.pending); n > 0 {
		if p := &sp.pending[n-1]; p.Last+1 == first && p.State == to && p.Count == count {
			p.Last = last
			return
		}
	}
	sp.pending = append(sp.pending, PersistedBatch{First: first, Last: last, State: to, Count: count})
}

// persistLocked queues the noted changes and the SPSO as one write, if
// cfg.Persist is set and anything changed since the last one. It runs with
// sp.mu held at the end of every method that changes state, so the queue
// holds the writes in the order the changes were made, which replay needs
// (a release followed by an acceptance of the same offset must not be
// read back the other way round); writePersisted hands them on after the
// lock is released and before the method returns, so before the change's
// answer goes out.
func (sp *SharePartition) persistLocked() {
	if sp.cfg.Persist == nil {
		return
	}
	if len(sp.pending) == 0 && sp.spso == sp.persistedSPSO {
		return
	}
	// Batches wholly below the SPSO are gone anyway. The queued write
	// takes the slice; the next change notes into a new one.
	kept := sp.pending[:0]
	for _, b := range sp.pending {
		if b.Last >= sp.spso {
			b.First = max(b.First, sp.spso)
			kept = append(kept, b)
		}
	}
	sp.unwritten = append(sp.unwritten, Persisted{SPSO: sp.spso, StateEpoch: sp.stateEpoch, Batches: kept})
	sp.pending = nil
	sp.persistedSPSO = sp.spso
}

// persistSnapshotLocked writes that the state is now only the SPSO: the
// partition was initialised or reset.
func (sp *SharePartition) persistSnapshotLocked() {
	sp.pending = sp.pending[:0]
	sp.persistedSPSO = sp.spso
	if sp.cfg.Persist != nil {
		sp.unwritten = append(sp.unwritten, Persisted{Snapshot: true, SPSO: sp.spso, StateEpoch: sp.stateEpoch})
	}
}

// StopPersisting ends the partition's writes: a change made from now on
// is not written, what is queued is dropped, and a write in progress has
// finished when it returns. The owner calls it before it records that the
// partition's state is gone, so no late write follows that record.
func (sp *SharePartition) StopPersisting() {
	sp.writeMu.Lock()
	defer sp.writeMu.Unlock()
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.cfg.Persist = nil
	sp.unwritten, sp.pending = nil, nil
}

// writePersisted hands the queued writes to cfg.Persist in order, without
// sp.mu held: writeMu lets one writer at a time take the whole queue, so a
// change whose write another writer took waits on writeMu until that
// write is done. Either way its write has reached the journal when this
// returns (ack-after-write).
func (sp *SharePartition) writePersisted() {
	sp.writeMu.Lock()
	defer sp.writeMu.Unlock()
	sp.mu.Lock()
	queue, persist := sp.unwritten, sp.cfg.Persist
	sp.unwritten = nil
	sp.mu.Unlock()
	for _, p := range queue {
		persist(p)
	}
}

// Restore initialises the partition from persisted state, as Kafka's
// SharePartition.maybeInitialize loads what the share coordinator read
// back: the SPSO, and each batch as an in-flight batch with its state and
// delivery count and no owner. Offsets between batches were acquired
// before the stop and never persisted: they come back AVAILABLE with
// count 0. The window ends after the last batch; the log supplies the
// rest as new. It fails if the partition is already initialised or the
// state is not one Persist could have written.
func (sp *SharePartition) Restore(st Persisted) error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.initialized {
		return fmt.Errorf("%w: restoring an initialised share partition", ErrInvalidRequest)
	}
	prev := st.SPSO
	for _, b := range st.Batches {
		switch {
		case b.State != Available && !b.State.Terminal():
			return fmt.Errorf("%w: persisted state %v at [%d,%d]", ErrInvalidRequest, b.State, b.First, b.Last)
		case b.First < prev || b.Last < b.First || b.Count < 0:
			return fmt.Errorf("%w: persisted batch [%d,%d] count %d after offset %d", ErrInvalidRequest, b.First, b.Last, b.Count, prev)
		}
		prev = b.Last + 1
	}
	sp.resetLocked(st.SPSO)
	sp.stateEpoch = st.StateEpoch
	for _, b := range st.Batches {
		if b.First > sp.end {
			gap := sp.appendLocked(sp.end, b.First-1)
			gap.state = Available
		}
		nb := sp.appendLocked(b.First, b.Last)
		nb.state, nb.count = b.State, b.Count
	}
	sp.advanceLocked()
	sp.persistedSPSO = sp.spso
	return nil
}
