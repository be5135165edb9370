package storage

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"sync"
)

// Batches are copied into chunks back to back, so a read of consecutive
// batches is one sub-slice of the log per chunk it crosses, sent without a
// copy. A partition's first chunk is small; each new one doubles, up to
// maxChunkBytes, so small partitions stay small and busy ones get chunks
// larger than a consumer's usual 1 MiB partition fetch (fewer pieces per
// read). A chunk is never grown in place: growing would copy every byte
// already in it on each doubling.
const (
	minChunkBytes = 4 << 10
	maxChunkBytes = 4 << 20
)

// A chunk is append-only storage for consecutive batches. Bytes below len(buf)
// never change once published, so readers hold sub-slices without a lock;
// growing buf (append past cap) moves the writer to a new array and leaves
// the readers' old one intact.
type chunk struct {
	buf []byte
}

// batchMeta indexes one stored batch.
type batchMeta struct {
	baseOffset   int64
	lastOffset   int64
	chunk        *chunk // nil when the batch lives in the partition's files
	pos          int64  // start of the batch in chunk.buf, or its FileLog position
	size         int32
	maxTimestamp int64
	producerID   int64
	attributes   int16
}

// Partition is one partition's log: the record batches producers sent, with
// their base offsets rewritten, plus the producer state that idempotence
// needs. It is safe for concurrent use; its mutex is never held across I/O,
// except that a partition with a sink writes each batch it appends to its
// data directory under it, so the file's order is the offset order
// (docs/durability.md: ack-after-write).
type Partition struct {
	Topic string
	Index int32

	mu         sync.RWMutex
	batches    []batchMeta // ordered by base offset; all at or above logStart's batch
	tail       *chunk      // the chunk new batches go into
	logStart   int64
	nextOffset int64 // log end offset; the high watermark on a single node
	bytes      int64 // bytes held by batches
	producers  map[int64]*producerState
	waiters    Notifier
	// openTxns maps a producer ID to the first offset of its open
	// transaction here; aborted indexes aborted transactions by marker
	// offset (txn.go).
	openTxns map[int64]int64
	aborted  []AbortedTxn
	// markers counts the transaction markers written here per producer
	// ID, for TxnGuard (txn.go).
	markers map[int64]uint64
	// leaderEpoch stamps every appended batch; epochs is its history,
	// empty for a partition only ever led at epoch 0 (epochs.go).
	leaderEpoch int32
	epochs      []EpochStart
	// sink writes the log to a data directory; nil keeps it in memory
	// only (journal.go). file is sink when it also serves reads: then no
	// batch has a chunk, and record bytes are read from the files.
	sink Sink
	file FileLog
}

func newPartition(topic string, index int32) *Partition {
	return &Partition{Topic: topic, Index: index}
}

// makePartition makes partition index of t, with its sink when t has a
// journal; t's lock or its store's is held, or t is not yet shared.
func (t *Topic) makePartition(index int32) *Partition {
	p := newPartition(t.Name, index)
	if t.journal != nil {
		p.sink = t.journal.Sink(t.ID, index)
		p.file = fileLog(p.sink)
	}
	return p
}

// Offsets is a snapshot of a partition's bounds.
type Offsets struct {
	LogStart      int64
	HighWatermark int64
	// LastStable is the last stable offset: the first offset of the
	// oldest open transaction, else the high watermark (lso).
	LastStable int64
}

// Offsets returns the partition's current bounds.
func (p *Partition) Offsets() Offsets {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.offsetsLocked()
}

func (p *Partition) offsetsLocked() Offsets {
	return Offsets{LogStart: p.logStart, HighWatermark: p.nextOffset, LastStable: p.lastStableLocked()}
}

// AppendResult says where a produced batch landed.
type AppendResult struct {
	BaseOffset int64
	// LogAppendTime is the time stamped into the batch, or -1 for
	// CreateTime topics.
	LogAppendTime int64
	LogStart      int64
	// Duplicate is true when the batch was a retry of one already stored:
	// nothing was appended and BaseOffset is the original's.
	Duplicate bool
}

