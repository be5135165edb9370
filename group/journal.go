package group

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// Hooks through which a data directory (docs/durability.md) sees the
// committed offsets of classic and KIP-848 groups and the GROUP configs.
// Without one they are nil and nothing here runs. Members are not kept: a
// restored group is Empty, and its members rejoin.

// StoredOffset is one committed offset as a data directory keeps it.
type StoredOffset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	CommitTime  time.Time
	ExpireAt    time.Time // zero: the group's retention applies
}

// OffsetJournal is told a group's whole set of committed offsets after
// every change to it, with the group's lock held, so calls for one group
// come in the order of the changes. kind is TypeClassic or TypeConsumer;
// nil offsets means the group is gone. Transactional commits count once
// their transaction commits.
type OffsetJournal func(groupID string, kind Type, offsets []StoredOffset)

// PendingJournal is told a transaction's whole set of pending offset
// commits in a group after every change to it, with the group's lock held:
// after each TxnOffsetCommit, and with nil offsets when its transaction
// ended (after a commit's offsets went to OffsetJournal, so a crash in
// between leaves them pending, to be settled again).
type PendingJournal func(groupID string, kind Type, producerID int64, offsets []StoredOffset)

// ConfigJournal is told a group ID's GROUP config overrides after every
// change, with the store's lock held; nil means none are left.
type ConfigJournal func(groupID string, overrides map[string]string)

// storedLocked lists the committed offsets in topic and partition order;
// the owning group's lock is held.
func (st *offsetStore) storedLocked() []StoredOffset { return storedOffsets(st.committed) }

// storedOffsets lists offsets in topic and partition order.
func storedOffsets(m map[offsetKey]committedOffset) []StoredOffset {
	out := make([]StoredOffset, 0, len(m))
	for k, c := range m {
		out = append(out, StoredOffset{Topic: k.topic, Partition: k.partition, Offset: c.offset, LeaderEpoch: c.leaderEpoch,
			Metadata: c.metadata, CommitTime: c.commitTime, ExpireAt: c.expireAt})
	}
	slices.SortFunc(out, func(a, b StoredOffset) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

func restoredStore(offsets []StoredOffset) offsetStore {
	return offsetStore{committed: restoredOffsets(offsets)}
}

func restoredOffsets(offsets []StoredOffset) map[offsetKey]committedOffset {
	m := make(map[offsetKey]committedOffset, len(offsets))
	for _, o := range offsets {
		m[offsetKey{o.Topic, o.Partition}] = committedOffset{offset: o.Offset, leaderEpoch: o.LeaderEpoch,
			metadata: o.Metadata, commitTime: o.CommitTime, expireAt: o.ExpireAt}
	}
	return m
}

// restorePendingLocked sets producerID's pending commits.
func (st *offsetStore) restorePendingLocked(producerID int64, offsets []StoredOffset) {
	if st.pending == nil {
		st.pending = make(map[int64]map[offsetKey]committedOffset)
	}
	st.pending[producerID] = restoredOffsets(offsets)
}

// RestorePending gives a classic group a transaction's pending commits,
// read back from a data directory before the coordinator serves; the
// group is created Empty if it does not exist, as a TxnOffsetCommit
// creates it.
func (s *ClassicGroups) RestorePending(groupID string, producerID int64, offsets []StoredOffset) error {
	return s.withOffsetGroup(groupID, true, func(g *classicGroup) error {
		g.offsets.restorePendingLocked(producerID, offsets)
		return nil
	})
}

// RestorePending gives a consumer group a transaction's pending commits,
// read back from a data directory before the coordinator serves; the
// group is restored without members if it does not exist.
func (s *ConsumerGroups) RestorePending(groupID string, producerID int64, offsets []StoredOffset) error {
	if g, _ := s.lookup(groupID, false); g == nil {
		if err := s.Restore(groupID, nil); err != nil {
			return err
		}
	}
	return s.withGroup(groupID, func(g *consumerGroup) error {
		g.offsets.restorePendingLocked(producerID, offsets)
		return nil
	})
}

// SetJournal makes j receive every later change of overrides. Call it
// once, before the store is used.
func (s *ConfigStore) SetJournal(j ConfigJournal) { s.journal = j }

// Restore adds an Empty classic group holding offsets, read back from a
// data directory before the coordinator serves. Its offsets expire by
// their commit time, as those of a group without a protocol type do.
func (s *ClassicGroups) Restore(groupID string, offsets []StoredOffset) error {
	if err := s.registry.Claim(groupID, TypeClassic); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.addGroupLocked(groupID, s.clock.Now())
	g.offsets = restoredStore(offsets)
	return nil
}

// Restore adds a KIP-848 consumer group without members holding offsets,
// read back from a data directory before the coordinator serves. It counts
// as empty since now.
func (s *ConsumerGroups) Restore(groupID string, offsets []StoredOffset) error {
	if err := s.registry.Claim(groupID, TypeConsumer); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.addGroupLocked(groupID)
	g.emptySince = s.clock.Now()
	g.offsets = restoredStore(offsets)
	return nil
}

// Restore sets groupID's overrides, read back from a data directory and
// valid when they were stored, before the store is used.
func (s *ConfigStore) Restore(groupID string, overrides map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.overrides[groupID] = maps.Clone(overrides)
}
