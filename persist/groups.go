package persist

import (
	"fmt"
	"time"

	"github.com/sharebroker/sharebroker/durable"
	"github.com/sharebroker/sharebroker/group"
)

// Group kinds as the metadata log names them.
const (
	kindClassic  = "classic"
	kindConsumer = "consumer"
)

// restoreGroups gives the group coordinators and the GROUP config store
// what the data directory kept, and from then on tells it every change
// (docs/durability.md: group-offsets-kept, group-configs-kept).
func (b *Binding) restoreGroups(d *durable.Dir) error {
	st := b.st
	st.GroupConfigs.SetJournal(func(id string, overrides map[string]string) {
		if err := d.SetGroupConfig(id, overrides); err != nil {
			b.cfg.Log.Warn("group config not recorded", attrGroup, id, "err", err)
		}
	})
	journal := func(id string, kind group.Type, offsets []group.StoredOffset) {
		g := durable.GroupOffsets{Group: id, Kind: groupKind(kind), Offsets: toDurableOffsets(offsets)}
		if err := d.SetGroupOffsets(g); err != nil {
			b.cfg.Log.Warn("committed offsets not recorded", attrGroup, id, "err", err)
		}
	}
	st.ClassicGroups.SetJournal(journal)
	st.ConsumerGroups.SetJournal(journal)
	pending := func(id string, kind group.Type, producerID int64, offsets []group.StoredOffset) {
		p := durable.PendingOffsets{Group: id, Kind: groupKind(kind), ProducerID: producerID, Offsets: toDurableOffsets(offsets)}
		if err := d.SetPendingOffsets(p); err != nil {
			b.cfg.Log.Warn("pending transactional offsets not recorded", attrGroup, id, "err", err)
		}
	}
	st.ClassicGroups.SetPendingJournal(pending)
	st.ConsumerGroups.SetPendingJournal(pending)
	for id, overrides := range d.GroupConfigs() {
		st.GroupConfigs.Restore(id, overrides)
	}
	for id, g := range d.GroupOffsets() {
		offsets := fromDurableOffsets(g.Offsets)
		var err error
		switch g.Kind {
		case kindClassic:
			err = st.ClassicGroups.Restore(id, offsets)
		case kindConsumer:
			err = st.ConsumerGroups.Restore(id, offsets)
		default:
			err = fmt.Errorf("unknown group kind %q", g.Kind)
		}
		if err != nil {
			return b.errorf("group %s: %w", id, err)
		}
	}
	// Pending transactional commits, after the groups: settled when the
	// restored coordinator ends their transactions (txn-state-kept).
	for _, p := range d.PendingOffsets() {
		var err error
		switch p.Kind {
		case kindClassic:
			err = st.ClassicGroups.RestorePending(p.Group, p.ProducerID, fromDurableOffsets(p.Offsets))
		case kindConsumer:
			err = st.ConsumerGroups.RestorePending(p.Group, p.ProducerID, fromDurableOffsets(p.Offsets))
		default:
			err = fmt.Errorf("unknown group kind %q", p.Kind)
		}
		if err != nil {
			return b.errorf("pending offsets of group %s: %w", p.Group, err)
		}
	}
	return nil
}

func groupKind(kind group.Type) string {
	if kind == group.TypeConsumer {
		return kindConsumer
	}
	return kindClassic
}

func toDurableOffsets(offsets []group.StoredOffset) []durable.GroupOffset {
	out := make([]durable.GroupOffset, len(offsets))
	for i, o := range offsets {
		out[i] = durable.GroupOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, LeaderEpoch: o.LeaderEpoch,
			Metadata: o.Metadata, CommitTimeMs: o.CommitTime.UnixMilli(), ExpireAtMs: unixMilliOrZero(o.ExpireAt)}
	}
	return out
}

func fromDurableOffsets(offsets []durable.GroupOffset) []group.StoredOffset {
	out := make([]group.StoredOffset, len(offsets))
	for i, o := range offsets {
		out[i] = group.StoredOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, LeaderEpoch: o.LeaderEpoch,
			Metadata: o.Metadata, CommitTime: time.UnixMilli(o.CommitTimeMs), ExpireAt: unixMilliTime(o.ExpireAtMs)}
	}
	return out
}

// unixMilliOrZero and unixMilliTime keep a zero time.Time as 0 in the
// file, and back.
func unixMilliOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func unixMilliTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