// AppendOptions carry the topic settings that validate and stamp a batch.
type AppendOptions struct {
	MaxMessageBytes int32
	LogAppendTime   bool
	NowMs           int64
	// TxnGuard, taken before the transaction coordinator checked a
	// transactional batch, refuses the batch if its transaction ended here
	// since (marker-last). It is checked after the epoch and sequence, so
	// a marker that raised the epoch still answers ErrInvalidProducerEpoch.
	// The zero value checks nothing.
	TxnGuard TxnGuard
}

// Append validates a produced record batch (see ParseBatch), applies the
// idempotent-producer sequence checks, and stores a copy of it with its base
// offset rewritten. Waiting fetches are woken.
func (p *Partition) Append(raw []byte, opts AppendOptions) (AppendResult, error) {
	h, err := ParseBatch(raw)
	if err != nil {
		return AppendResult{}, err
	}
	if opts.MaxMessageBytes > 0 && int64(len(raw)) > int64(opts.MaxMessageBytes) {
		return AppendResult{}, fmt.Errorf("%w: batch of %d bytes, limit %d", ErrMessageTooLarge, len(raw), opts.MaxMessageBytes)
	}
	if h.Control() {
		return AppendResult{}, fmt.Errorf("%w: clients may not produce control batches", ErrInvalidRecord)
	}

	p.mu.Lock()
	res, err := p.appendLocked(raw, &h, opts)
	p.mu.Unlock()
	if err == nil && !res.Duplicate {
		p.waiters.Notify()
	}
	return res, err
}

func (p *Partition) appendLocked(raw []byte, h *BatchHeader, opts AppendOptions) (AppendResult, error) {
	res := AppendResult{LogAppendTime: -1}
	if h.ProducerID >= 0 {
		dup, err := p.checkSequenceLocked(h)
		if err != nil {
			return res, err
		}
		if dup != nil {
			res.BaseOffset = dup.baseOffset
			res.Duplicate = true
			res.LogStart = p.logStart
			if opts.LogAppendTime {
				res.LogAppendTime = dup.appendTimeMs
			}
			return res, nil
		}
	}
	if opts.TxnGuard.set && opts.TxnGuard.markers != p.markers[h.ProducerID] {
		return res, fmt.Errorf("%w: producer %d's transaction ended in %s-%d after the coordinator checked the batch", ErrInvalidTxnState, h.ProducerID, p.Topic, p.Index)
	}

	if p.file != nil {
		return p.appendFileLocked(raw, h, opts, res)
	}
	stored := p.reserveLocked(len(raw))
	copy(stored, raw)
	base, maxTs := p.stampLocked(stored, h, opts, &res)
	if err := p.sinkLocked(stored, base, h.NumRecords); err != nil {
		return res, err
	}
	p.publishLocked(stored, h, base, maxTs)
	return p.appendedLocked(h, base, res), nil
}

// stampLocked writes the broker's fields into a batch about to be stored
// at the log end: its base offset, the leader epoch and, for a topic with
// LogAppendTime, the append time. It returns the base offset and the
// batch's max timestamp as the log indexes it.
func (p *Partition) stampLocked(stored []byte, h *BatchHeader, opts AppendOptions, res *AppendResult) (base, maxTs int64) {
	base = p.nextOffset
	binary.BigEndian.PutUint64(stored[offBaseOffset:], uint64(base))
	binary.BigEndian.PutUint32(stored[offLeaderEpoch:], uint32(p.leaderEpoch))
	maxTs = h.MaxTimestamp
	if opts.LogAppendTime {
		stampLogAppendTime(stored, opts.NowMs)
		maxTs = opts.NowMs
		res.LogAppendTime = opts.NowMs
	}
	return base, maxTs
}

// appendedLocked finishes an append stored at base, in memory or in a
// file: the batch's transaction and producer sequence are recorded and
// the answer gets its offsets.
func (p *Partition) appendedLocked(h *BatchHeader, base int64, res AppendResult) AppendResult {
	p.openTxnLocked(h, base)
	if h.ProducerID >= 0 {
		p.recordSequenceLocked(h, base, res.LogAppendTime)
	}
	res.BaseOffset = base
	res.LogStart = p.logStart
	return res
}

