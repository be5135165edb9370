package durable

import (
	"cmp"
	"maps"
	"slices"
)

// Groups in the metadata log: GROUP config overrides and committed offsets
// of classic and KIP-848 groups, each record holding the whole current set
// of one group ID, so a later one replaces it (docs/durability.md).

// SetGroupConfig records groupID's GROUP config overrides; none means the
// group ID has none left.
func (d *Dir) SetGroupConfig(groupID string, configs map[string]string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(configs) == 0 && d.groupConfigs[groupID] == nil {
		return nil
	}
	if err := d.meta.append(metaRecord{Op: opGroupConfig, Group: groupID, Configs: configs}); err != nil {
		return err
	}
	setGroupConfig(d.groupConfigs, groupID, configs)
	return nil
}

// SetGroupOffsets records the committed offsets of a group; none means the
// group is gone.
func (d *Dir) SetGroupOffsets(g GroupOffsets) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(g.Offsets) == 0 && d.groupOffsets[g.Group] == nil {
		return nil
	}
	if err := d.meta.append(metaRecord{Op: opOffsets, Group: g.Group, Kind: g.Kind, Offsets: g.Offsets}); err != nil {
		return err
	}
	setGroupOffsets(d.groupOffsets, g)
	return nil
}

// GroupConfigs returns the overrides recovered, by group ID.
func (d *Dir) GroupConfigs() map[string]map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]map[string]string, len(d.groupConfigs))
	for id, c := range d.groupConfigs {
		out[id] = maps.Clone(c)
	}
	return out
}

// GroupOffsets returns the committed offsets recovered, by group ID.
func (d *Dir) GroupOffsets() map[string]GroupOffsets {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]GroupOffsets, len(d.groupOffsets))
	for id, g := range d.groupOffsets {
		out[id] = *g
	}
	return out
}

func setGroupConfig(m map[string]map[string]string, groupID string, configs map[string]string) {
	if len(configs) == 0 {
		delete(m, groupID)
		return
	}
	m[groupID] = maps.Clone(configs)
}

func setGroupOffsets(m map[string]*GroupOffsets, g GroupOffsets) {
	if len(g.Offsets) == 0 {
		delete(m, g.Group)
		return
	}
	m[g.Group] = &g
}

// PendingOffsets is a transaction's pending offset commits in a group
// (TxnOffsetCommit), kept until the transaction ends, as Kafka keeps
// transactional offset commit records in __consumer_offsets until their
// marker.
type PendingOffsets struct {
	Group      string
	Kind       string
	ProducerID int64
	Offsets    []GroupOffset
}

type pendingKey struct {
	group      string
	producerID int64
}

// SetPendingOffsets records a transaction's pending commits in a group;
// none means they were settled.
func (d *Dir) SetPendingOffsets(p PendingOffsets) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.meta.append(metaRecord{Op: opPendingOffsets, Group: p.Group, Kind: p.Kind, ProducerID: p.ProducerID, Offsets: p.Offsets})
}

// PendingOffsets returns the pending commits recovered.
func (d *Dir) PendingOffsets() []PendingOffsets {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]PendingOffsets, 0, len(d.pending))
	for _, p := range d.pending {
		out = append(out, *p)
	}
	return out
}

// setPendingOffsets applies one record; a group that is gone takes its
// pending commits with it.
func setPendingOffsets(m map[pendingKey]*PendingOffsets, p PendingOffsets) {
	k := pendingKey{p.Group, p.ProducerID}
	if len(p.Offsets) == 0 {
		delete(m, k)
		return
	}
	m[k] = &p
}

func dropGroupPending(m map[pendingKey]*PendingOffsets, group string) {
	for k := range m {
		if k.group == group {
			delete(m, k)
		}
	}
}

func appendPending(b []byte, m map[pendingKey]*PendingOffsets) []byte {
	keys := slices.SortedFunc(maps.Keys(m), func(x, y pendingKey) int {
		return cmp.Or(cmp.Compare(x.group, y.group), cmp.Compare(x.producerID, y.producerID))
	})
	for _, k := range keys {
		p := m[k]
		b = appendMetaRecord(b, metaRecord{Op: opPendingOffsets, Group: p.Group, Kind: p.Kind, ProducerID: p.ProducerID, Offsets: p.Offsets})
	}
	return b
}
