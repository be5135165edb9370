package durable

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/sharebroker/sharebroker/storage"
)

// Share-group state in the metadata log, kept as Kafka's share coordinator
// keeps it (docs/durability.md share-state-as-kafka): per share partition
// a snapshot (ShareSnapshot: the start offset, the state epoch, the state
// batches) followed by updates (ShareUpdate: the start offset and the
// batches that changed). Replay combines them as the coordinator does;
// compact-on-start writes one snapshot per share partition.

// ShareKey names one share partition.
type ShareKey struct {
	Group     string
	TopicID   storage.TopicID
	Partition int32
}

// ShareBatch is a run of offsets with one delivery state, by the id
// Kafka's records use (0 AVAILABLE, 2 ACKNOWLEDGED, 4 ARCHIVED), and the
// delivery count when it was written.
type ShareBatch struct {
	First int64 `json:"first"`
	Last  int64 `json:"last"`
	State int8  `json:"state"`
	Count int16 `json:"count"`
}

// ShareState is one share partition's persisted state: the SPSO, the state
// epoch, and the batches at or above the SPSO in offset order, not
// overlapping.
type ShareState struct {
	StartOffset int64
	StateEpoch  int32
	Batches     []ShareBatch
}

// WriteShareState records a change of a share partition's state: a
// snapshot replaces what was kept; an update sets the start offset and
// overrides the offsets of its batches.
func (d *Dir) WriteShareState(k ShareKey, snapshot bool, st ShareState) error {
	op := opShareUpdate
	if snapshot {
		op = opShareSnapshot
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.meta.append(metaRecord{Op: op, Group: k.Group, ID: topicIDString(k.TopicID), Partition: k.Partition,
		StartOffset: st.StartOffset, StateEpoch: st.StateEpoch, Batches: st.Batches})
}

// DeleteShareState records that a share partition has no state any more
// (its group was deleted, or DeleteShareGroupOffsets named its topic).
func (d *Dir) DeleteShareState(k ShareKey) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.meta.append(metaRecord{Op: opShareDelete, Group: k.Group, ID: topicIDString(k.TopicID), Partition: k.Partition})
}

// ShareStates returns the share-partition state recovered.
func (d *Dir) ShareStates() map[ShareKey]ShareState {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[ShareKey]ShareState, len(d.shares))
	for k, st := range d.shares {
		out[k] = ShareState{StartOffset: st.StartOffset, StateEpoch: st.StateEpoch, Batches: slices.Clone(st.Batches)}
	}
	return out
}

// replayShare applies one share record to the replayed state.
func replayShare(m map[ShareKey]*ShareState, r metaRecord) error {
	id, err := parseTopicID(r.ID)
	if err != nil {
		return err
	}
	k := ShareKey{Group: r.Group, TopicID: id, Partition: r.Partition}
	for _, b := range r.Batches {
		if b.Last < b.First || b.Count < 0 || b.State != 0 && b.State != 2 && b.State != 4 {
			return fmt.Errorf("share batch %+v", b)
		}
	}
	switch r.Op {
	case opShareDelete:
		delete(m, k)
	case opShareSnapshot:
		st := &ShareState{StartOffset: r.StartOffset, StateEpoch: r.StateEpoch}
		st.Batches = mergeShareBatches(nil, r.Batches, r.StartOffset)
		m[k] = st
	case opShareUpdate:
		st := m[k]
		if st == nil {
			// A share partition writes its initialisation snapshot first;
			// an update without one comes from a partition whose group or
			// topic was deleted while a request still held it, and is
			// as gone as its state.
			return nil
		}
		// The SPSO never moves back but by a reset, which is a snapshot.
		st.StartOffset = max(st.StartOffset, r.StartOffset)
		st.Batches = mergeShareBatches(st.Batches, r.Batches, st.StartOffset)
	}
	return nil
}

// mergeShareBatches returns old with each of upd laid over it in turn (a
// later batch wins where they overlap, as in Kafka's
// PersisterStateBatchCombiner), cut at start, with adjacent batches of
// equal state and count joined.
func mergeShareBatches(old, upd []ShareBatch, start int64) []ShareBatch {
	cur := slices.Clone(old)
	for _, u := range upd {
		next := cur[:0:0]
		for _, b := range cur {
			if b.Last < u.First || b.First > u.Last {
				next = append(next, b)
				continue
			}
			if b.First < u.First {
				head := b
				head.Last = u.First - 1
				next = append(next, head)
			}
			if b.Last > u.Last {
				tail := b
				tail.First = u.Last + 1
				next = append(next, tail)
			}
		}
		cur = append(next, u)
	}
	slices.SortFunc(cur, func(a, b ShareBatch) int { return cmp.Compare(a.First, b.First) })
	out := cur[:0]
	for _, b := range cur {
		if b.Last < start {
			continue
		}
		b.First = max(b.First, start)
		if n := len(out); n > 0 && out[n-1].Last+1 == b.First && out[n-1].State == b.State && out[n-1].Count == b.Count {
			out[n-1].Last = b.Last
			continue
		}
		out = append(out, b)
	}
	return out
}

// appendShareSnapshots writes one snapshot per share partition of a live
// topic, in a stable order.
func appendShareSnapshots(b []byte, m map[ShareKey]*ShareState) []byte {
	keys := slices.SortedFunc(maps.Keys(m), func(x, y ShareKey) int {
		return cmp.Or(cmp.Compare(x.Group, y.Group), slices.Compare(x.TopicID[:], y.TopicID[:]), cmp.Compare(x.Partition, y.Partition))
	})
	for _, k := range keys {
		st := m[k]
		b = appendMetaRecord(b, metaRecord{Op: opShareSnapshot, Group: k.Group, ID: topicIDString(k.TopicID), Partition: k.Partition,
			StartOffset: st.StartOffset, StateEpoch: st.StateEpoch, Batches: st.Batches})
	}
	return b
}