// reserveLocked returns a slice of n bytes at the end of the tail chunk,
// starting a new chunk when the tail is full.
func (p *Partition) reserveLocked(n int) []byte {
	if p.tail == nil || len(p.tail.buf)+n > cap(p.tail.buf) {
		size := minChunkBytes
		if p.tail != nil {
			size = min(2*cap(p.tail.buf), maxChunkBytes)
		}
		p.tail = &chunk{buf: make([]byte, 0, max(n, size))}
	}
	start, need := len(p.tail.buf), len(p.tail.buf)+n
	p.tail.buf = p.tail.buf[:need]
	return p.tail.buf[start:need:need]
}

// sinkLocked hands the batch just written at the end of the tail chunk to
// the partition's sink (ack-after-write). If the sink refuses it, the
// reservation is taken back: the bytes were never published, so no reader
// holds them.
func (p *Partition) sinkLocked(stored []byte, base int64, records int32) error {
	if p.sink == nil {
		return nil
	}
	if err := p.sink.Append(stored, base, records); err != nil {
		p.tail.buf = p.tail.buf[:len(p.tail.buf)-len(stored)]
		return fmt.Errorf("%w: %s-%d at offset %d: %v", ErrStorage, p.Topic, p.Index, base, err)
	}
	return nil
}

// publishLocked indexes the batch just written at the end of the tail chunk.
func (p *Partition) publishLocked(stored []byte, h *BatchHeader, base, maxTs int64) {
	p.indexLocked(p.tail, int64(len(p.tail.buf)-len(stored)), len(stored), h, base, maxTs)
}

// indexLocked indexes a stored batch of size bytes at pos in chunk c, or
// at FileLog position pos when c is nil.
func (p *Partition) indexLocked(c *chunk, pos int64, size int, h *BatchHeader, base, maxTs int64) {
	last := base + int64(h.LastOffsetDelta)
	p.batches = append(p.batches, batchMeta{
		baseOffset:   base,
		lastOffset:   last,
		chunk:        c,
		pos:          pos,
		size:         int32(size),
		maxTimestamp: maxTs,
		producerID:   h.ProducerID,
		attributes:   h.Attributes,
	})
	p.nextOffset = last + 1
	p.bytes += int64(size)
}

// Records is a run of whole stored batches, back to back, held as the
// slices of the log it lies in: one per chunk it crosses, so that reading
// never copies record bytes. It aliases the log: callers must not modify
// it. Every piece is non-empty.
type Records [][]byte

// Len returns the size of the run in bytes.
func (r Records) Len() int {
	n := 0
	for _, piece := range r {
		n += len(piece)
	}
	return n
}

// Join returns the run as one slice: the log's own bytes when the run lies
// in one chunk, a copy otherwise, and nil for an empty run. It is for
// callers that cannot take pieces (an encoder that needs one field).
func (r Records) Join() []byte {
	switch len(r) {
	case 0:
		return nil
	case 1:
		return r[0]
	}
	out := make([]byte, 0, r.Len())
	for _, piece := range r {
		out = append(out, piece...)
	}
	return out
}

// ReadResult is what a fetch gets from one partition.
type ReadResult struct {
	Offsets
	// Records holds whole stored batches, back to back, starting with the
	// batch that contains the requested offset.
	Records Records
	// Stream, set only by ReadStreamInto, holds the batches instead of
	// Records when some of them stay in the partition's files until the
	// answer is written (fetch-from-files).
	Stream *Stream
	// Aborted lists, for a read_committed read, the aborted transactions
	// that overlap Records (read-committed-fetch).
	Aborted []AbortedTxn
}

// Len returns the size of the batches read, in bytes.
func (r ReadResult) Len() int {
	if r.Stream != nil {
		return r.Stream.Len()
	}
	return r.Records.Len()
}

