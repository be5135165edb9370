package storage

import "fmt"

// dedupWindow is how many recent batches per producer are remembered to
// recognise retries: Kafka keeps five, matching the most in-flight requests
// an idempotent producer may have (max.in.flight.requests.per.connection).
const dedupWindow = 5

// producerState is the per-partition memory of one idempotent producer.
type producerState struct {
	epoch   int16
	lastSeq int32 // sequence of the last record appended; -1 before any
	// lastTimestampMs is the max timestamp of its last batch; -1 before any.
	lastTimestampMs int64
	recent          [dedupWindow]appendedBatch
	nRecent         int // how many entries of recent are valid
	next            int // where the next entry goes (ring)
}

type appendedBatch struct {
	firstSeq, lastSeq int32
	baseOffset        int64
	appendTimeMs      int64
}

// checkSequenceLocked applies Kafka's idempotent-producer rules to a batch
// from a producer with an ID. It returns the original batch when this one is
// a retry of a recent append, or an error when the sequence or epoch is
// wrong:
//
//   - a producer this partition has no state for may start at any
//     sequence, as Kafka's ProducerAppendInfo.checkSequence allows: Kafka
//     drops a producer's state once retention or DeleteRecords removes its
//     records, so it cannot tell a new producer from a forgotten one, and
//     a client tested here must see the same answer;
//   - an epoch older than the producer's current one: ErrInvalidProducerEpoch;
//   - a new epoch of a known producer must start at sequence 0;
//   - otherwise the batch must start right after the last appended sequence.
func (p *Partition) checkSequenceLocked(h *BatchHeader) (*appendedBatch, error) {
	ps := p.producers[h.ProducerID]
	if ps == nil {
		return nil, nil
	}
	if h.ProducerEpoch != ps.epoch {
		if h.ProducerEpoch < ps.epoch {
			return nil, fmt.Errorf("%w: producer %d epoch %d, current %d", ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, ps.epoch)
		}
		if h.BaseSequence != 0 {
			return nil, fmt.Errorf("%w: producer %d epoch %d must start at sequence 0, sent %d", ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
		}
		return nil, nil
	}
	for i := 0; i < ps.nRecent; i++ {
		b := &ps.recent[i]
		if b.firstSeq == h.BaseSequence && b.lastSeq == h.LastSequence() {
			dup := *b
			return &dup, nil
		}
	}
	if want := (ps.lastSeq + 1) & 0x7fffffff; h.BaseSequence != want {
		return nil, fmt.Errorf("%w: producer %d expected sequence %d, sent %d", ErrOutOfOrderSequence, h.ProducerID, want, h.BaseSequence)
	}
	return nil, nil
}

// recordSequenceLocked remembers a batch just appended for a producer.
func (p *Partition) recordSequenceLocked(h *BatchHeader, baseOffset, appendTimeMs int64) {
	if p.producers == nil {
		p.producers = make(map[int64]*producerState)
	}
	ps := p.producers[h.ProducerID]
	if ps == nil || ps.epoch != h.ProducerEpoch {
		ps = &producerState{epoch: h.ProducerEpoch}
		p.producers[h.ProducerID] = ps
	}
	ps.lastSeq = h.LastSequence()
	ps.lastTimestampMs = h.MaxTimestamp
	ps.recent[ps.next] = appendedBatch{firstSeq: h.BaseSequence, lastSeq: ps.lastSeq, baseOffset: baseOffset, appendTimeMs: appendTimeMs}
	ps.next = (ps.next + 1) % dedupWindow
	ps.nRecent = min(ps.nRecent+1, dedupWindow)
}
