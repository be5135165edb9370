package durable

import "maps"

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
