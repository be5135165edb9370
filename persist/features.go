package persist

import (
	"github.com/sharebroker/sharebroker/durable"
	"github.com/sharebroker/sharebroker/features"
)

// restoreFeatures gives the cluster's features the finalized levels the
// data directory kept, and from then on writes every change
// (features-kept). A directory that kept none is formatted, as
// kafka-storage format does: the levels the configured release and
// properties start with are recorded, and later starts read them, not the
// configuration. A kept level the configured release does not support
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
		b.cfg.Log.Debug("finalized feature levels restored; the release's defaults and share.version, transaction.version apply to a new data directory only",
			"epoch", kept.Epoch)
	} else {
		levels, epoch := fs.Finalized()
		if err := d.SetFeatures(durable.FeatureLevels{Levels: levels, Epoch: epoch}); err != nil {
			return b.errorf("recording the feature levels: %w", err)
		}
	}
	fs.SetJournal(func(levels features.Levels, epoch int64) error {
		return d.SetFeatures(durable.FeatureLevels{Levels: levels, Epoch: epoch})
	})
	return nil
}
