package storage

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
)

// Transactions as the partition log sees them (docs/transactions.md: lso,
// read-committed-fetch). A transactional producer's first batch opens its
// transaction in this partition; the COMMIT or ABORT marker the broker
// appends closes it. The last stable offset is the first offset of the
// oldest transaction still open; an aborted transaction is remembered, with
// its first offset and its marker's offset, so read_committed fetches can
// list the aborted transactions overlapping what they return.

// Control record types of a transaction marker's key.
const (
	markerAbort  = 0
	markerCommit = 1
)

// AbortedTxn is one aborted transaction in a partition: its producer, its
// first offset, and the offset of its ABORT marker.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// openTxnLocked notes that h, just stored at base, belongs to a
// transaction; the first such batch opens it.
func (p *Partition) openTxnLocked(h *BatchHeader, base int64) {
	if !h.Transactional() || h.ProducerID < 0 {
		return
	}
	if p.openTxns == nil {
		p.openTxns = make(map[int64]int64)
	}
	if _, open := p.openTxns[h.ProducerID]; !open {
		p.openTxns[h.ProducerID] = base
	}
}

// lastStableLocked is the lso rule: the first offset of the oldest open
// transaction, else the high watermark.
func (p *Partition) lastStableLocked() int64 {
	lso := p.nextOffset
	for _, first := range p.openTxns {
		lso = min(lso, first)
	}
	return lso
}

// MarkerOptions describe a transaction marker.
type MarkerOptions struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	NowMs            int64
}

// AppendMarker appends a COMMIT or ABORT control batch for a producer's
// transaction and closes it in this partition; an abort is added to the
// aborted-transaction index. A marker is written even when the producer
// sent nothing here, as Kafka does for every partition the transaction
// added. The producer's epoch here becomes the marker's, so a batch with
// an older epoch is then ErrInvalidProducerEpoch. It returns the marker's
// offset. Waiting fetches are woken: the last stable offset may have moved.
func (p *Partition) AppendMarker(m MarkerOptions) int64 {
	raw := buildMarker(m)
	h := readBatchHeader(raw)
	p.mu.Lock()
	base := p.nextOffset
	if p.file != nil {
		binary.BigEndian.PutUint64(raw[offBaseOffset:], uint64(base))
		binary.BigEndian.PutUint32(raw[offLeaderEpoch:], uint32(p.leaderEpoch))
		p.storeMarkerLocked(raw, &h, base, m.NowMs)
	} else {
		stored := p.reserveLocked(len(raw))
		copy(stored, raw)
		binary.BigEndian.PutUint64(stored[offBaseOffset:], uint64(base))
		binary.BigEndian.PutUint32(stored[offLeaderEpoch:], uint32(p.leaderEpoch))
		// A marker cannot be refused: its transaction has ended at the
		// coordinator. If the sink fails, the marker still takes effect
		// here; the sink refuses everything after its first failure, so
		// the files keep a consistent prefix of the log
		// (docs/durability.md).
		_ = p.sinkLocked(stored, base, 1)
		p.publishLocked(stored, &h, base, m.NowMs)
	}
	p.endTxnLocked(m.ProducerID, m.ProducerEpoch, m.Commit, base)
	p.mu.Unlock()
	p.waiters.Notify()
	return base
}

// endTxnLocked applies a COMMIT or ABORT marker stored at offset: the
// producer's transaction here closes, an abort joins the index, and the
// marker's epoch becomes the producer's.
func (p *Partition) endTxnLocked(producerID int64, epoch int16, commit bool, offset int64) {
	if first, open := p.openTxns[producerID]; open {
		delete(p.openTxns, producerID)
		if !commit {
			p.aborted = append(p.aborted, AbortedTxn{ProducerID: producerID, FirstOffset: first, LastOffset: offset})
		}
	}
	if ps := p.producers[producerID]; ps == nil || ps.epoch < epoch {
		if p.producers == nil {
			p.producers = make(map[int64]*producerState)
		}
		p.producers[producerID] = &producerState{epoch: epoch, lastSeq: -1, lastTimestampMs: -1}
	}
	if p.markers == nil {
		p.markers = make(map[int64]uint64)
	}
	p.markers[producerID]++
}

// markerIsCommit reads the control record of a stored marker batch (as
// buildMarker writes it, and as Kafka's EndTransactionMarker does): after
// the record's length, attributes, timestamp delta and offset delta, its
// key is version int16 then type int16.
func markerIsCommit(stored []byte) (bool, error) {
	b := stored[batchHeaderBytes:]
	for field := range 4 { // length, attributes (one byte), timestamp delta, offset delta
		if field == 1 {
			if len(b) == 0 {
				return false, fmt.Errorf("%w: marker record cut short", ErrCorruptMessage)
			}
			b = b[1:]
			continue
		}
		if _, n := binary.Varint(b); n > 0 {
			b = b[n:]
		} else {
			return false, fmt.Errorf("%w: marker record cut short", ErrCorruptMessage)
		}
	}
	keyLen, n := binary.Varint(b)
	if n <= 0 || keyLen < 4 || int64(len(b)-n) < keyLen {
		return false, fmt.Errorf("%w: marker key of %d bytes", ErrCorruptMessage, keyLen)
	}
	return binary.BigEndian.Uint16(b[n+2:]) == markerCommit, nil
}

