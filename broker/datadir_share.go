package broker

import (
	"fmt"

	"github.com/sharebroker/sharebroker/durable"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/shareserve"
)

// Share-group state in the data directory (docs/durability.md
// share-state-as-kafka): each share partition writes what Kafka's share
// coordinator would keep, and recovery builds the share partitions from it
// before anything is served, so none is initialised from
// share.auto.offset.reset again.

// shareJournal writes share-partition state to the data directory.
type shareJournal struct {
	b *Broker
	d *durable.Dir
}

func shareKey(k shareserve.Key) durable.ShareKey {
	return durable.ShareKey{Group: k.Group, TopicID: k.TopicID, Partition: k.Partition}
}

// SharePersisted writes one change. A failed write is logged and the
// change stands in memory: as with committed offsets, the broker keeps
// serving, and a restart would find the state of the last good write.
func (j shareJournal) SharePersisted(k shareserve.Key, st sharepartition.Persisted) {
	batches := make([]durable.ShareBatch, len(st.Batches))
	for i, b := range st.Batches {
		batches[i] = durable.ShareBatch{First: b.First, Last: b.Last, State: b.State.PersistedID(), Count: b.Count}
	}
	err := j.d.WriteShareState(shareKey(k), st.Snapshot, durable.ShareState{StartOffset: st.SPSO, StateEpoch: st.StateEpoch, Batches: batches})
	if err != nil {
		j.b.log.Warn("share state not recorded", attrGroup, k.Group, attrPartition, k.Partition, "err", err)
	}
}

// ShareDropped writes that a share partition's state is gone.
func (j shareJournal) ShareDropped(k shareserve.Key) {
	if err := j.d.DeleteShareState(shareKey(k)); err != nil {
		j.b.log.Warn("share state deletion not recorded", attrGroup, k.Group, attrPartition, k.Partition, "err", err)
	}
}

// restoreShares builds the share partitions the data directory kept, makes
// their groups exist (empty, as after a coordinator load), and from then on
// has every share partition write its changes there.
func (b *Broker) restoreShares(d *durable.Dir) error {
	b.shares.SetJournal(shareJournal{b: b, d: d})
	for k, st := range d.ShareStates() {
		t := b.store.TopicByID(k.TopicID)
		if t == nil || t.Partition(k.Partition) == nil {
			continue // recovery dropped state of deleted topics; a partition count never shrinks
		}
		p := sharepartition.Persisted{SPSO: st.StartOffset, StateEpoch: st.StateEpoch, Batches: make([]sharepartition.PersistedBatch, len(st.Batches))}
		for i, sb := range st.Batches {
			s, ok := sharepartition.StateForPersistedID(sb.State)
			if !ok {
				return fmt.Errorf("data directory %s: share group %s: state %d", b.cfg.DataDir, k.Group, sb.State)
			}
			p.Batches[i] = sharepartition.PersistedBatch{First: sb.First, Last: sb.Last, State: s, Count: sb.Count}
		}
		if err := b.shareGroups.RequireEmpty(k.Group, true); err != nil {
			// The ID now names a group of another kind; Kafka keeps share
			// state only for share groups.
			b.log.Warn("share state of a group that is not a share group dropped", attrGroup, k.Group, "err", err)
			continue
		}
		if err := b.shares.Restore(k.Group, t, t.Partition(k.Partition), p); err != nil {
			return fmt.Errorf("data directory %s: share group %s: %w", b.cfg.DataDir, k.Group, err)
		}
	}
	return nil
}
