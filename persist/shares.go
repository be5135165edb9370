package persist

import (
	"github.com/sharebroker/sharebroker/durable"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// Share-group state in the data directory (docs/durability.md
// share-state-as-kafka): each share partition writes what Kafka's share
// coordinator would keep, and recovery builds the share partitions from it
// before anything is served, so none is initialised from
// share.auto.offset.reset again.

// Shares is the registry of share partitions as the binding sees it
// (shareserve.Service), its keys durable's.
type Shares interface {
	// SetShareJournal makes every share partition created from now on
	// write its changes to j.
	SetShareJournal(j ShareJournal)
	// Restore builds a share partition from the state kept.
	Restore(groupID string, t *storage.Topic, log *storage.Partition, st sharepartition.Persisted) error
}

// ShareJournal hears the changes of share partitions' persisted state
// (shareserve.Journal, keyed as durable keys them).
type ShareJournal interface {
	// SharePersisted records a change of k's persisted state. It is called
	// in the order of the changes, one at a time, after the share
	// partition's lock is released and before the changing call returns.
	SharePersisted(k durable.ShareKey, st sharepartition.Persisted)
	// ShareDropped records that k has no state any more.
	ShareDropped(k durable.ShareKey)
}

// shareJournal writes share-partition state to the data directory.
type shareJournal struct {
	b *Binding
	d *durable.Dir
}

// SharePersisted writes one change. A failed write is logged and the
// change stands in memory: as with committed offsets, the broker keeps
// serving, and a restart would find the state of the last good write.
func (j shareJournal) SharePersisted(k durable.ShareKey, st sharepartition.Persisted) {
	batches := make([]durable.ShareBatch, len(st.Batches))
	for i, b := range st.Batches {
		batches[i] = durable.ShareBatch{First: b.First, Last: b.Last, State: b.State.PersistedID(), Count: b.Count}
	}
	err := j.d.WriteShareState(k, st.Snapshot, durable.ShareState{StartOffset: st.SPSO, StateEpoch: st.StateEpoch, Batches: batches})
	if err != nil {
		j.b.cfg.Log.Warn("share state not recorded", attrGroup, k.Group, attrPartition, k.Partition, "err", err)
	}
}

// ShareDropped writes that a share partition's state is gone.
func (j shareJournal) ShareDropped(k durable.ShareKey) {
	if err := j.d.DeleteShareState(k); err != nil {
		j.b.cfg.Log.Warn("share state deletion not recorded", attrGroup, k.Group, attrPartition, k.Partition, "err", err)
	}
}

// restoreShares builds the share partitions the data directory kept, makes
// their groups exist (empty, as after a coordinator load), and from then on
// has every share partition write its changes there.
func (b *Binding) restoreShares(d *durable.Dir) error {
	b.st.Shares.SetShareJournal(shareJournal{b: b, d: d})
	for k, st := range d.ShareStates() {
		t := b.st.Store.TopicByID(k.TopicID)
		if t == nil || t.Partition(k.Partition) == nil {
			continue // recovery dropped state of deleted topics; a partition count never shrinks
		}
		p := sharepartition.Persisted{SPSO: st.StartOffset, StateEpoch: st.StateEpoch, Batches: make([]sharepartition.PersistedBatch, len(st.Batches))}
		for i, sb := range st.Batches {
			s, ok := sharepartition.StateForPersistedID(sb.State)
			if !ok {
				return b.errorf("share group %s: state %d", k.Group, sb.State)
			}
			p.Batches[i] = sharepartition.PersistedBatch{First: sb.First, Last: sb.Last, State: s, Count: sb.Count}
		}
		if err := b.st.ShareGroups.RequireEmpty(k.Group, true); err != nil {
			// The ID now names a group of another kind; Kafka keeps share
			// state only for share groups.
			b.cfg.Log.Warn("share state of a group that is not a share group dropped", attrGroup, k.Group, "err", err)
			continue
		}
		if err := b.st.Shares.Restore(k.Group, t, t.Partition(k.Partition), p); err != nil {
			return b.errorf("share group %s: %w", k.Group, err)
		}
	}
	return nil
}