// Read returns stored batches starting with the one that holds offset, up
// to maxBytes in total. When includeOne is set the first batch is returned
// even if it alone exceeds maxBytes, so that a consumer can always make
// progress (KIP-74). Reading at the high watermark returns no records; below
// the log start or above the high watermark is ErrOffsetOutOfRange.
//
// Batches are returned as sub-slices of the chunks they lie in, never
// copied. A read goes on across chunks: a fetch must see every available
// batch up to its limits, not just the rest of a chunk, or a MinBytes wait
// larger than that rest would never be met by the data already there.
func (p *Partition) Read(offset int64, maxBytes int32, includeOne bool) (ReadResult, error) {
	return p.ReadIsolated(offset, maxBytes, includeOne, false)
}

// ReadIsolated is Read, and with readCommitted it returns only batches
// below the last stable offset, listing the aborted transactions that
// overlap them (read-committed-fetch).
func (p *Partition) ReadIsolated(offset int64, maxBytes int32, includeOne, readCommitted bool) (ReadResult, error) {
	return p.ReadIsolatedInto(offset, maxBytes, includeOne, readCommitted, nil)
}

// ReadIsolatedInto is ReadIsolated copying what it reads from files into
// rb (nil: a new buffer). An in-memory log never uses rb.
func (p *Partition) ReadIsolatedInto(offset int64, maxBytes int32, includeOne, readCommitted bool, rb *ReadBuffer) (ReadResult, error) {
	return p.readIsolated(offset, maxBytes, includeOne, readCommitted, rb, false)
}

// readIsolated is ReadIsolatedInto, or with stream ReadStreamInto.
func (p *Partition) readIsolated(offset int64, maxBytes int32, includeOne, readCommitted bool, rb *ReadBuffer, stream bool) (ReadResult, error) {
	p.mu.RLock()
	res := ReadResult{Offsets: p.offsetsLocked()}
	if offset < p.logStart || offset > p.nextOffset {
		p.mu.RUnlock()
		return res, fmt.Errorf("%w: offset %d, log holds [%d, %d)", ErrOffsetOutOfRange, offset, res.LogStart, res.HighWatermark)
	}
	end := int64(math.MaxInt64)
	if readCommitted {
		end = res.LastStable
	}
	i := p.batchIndexLocked(offset)
	if i >= len(p.batches) || p.batches[i].baseOffset >= end || (int64(p.batches[i].size) > int64(maxBytes) && !includeOne) {
		p.mu.RUnlock()
		return res, nil
	}
	j, size := i+1, int64(p.batches[i].size)
	for ; j < len(p.batches) && p.batches[j].baseOffset < end && size+int64(p.batches[j].size) <= int64(maxBytes); j++ {
		size += int64(p.batches[j].size)
	}
	if readCommitted {
		res.Aborted = p.abortedLocked(offset, p.batches[j-1].lastOffset)
	}
	var err error
	switch {
	case p.file != nil && stream:
		res.Records, res.Stream, err = p.streamFileRUnlock(i, j, rb)
	case p.file != nil:
		res.Records, err = p.readFileRUnlock(i, j, rb)
	default:
		res.Records = p.spanRUnlock(i, j)
	}
	return res, err
}

// spanRUnlock returns batches [i, j) (j > i) as one piece per chunk they
// lie in, and releases the read lock it was called with. Batches in a chunk
// are back to back, so each chunk's share of the run is one slice; the
// slices stay valid after the lock is released because published bytes
// never change.
func (p *Partition) spanRUnlock(i, j int) Records {
	first, last := p.batches[i], p.batches[j-1]
	if first.chunk == last.chunk {
		// Sliced under the lock: an append re-slices the chunk's buf (the
		// header, not the published bytes) while holding it.
		end := last.pos + int64(last.size)
		run := first.chunk.buf[first.pos:end:end]
		p.mu.RUnlock()
		return Records{run}
	}
	var out Records
	start := first
	for k := i + 1; k < j; k++ {
		if b := p.batches[k]; b.chunk != start.chunk {
			prev := p.batches[k-1]
			end := prev.pos + int64(prev.size)
			out = append(out, start.chunk.buf[start.pos:end:end])
			start = b
		}
	}
	end := last.pos + int64(last.size)
	out = append(out, start.chunk.buf[start.pos:end:end])
	p.mu.RUnlock()
	return out
}

