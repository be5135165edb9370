package durable

import "maps"

// The cluster's finalized feature levels in the metadata log (KIP-584,
// docs/features.md): each record holds the whole finalized set and its
// epoch after one UpdateFeatures, so a later one replaces it
// (features-kept). A directory without one has the levels a new cluster
// of the configured release starts with.

// FeatureLevels is the finalized set: level by feature name, and its epoch.
type FeatureLevels struct {
	Levels map[string]int16
	Epoch  int64
}

// SetFeatures records the finalized feature levels and their epoch.
func (d *Dir) SetFeatures(f FeatureLevels) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.meta.append(metaRecord{Op: opFeatures, Levels: f.Levels, Epoch: f.Epoch}); err != nil {
		return err
	}
	d.features = &FeatureLevels{Levels: maps.Clone(f.Levels), Epoch: f.Epoch}
	return nil
}

// Features returns the finalized levels recovered; ok is false when the
// directory never recorded any.
func (d *Dir) Features() (f FeatureLevels, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.features == nil {
		return FeatureLevels{}, false
	}
	return FeatureLevels{Levels: maps.Clone(d.features.Levels), Epoch: d.features.Epoch}, true
}

func appendFeatures(b []byte, f *FeatureLevels) []byte {
	if f == nil {
		return b
	}
	return appendMetaRecord(b, metaRecord{Op: opFeatures, Levels: f.Levels, Epoch: f.Epoch})
}
