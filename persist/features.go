package persist

import (
	"github.com/sharebroker/sharebroker/durable"
	"github.com/sharebroker/sharebroker/features"
)

// restoreFeatures gives the cluster's features the finalized levels the
// data directory kept, when it kept any (a new directory keeps the levels
// the configured release and properties start with, and records them at
// the first UpdateFeatures), and from then on writes every change
// (features-kept). A kept level the configured release does not support
// refuses the start (features-kept-checked).
func (b *Binding) restoreFeatures(d *durable.Dir) error {
	fs := b.st.Features
	if fs == nil {
		return nil
	}
	if kept, ok := d.Features(); ok {
		if err := fs.Restore(kept.Levels, kept.Epoch); err != nil {
			return b.errorf("%w (the data directory was written by a broker of a newer --kafka-version)", err)
		}
	}
	fs.SetJournal(func(levels features.Levels, epoch int64) error {
		return d.SetFeatures(durable.FeatureLevels{Levels: levels, Epoch: epoch})
	})
	return nil
}