// BatchInfo describes one stored batch.
type BatchInfo struct {
	BaseOffset, LastOffset int64
	Bytes                  int32
	ProducerID             int64
	Control                bool // a transaction marker: commit or abort
	Transactional          bool
	// Aborted marks a data batch of a transaction whose ABORT marker is
	// already in the log (share-read-committed).
	Aborted bool
}

// Batches describes the stored batches from the one that holds offset, in
// order, stopping before the one that would take the total past maxBytes
// (the first is always included) or that starts at or after endOffset.
// Share fetches use it to align acquisitions to producer batches. An offset
// outside the log returns ErrOffsetOutOfRange with the bounds.
func (p *Partition) Batches(offset, endOffset int64, maxBytes int32) ([]BatchInfo, Offsets, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	offs := p.offsetsLocked()
	if offset < p.logStart || offset > p.nextOffset {
		return nil, offs, fmt.Errorf("%w: offset %d, log holds [%d, %d)", ErrOffsetOutOfRange, offset, p.logStart, p.nextOffset)
	}
	var out []BatchInfo
	total := int64(0)
	for _, b := range p.batches[p.batchIndexLocked(offset):] {
		if b.baseOffset >= endOffset || (len(out) > 0 && total+int64(b.size) > int64(maxBytes)) {
			break
		}
		total += int64(b.size)
		out = append(out, BatchInfo{
			BaseOffset:    b.baseOffset,
			LastOffset:    b.lastOffset,
			Bytes:         b.size,
			ProducerID:    b.producerID,
			Control:       b.attributes&attrControl != 0,
			Transactional: b.attributes&attrTransactional != 0,
			Aborted:       b.attributes&(attrTransactional|attrControl) == attrTransactional && p.abortedBatchLocked(b.producerID, b.baseOffset),
		})
	}
	return out, offs, nil
}

// BytesFrom returns the bytes of the stored batches from the one that
// holds offset up to the last that starts before endOffset, counting no
// further once the total reaches atLeast: whether a share fetch's MinBytes
// is met (share-fetch-min-bytes). An offset outside the log counts 0.
func (p *Partition) BytesFrom(offset, endOffset, atLeast int64) int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if offset < p.logStart || offset >= p.nextOffset {
		return 0
	}
	total := int64(0)
	for _, b := range p.batches[p.batchIndexLocked(offset):] {
		if b.baseOffset >= endOffset || total >= atLeast {
			break
		}
		total += int64(b.size)
	}
	return total
}

// ReadRangeInto returns the stored batches that hold offsets first through
// last (inclusive), back to back: what a share fetch sends for an acquired
// range. Offsets below the log start are skipped; nil means none is stored.
// What it reads from files is copied into rb (nil: a new buffer).
func (p *Partition) ReadRangeInto(first, last int64, rb *ReadBuffer) Records {
	p.mu.RLock()
	first = max(first, p.logStart)
	i := p.batchIndexLocked(first)
	j := i
	for j < len(p.batches) && p.batches[j].baseOffset <= last {
		j++
	}
	if first > last || i == j {
		p.mu.RUnlock()
		return nil
	}
	if p.file != nil {
		// A read that fails lost a race with the deletion of its
		// segment: the records are below the log start now, and a
		// share fetch treats them as gone.
		recs, _ := p.readFileRUnlock(i, j, rb)
		return recs
	}
	return p.spanRUnlock(i, j)
}

// batchIndexLocked returns the index of the first batch whose last offset is
// at or above offset.
func (p *Partition) batchIndexLocked(offset int64) int {
	return sort.Search(len(p.batches), func(i int) bool { return p.batches[i].lastOffset >= offset })
}

// Bytes returns how many bytes of batches the partition holds.
func (p *Partition) Bytes() int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.bytes
}

