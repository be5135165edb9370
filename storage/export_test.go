package storage

// Restoring into memory, Epochs and SetConfigs serve only tests: recovery
// indexes file-backed partitions with RestoreAt, and configs change through
// UpdateConfigs. Kept here so the tests of the rules they exercise
// (producer-state-from-log, abort-open-at-recovery, epoch-cache) keep
// their fixtures without widening the package's API.

import (
	"fmt"
	"maps"
)

// Restore appends a batch read back from a data directory, as it was
// stored: its base offset, leader epoch and timestamps are kept. The caller
// has validated it with ParseBatch. The first batch of an empty partition
// may start anywhere (older segments were deleted); each later one must
// start where the log ends. Restore is for start-up, before the partition
// is served, and writes nothing to the partition's sink.
func (p *Partition) Restore(stored []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	h, commit, err := p.checkRestoredLocked(stored)
	if err != nil {
		return err
	}
	buf := p.reserveLocked(len(stored))
	copy(buf, stored)
	p.applyRestoredLocked(buf, &h, commit)
	return nil
}

// RestoreRun is Restore for batches that lie back to back in run, which
// the partition takes as its newest chunk instead of copying it: run, and
// its backing array up to its capacity, belong to the partition afterwards
// and the caller must not touch them. Recovery reads segment files in
// blocks and hands each over whole, so restored records are copied once,
// from the file.
func (p *Partition) RestoreRun(run []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := &chunk{buf: run[:0]}
	p.tail = c
	for pos := 0; pos < len(run); {
		if len(run)-pos < batchHeaderBytes {
			return fmt.Errorf("%w: %s-%d: %d bytes after the last whole batch", ErrCorruptMessage, p.Topic, p.Index, len(run)-pos)
		}
		n := int(readBatchHeader(run[pos:]).Length)
		if n < batchHeaderBytes || n > len(run)-pos {
			return fmt.Errorf("%w: %s-%d: a batch of %d bytes in %d", ErrCorruptMessage, p.Topic, p.Index, n, len(run)-pos)
		}
		stored := run[pos : pos+n : pos+n]
		h, commit, err := p.checkRestoredLocked(stored)
		if err != nil {
			return err
		}
		c.buf = c.buf[:pos+n]
		p.applyRestoredLocked(stored, &h, commit)
		pos += n
	}
	return nil
}

// applyRestoredLocked indexes a restored batch that already lies at the
// end of the tail chunk and redoes what appending it did.
func (p *Partition) applyRestoredLocked(stored []byte, h *BatchHeader, commit bool) {
	p.nextOffset = h.BaseOffset
	p.publishLocked(stored, h, h.BaseOffset, h.MaxTimestamp)
	p.redoRestoredLocked(h, commit)
}

// redoRestoredLocked redoes what appending a restored batch, just
// indexed, did to transactions and producer state.
// Epochs returns the leader-epoch history, oldest first, as the log start
// offset trims it: entries wholly below the log start are dropped and the
// one spanning it starts there (LeaderEpochFileCache.truncateFromStart).
func (p *Partition) Epochs() []EpochStart {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.trimmedEpochsLocked()
}

// SetConfigs replaces the topic's overrides. The caller has validated them.
func (t *Topic) SetConfigs(configs map[string]string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.journal != nil {
		if err := t.journal.ConfigsSet(t.ID, configs); err != nil {
			return fmt.Errorf("%w: configs of topic %q: %v", ErrStorage, t.Name, err)
		}
	}
	t.configs = maps.Clone(configs)
	return nil
}
