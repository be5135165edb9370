package storage

import "fmt"

// Restoring a partition from a data directory (docs/durability.md). The
// batches come back exactly as they were stored, so restoring one redoes
// only what appending it did to the partition's indexes: the batch index,
// transactions, and idempotent producer state (producer-state-from-log).

// checkRestoredLocked reads a restored batch's header and, for a marker,
// whether it commits; the batch must start where the log ends.
func (p *Partition) checkRestoredLocked(stored []byte) (h BatchHeader, commit bool, err error) {
	h = readBatchHeader(stored)
	if h.BaseOffset < p.nextOffset || (len(p.batches) > 0 && h.BaseOffset != p.nextOffset) {
		return h, false, fmt.Errorf("%w: %s-%d: batch at offset %d, the log ends at %d", ErrCorruptMessage, p.Topic, p.Index, h.BaseOffset, p.nextOffset)
	}
	if h.Control() {
		if commit, err = markerIsCommit(stored); err != nil {
			return h, false, fmt.Errorf("%s-%d: offset %d: %w", p.Topic, p.Index, h.BaseOffset, err)
		}
	}
	return h, commit, nil
}

func (p *Partition) redoRestoredLocked(h *BatchHeader, commit bool) {
	switch {
	case h.Control():
		p.endTxnLocked(h.ProducerID, h.ProducerEpoch, commit, h.BaseOffset)
	case h.ProducerID >= 0:
		p.openTxnLocked(h, h.BaseOffset)
		appendTimeMs := int64(-1)
		if h.Attributes&attrLogAppendTime != 0 {
			appendTimeMs = h.MaxTimestamp
		}
		p.recordSequenceLocked(h, h.BaseOffset, appendTimeMs)
	}
}

// RestoreLogStart sets the log start offset read back from a data
// directory, after the partition's batches were restored. A log start past
// the last batch (everything deleted) becomes the log end offset too.
func (p *Partition) RestoreLogStart(offset int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextOffset = max(p.nextOffset, offset)
	if offset > p.logStart {
		p.dropBelowLocked(offset)
	}
}

// OpenTransactions returns the producers with a transaction open in this
// partition and their current epochs.
func (p *Partition) OpenTransactions() map[int64]int16 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make(map[int64]int16, len(p.openTxns))
	for id := range p.openTxns {
		var epoch int16
		if ps := p.producers[id]; ps != nil {
			epoch = ps.epoch
		}
		out[id] = epoch
	}
	return out
}

// MaxProducerID returns the highest producer ID this partition keeps state
// for, or -1.
func (p *Partition) MaxProducerID() int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	highest := int64(-1)
	for id := range p.producers {
		highest = max(highest, id)
	}
	return highest
}
