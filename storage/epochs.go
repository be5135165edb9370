package storage

// Leader epochs of a partition's log, as Kafka's LeaderEpochFileCache keeps
// them: each epoch the partition was led in and the offset its first record
// got. Consumers ask OffsetForLeaderEpoch where an epoch ended after a
// leader change, to tell whether the log they read was truncated under
// them, so the history must say exactly what a Kafka leader would.

// EpochStart is a leader epoch and the first offset appended in it.
type EpochStart struct {
	Epoch       int32
	StartOffset int64
}

// epochsLocked returns the history; an empty one is epoch 0 from offset 0,
// where every partition starts.
func (p *Partition) epochsLocked() []EpochStart {
	if len(p.epochs) == 0 {
		return []EpochStart{{Epoch: 0, StartOffset: 0}}
	}
	return p.epochs
}

// SetLeaderEpoch starts leader epoch epoch at the log end offset, as a
// Kafka leader does on its election (Partition.makeLeader assigning the
// epoch's start offset). An epoch not above the current one changes
// nothing. Earlier epochs that start at or after that offset — led without
// a record appended — are dropped, as LeaderEpochFileCache.assign does, so
// the history stays strictly increasing in both epoch and offset.
func (p *Partition) SetLeaderEpoch(epoch int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if epoch <= p.leaderEpoch {
		return
	}
	es := append([]EpochStart(nil), p.epochsLocked()...)
	for len(es) > 0 && es[len(es)-1].StartOffset >= p.nextOffset {
		es = es[:len(es)-1]
	}
	p.epochs = append(es, EpochStart{Epoch: epoch, StartOffset: p.nextOffset})
	p.leaderEpoch = epoch
}

func (p *Partition) trimmedEpochsLocked() []EpochStart {
	es := p.epochsLocked()
	i := 0
	for i+1 < len(es) && es[i+1].StartOffset <= p.logStart {
		i++
	}
	out := append([]EpochStart(nil), es[i:]...)
	out[0].StartOffset = max(out[0].StartOffset, p.logStart)
	return out
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch as Kafka's
// LeaderEpochFileCache.endOffsetFor does: for the current epoch, the log
// end offset; for an older one, the largest known epoch at or below it and
// the start offset of the next higher known epoch; for one below every
// known epoch, the requested epoch and the first known epoch's start; for
// -1 or an epoch above the current one, -1 and -1.
func (p *Partition) EndOffsetForEpoch(requested int32) (epoch int32, endOffset int64) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if requested == -1 {
		return -1, -1
	}
	es := p.trimmedEpochsLocked()
	if es[len(es)-1].Epoch == requested {
		return requested, p.nextOffset
	}
	higher := -1
	for i, e := range es {
		if e.Epoch > requested {
			higher = i
			break
		}
	}
	switch {
	case higher < 0:
		return -1, -1
	case higher == 0:
		return requested, es[0].StartOffset
	}
	return es[higher-1].Epoch, es[higher].StartOffset
}

// EpochForOffset is the leader epoch offset was appended in (the largest
// known epoch starting at or below it), or -1 when it is below every
// known epoch, as Kafka's epochForOffset.
func (p *Partition) EpochForOffset(offset int64) int32 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := int32(-1)
	for _, e := range p.trimmedEpochsLocked() {
		if e.StartOffset > offset {
			break
		}
		out = e.Epoch
	}
	return out
}