// TxnGuard carries, from the transaction coordinator's check of a
// transactional batch to its append, the knowledge that the producer's
// transaction had not ended in this partition when the check began
// (marker-last). The coordinator checks without the partition's lock, so a
// marker may land between the check and the append; the append then sees
// the guard is stale and refuses the batch with ErrInvalidTxnState, rather
// than storing it after its transaction's marker, where it would open a
// transaction nobody ends. This is Kafka's VerificationGuard, which a
// marker clears (UnifiedLog.analyzeAndValidateProducerState).
type TxnGuard struct {
	set     bool
	markers uint64 // the producer's markers here when the guard was taken
}

// TxnGuard returns a guard for a transactional batch of producerID. Take it
// before asking the coordinator: a marker written after that is then seen
// by the append, whichever transaction it ends.
func (p *Partition) TxnGuard(producerID int64) TxnGuard {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return TxnGuard{set: true, markers: p.markers[producerID]}
}

// buildMarker encodes a control batch holding one marker record: key =
// version int16 0 + type int16, value = version int16 0 + coordinator epoch
// int32, as Kafka's EndTransactionMarker writes it.
func buildMarker(m MarkerOptions) []byte {
	var key [4]byte
	if m.Commit {
		binary.BigEndian.PutUint16(key[2:], markerCommit)
	} else {
		binary.BigEndian.PutUint16(key[2:], markerAbort)
	}
	var value [6]byte
	binary.BigEndian.PutUint32(value[2:], uint32(m.CoordinatorEpoch))

	var rec []byte
	rec = append(rec, 0)              // attributes
	rec = binary.AppendVarint(rec, 0) // timestamp delta
	rec = binary.AppendVarint(rec, 0) // offset delta
	rec = binary.AppendVarint(rec, int64(len(key)))
	rec = append(rec, key[:]...)
	rec = binary.AppendVarint(rec, int64(len(value)))
	rec = append(rec, value[:]...)
	rec = binary.AppendVarint(rec, 0) // headers

	b := make([]byte, batchHeaderBytes, batchHeaderBytes+binary.MaxVarintLen64+len(rec))
	b = binary.AppendVarint(b, int64(len(rec)))
	b = append(b, rec...)
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-batchLengthOverhead))
	b[offMagic] = 2
	binary.BigEndian.PutUint16(b[offAttributes:], attrControl|attrTransactional)
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(m.NowMs))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(m.NowMs))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(m.ProducerID))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(m.ProducerEpoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[offRecordCount:], 1)
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

// abortedLocked returns the aborted transactions that overlap offsets
// [from, to] (read-committed-fetch).
func (p *Partition) abortedLocked(from, to int64) []AbortedTxn {
	var out []AbortedTxn
	for _, a := range p.aborted {
		if a.LastOffset >= from && a.FirstOffset <= to {
			out = append(out, a)
		}
	}
	return out
}

// abortedBatchLocked reports whether producerID's batch at offset belongs
// to an aborted transaction.
func (p *Partition) abortedBatchLocked(producerID, offset int64) bool {
	for _, a := range p.aborted {
		if a.ProducerID == producerID && a.FirstOffset <= offset && offset < a.LastOffset {
			return true
		}
	}
	return false
}

// pruneAbortedLocked forgets aborted transactions wholly below the log start.
func (p *Partition) pruneAbortedLocked() {
	p.aborted = slices.DeleteFunc(p.aborted, func(a AbortedTxn) bool { return a.LastOffset < p.logStart })
}

// PeekTransactional reads, without validating the batch, whether raw is a
// transactional batch and from which producer and epoch; the broker checks
// those with the transaction coordinator before Append validates the rest.
func PeekTransactional(raw []byte) (producerID int64, epoch int16, ok bool) {
	if len(raw) < batchHeaderBytes || int8(raw[offMagic]) != 2 {
		return -1, -1, false
	}
	h := readBatchHeader(raw)
	if !h.Transactional() || h.Control() {
		return -1, -1, false
	}
	return h.ProducerID, h.ProducerEpoch, true
}

// ProducerInfo is one producer as DescribeProducers reports it.
type ProducerInfo struct {
	ProducerID      int64
	Epoch           int16
	LastSequence    int32
	LastTimestampMs int64
	// TxnStartOffset is the first offset of its open transaction, or -1.
	TxnStartOffset int64
}

// Producers reports every producer this partition keeps state for, by
// producer ID (describe-producers).
func (p *Partition) Producers() []ProducerInfo {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]ProducerInfo, 0, len(p.producers))
	for id, ps := range p.producers {
		info := ProducerInfo{ProducerID: id, Epoch: ps.epoch, LastSequence: ps.lastSeq, LastTimestampMs: ps.lastTimestampMs, TxnStartOffset: -1}
		if first, ok := p.openTxns[id]; ok {
			info.TxnStartOffset = first
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b ProducerInfo) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return out
}
