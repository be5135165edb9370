package storage

import (
	"fmt"
	"sync"
)

// Reads and appends of a partition whose log lives in its files (a FileLog
// sink, docs/durability.md: reads-from-files). Its index (batchMeta) stays
// in memory; record bytes are copied out of the files for each read with
// pread, into a buffer that belongs to the reader alone. Nothing such a
// reader holds points into a file or a mapping, so deleting a segment
// (retention, DeleteRecords, a deleted topic) can never invalidate an
// answer built from it (no-reader-holds-a-file). A Fetch reads with
// ReadStreamInto instead, which pins what it does not copy
// (file_stream.go, fetch-pins-segments). The in-memory log (p.file ==
// nil) never comes here.

// ReadBuffer holds the bytes reads of file-backed partitions copy out, so
// that a connection serving fetches reuses one buffer rather than making
// garbage per read, and the sections of files its streamed reads pinned
// (ReadStreamInto, fetch-pins-segments). Its owner calls Reset before each
// request, once no answer built from earlier reads is still to be written
// (a connection answers one request at a time), and when it is done with
// the buffer; reads only append to it, so everything read since the last
// Reset stays valid. A nil *ReadBuffer allocates per read and pins
// nothing. It is not safe for concurrent use.
type ReadBuffer struct {
	buf []byte
	// copied counts the bytes streamed reads copied since Reset, against
	// streamCopyBudget.
	copied int64
	// pins are the sections streamed reads pinned since Reset.
	pins []Section
}

// keepReadBuffer is the most a ReadBuffer keeps across a Reset.
const keepReadBuffer = 4 << 20

// Reset makes the buffer's bytes free for the next request's reads and
// releases the sections pinned since the last Reset.
func (rb *ReadBuffer) Reset() {
	if cap(rb.buf) > keepReadBuffer {
		rb.buf = nil
	}
	rb.buf = rb.buf[:0]
	rb.copied = 0
	for i, s := range rb.pins {
		s.Release()
		rb.pins[i] = nil
	}
	rb.pins = rb.pins[:0]
}

// take returns n bytes of the buffer that no earlier read since Reset
// holds. When they do not fit, a larger array takes over; the old one
// stays with the readers that hold it.
func (rb *ReadBuffer) take(n int64) []byte {
	if rb == nil {
		return make([]byte, n)
	}
	if int64(cap(rb.buf)-len(rb.buf)) < n {
		rb.buf = make([]byte, 0, max(n, 2*int64(cap(rb.buf)), 64<<10))
	}
	start := int64(len(rb.buf))
	rb.buf = rb.buf[:start+n]
	return rb.buf[start : start+n : start+n]
}

// scratchPool holds the buffers a produced batch is stamped in before it
// is written to its file; buffers above maxScratchBytes are not kept.
var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

const maxScratchBytes = 4 << 20

// appendFileLocked is appendLocked's storing step for a file-backed
// partition: the batch is stamped in a scratch buffer, written, and
// indexed by its file position.
func (p *Partition) appendFileLocked(raw []byte, h *BatchHeader, opts AppendOptions, res AppendResult) (AppendResult, error) {
	bufp := scratchPool.Get().(*[]byte)
	stored := append((*bufp)[:0], raw...)
	defer func() {
		if cap(stored) <= maxScratchBytes {
			*bufp = stored[:0]
			scratchPool.Put(bufp)
		}
	}()
	base, maxTs := p.stampLocked(stored, h, opts, &res)
	pos, err := p.file.AppendAt(stored, base, h.NumRecords)
	if err != nil {
		return res, fmt.Errorf("%w: %s-%d at offset %d: %v", ErrStorage, p.Topic, p.Index, base, err)
	}
	p.indexLocked(nil, pos, len(stored), h, base, maxTs)
	return p.appendedLocked(h, base, res), nil
}

// storeMarkerLocked writes a stamped marker to the files and indexes it.
// A marker cannot be refused (AppendMarker): if the write fails it is kept
// in a chunk in memory instead, so the log stays readable; the sink
// refuses everything after its first failure, so no file batch follows it.
func (p *Partition) storeMarkerLocked(stored []byte, h *BatchHeader, base, nowMs int64) {
	if pos, err := p.file.AppendAt(stored, base, 1); err == nil {
		p.indexLocked(nil, pos, len(stored), h, base, nowMs)
		return
	}
	buf := p.reserveLocked(len(stored))
	copy(buf, stored)
	p.publishLocked(buf, h, base, nowMs)
}

// fileSpan is a run of consecutive batches of a file-backed partition: a
// batch kept in memory (storeMarkerLocked), or bytes [pos, end) of its
// files.
type fileSpan struct {
	mem      []byte // a chunk's bytes, or nil for a file span
	pos, end int64
}

// fileSpansLocked returns batches [i, j) (j > i) of a file-backed partition
// as spans. Consecutive file batches are one span (they lie back to back in
// the stream); a batch kept in memory is its own.
func (p *Partition) fileSpansLocked(i, j int) []fileSpan {
	var spans []fileSpan
	for k := i; k < j; k++ {
		b := p.batches[k]
		switch {
		case b.chunk != nil:
			end := b.pos + int64(b.size)
			spans = append(spans, fileSpan{mem: b.chunk.buf[b.pos:end:end]})
		case len(spans) > 0 && spans[len(spans)-1].mem == nil && spans[len(spans)-1].end == b.pos:
			spans[len(spans)-1].end += int64(b.size)
		default:
			spans = append(spans, fileSpan{pos: b.pos, end: b.pos + int64(b.size)})
		}
	}
	return spans
}

// readFileRUnlock returns batches [i, j) (j > i) of a file-backed
// partition, and releases the read lock it was called with. The spans to
// read are taken under the lock; the reads run after it is released, so
// producers never wait on a reader's pread.
func (p *Partition) readFileRUnlock(i, j int, rb *ReadBuffer) (Records, error) {
	spans := p.fileSpansLocked(i, j)
	file := p.file
	p.mu.RUnlock()
	out := make(Records, 0, len(spans))
	for _, s := range spans {
		if s.mem != nil {
			out = append(out, s.mem)
			continue
		}
		buf, err := p.copySpan(file, s, rb)
		if err != nil {
			return nil, err
		}
		out = append(out, buf)
	}
	return out, nil
}

// copySpan copies file span s into rb.
func (p *Partition) copySpan(file FileLog, s fileSpan, rb *ReadBuffer) ([]byte, error) {
	buf := rb.take(s.end - s.pos)
	if err := file.ReadAt(buf, s.pos); err != nil {
		return nil, fmt.Errorf("%w: %s-%d: %v", ErrStorage, p.Topic, p.Index, err)
	}
	return buf, nil
}

// bytes returns the view's batch: its memory, or a copy read from the
// partition's files.
func (v batchView) bytes() ([]byte, error) {
	if v.file == nil {
		return v.raw, nil
	}
	buf := make([]byte, v.size)
	if err := v.file.ReadAt(buf, v.pos); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	return buf, nil
}

// RestoreAt indexes a batch read back from a FileLog at position pos,
// without keeping its bytes: Restore for a file-backed partition. batch
// is the whole batch as ParseBatch validated it.
func (p *Partition) RestoreAt(batch []byte, pos int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	h, commit, err := p.checkRestoredLocked(batch)
	if err != nil {
		return err
	}
	p.indexLocked(nil, pos, len(batch), &h, h.BaseOffset, h.MaxTimestamp)
	p.redoRestoredLocked(&h, commit)
	return nil
}