// DeleteRecordsBefore moves the log start offset up to offset (as
// DeleteRecords does), dropping batches that lie wholly below it. Offset -1
// means the high watermark. It returns the new log start offset.
func (p *Partition) DeleteRecordsBefore(offset int64) (int64, error) {
	p.mu.Lock()
	if offset == -1 {
		offset = p.nextOffset
	}
	if offset < 0 || offset > p.nextOffset {
		defer p.mu.Unlock()
		return p.logStart, fmt.Errorf("%w: cannot delete before %d, log holds [%d, %d)", ErrOffsetOutOfRange, offset, p.logStart, p.nextOffset)
	}
	before := p.logStart
	err := p.advanceLogStartLocked(offset)
	after := p.logStart
	p.mu.Unlock()
	p.logStartNotify(before, after)
	return after, err
}

// logStartNotify tells the subscribers (share sessions) that the log
// start moved from before to after, once the move is visible: a share
// partition's SPSO follows it, which may free room in its window. A
// parked Fetch is not woken: its answer does not change.
func (p *Partition) logStartNotify(before, after int64) {
	if after != before {
		p.waiters.notifySubscribers()
	}
}

// advanceLogStartLocked moves the log start to offset if that is forward and
// drops every batch that ends below it. The sink records the move first
// (metadata-first); if it cannot, nothing moves.
func (p *Partition) advanceLogStartLocked(offset int64) error {
	if offset <= p.logStart {
		return nil
	}
	if p.sink != nil {
		if err := p.sink.LogStartMoved(offset); err != nil {
			return fmt.Errorf("%w: log start of %s-%d: %v", ErrStorage, p.Topic, p.Index, err)
		}
	}
	p.dropBelowLocked(offset)
	return nil
}

// dropBelowLocked sets the log start to offset and forgets what lies below.
func (p *Partition) dropBelowLocked(offset int64) {
	p.logStart = offset
	p.pruneAbortedLocked()
	drop := p.batchIndexLocked(offset)
	for _, b := range p.batches[:drop] {
		p.bytes -= int64(b.size)
	}
	if drop > 0 {
		// Copy rather than re-slice, so the dropped metadata (and the chunks
		// it references) can be collected.
		p.batches = append([]batchMeta(nil), p.batches[drop:]...)
	}
}

// ApplyRetention drops the oldest batches that retention.ms or
// retention.bytes no longer allow, as of nowMs. A limit below zero is off.
// Retention works at batch granularity and never rewinds the log. An error
// (ErrStorage) means nothing was dropped.
func (p *Partition) ApplyRetention(retentionMs, retentionBytes, nowMs int64) error {
	p.mu.Lock()
	before := p.logStart
	err := p.applyRetentionLocked(retentionMs, retentionBytes, nowMs)
	after := p.logStart
	p.mu.Unlock()
	p.logStartNotify(before, after)
	return err
}

func (p *Partition) applyRetentionLocked(retentionMs, retentionBytes, nowMs int64) error {
	newStart := p.logStart
	bytes := p.bytes
	for _, b := range p.batches {
		expired := retentionMs >= 0 && nowMs-b.maxTimestamp > retentionMs
		oversize := retentionBytes >= 0 && bytes > retentionBytes
		if !expired && !oversize {
			break
		}
		bytes -= int64(b.size)
		newStart = b.lastOffset + 1
	}
	return p.advanceLogStartLocked(newStart)
}

// Watch registers ch to receive a non-blocking send after the next append.
// The registration is consumed by that wake-up; Unwatch removes it early.
func (p *Partition) Watch(ch chan<- struct{}) { p.waiters.Watch(ch) }

// Wake wakes every registration made by Watch, as an append would,
// without changing the log: the broker's long polls then look again (a
// partition's leader moved).
func (p *Partition) Wake() { p.waiters.Notify() }

// Unwatch removes a registration made by Watch.
func (p *Partition) Unwatch(ch chan<- struct{}) { p.waiters.Unwatch(ch) }

// Subscribe tells s of every append, LSO move, log start move and Wake of
// the partition, and of its topic's deletion, until Unsubscribe(s).
func (p *Partition) Subscribe(s Subscriber) { p.waiters.Subscribe(s) }

// Unsubscribe ends a subscription made by Subscribe.
func (p *Partition) Unsubscribe(s Subscriber) { p.waiters.Unsubscribe(s) }
