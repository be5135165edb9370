package sharepartition

import "time"

// LeaderMoved hands the partition to a new leader as Kafka's would load
// it from the share coordinator (docs/cluster.md move-frees-acquired).
// Kafka persists record states on acknowledgement, release, lock expiry
// and start-offset moves, never on acquisition, and the new leader reads
// back only what was persisted:
//
//   - every ACQUIRED record becomes AVAILABLE with its delivery count
//     lowered by one, the count persisted when its attempt began; its owner
//     is cleared and its lock cancelled without firing (row 12). One below
//     the SPSO (a row 9 leftover) is not in the persisted state at all and
//     is archived;
//   - AVAILABLE, ACKNOWLEDGED and ARCHIVED records and the SPSO stay;
//   - trailing batches never delivered (AVAILABLE with count 0) leave the
//     window: the persisted state ends at the last record it holds, and the
//     new leader reads what follows from the log as new.
//
// It returns the number of records freed and always wakes the fetches
// parked on the partition, so the old leader's answer at once and the new
// leader's see the freed records.
func (sp *SharePartition) LeaderMoved(now time.Time) int64 {
	sp.mu.Lock()
	var freed int64
	for _, b := range sp.batches {
		if b.offs == nil {
			if b.state == Acquired {
				sp.transitionLocked(slot{b, -1}, evLeaderMoved, "", now)
				freed += b.size()
			}
			continue
		}
		for i := range b.offs {
			if b.offs[i].state == Acquired {
				sp.transitionLocked(slot{b, i}, evLeaderMoved, "", now)
				freed++
			}
		}
	}
	sp.advanceLocked()
	for n := len(sp.batches); n > 0; n-- {
		b := sp.batches[n-1]
		if b.first < sp.spso || !b.neverDelivered() {
			break
		}
		sp.batches[n-1] = nil
		sp.batches = sp.batches[:n-1]
		sp.end = b.first
	}
	sp.availHint = min(sp.availHint, sp.end)
	sp.unlockAndEmit(true)
	return freed
}

// neverDelivered reports whether every record of b is AVAILABLE and was
// never acquired: nothing about it was ever persisted.
func (b *batch) neverDelivered() bool {
	if b.offs == nil {
		return b.state == Available && b.count == 0
	}
	for i := range b.offs {
		if r := &b.offs[i]; r.state != Available || r.count != 0 {
			return false
		}
	}
	return true
}
