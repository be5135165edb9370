package storage

import (
	"fmt"
	"io"
)

// Fetch answers from a file-backed partition are written from its files
// (docs/log.md fetch-from-files). A read for such an answer
// (ReadStreamInto) copies nothing large: it pins the sections of the files
// that hold its batches, and the answer writes them from there when it
// goes out (sendfile on a plain TCP connection, bounded pieces on TLS;
// durable's Section). So a client that asks for 2 GiB and never reads
// costs the broker its pins, not 2 GiB of heap.

// Section is bytes of a partition's files pinned for one answer
// (FileLog.Pin): it stays readable, with the bytes it had when pinned,
// until it is released.
type Section interface {
	// WriteTo writes the section's bytes to w, all of them or an error.
	WriteTo(w io.Writer) (int64, error)
	// Release unpins the files; the section must not be used after.
	Release()
}

// streamMinBytes is the shortest file span a streamed read pins; shorter
// ones are copied into the reader's ReadBuffer while its copy budget
// lasts, as a pread and a copy cost less than a write of their own.
const streamMinBytes = 64 << 10

// streamCopyBudget is the most that streamed reads copy into one
// ReadBuffer between Resets; past it every span is pinned, so one answer
// holds at most this much record memory however many partitions it has.
const streamCopyBudget = 1 << 20

// Stream is a run of whole stored batches of a file-backed partition, back
// to back, read for an answer written straight to a connection: some of
// it pinned in the files, the rest in memory (copies in the reader's
// ReadBuffer, batches kept in memory). It implements io.WriterTo. Its
// sections belong to the ReadBuffer it was read with and are released at
// that buffer's next Reset, after which it must not be written.
type Stream struct {
	parts []streamPart
	n     int
}

// streamPart is bytes in memory, or a pinned section.
type streamPart struct {
	mem []byte
	sec Section
}

// Len returns the size of the run in bytes.
func (s *Stream) Len() int { return s.n }

// WriteTo writes the run to w, part by part.
func (s *Stream) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for _, part := range s.parts {
		var n int64
		var err error
		if part.sec != nil {
			n, err = part.sec.WriteTo(w)
		} else {
			var m int
			m, err = w.Write(part.mem)
			n = int64(m)
		}
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// ReadStreamInto is ReadIsolatedInto for an answer written straight to a
// connection, whose owner Resets rb only once it is written (a Fetch). From
// a file-backed partition, a span of at least streamMinBytes, and every
// span once rb's copy budget is spent, is pinned rather than read; when
// any is, the result's Stream holds the batches and Records is nil.
// Otherwise, and for an in-memory partition or a nil rb, it returns
// Records as ReadIsolatedInto does.
func (p *Partition) ReadStreamInto(offset int64, maxBytes int32, includeOne, readCommitted bool, rb *ReadBuffer) (ReadResult, error) {
	return p.readIsolated(offset, maxBytes, includeOne, readCommitted, rb, rb != nil)
}

// streamFileRUnlock is readFileRUnlock for ReadStreamInto: it returns
// batches [i, j) as Records when every span is in memory once read, as a
// Stream otherwise.
func (p *Partition) streamFileRUnlock(i, j int, rb *ReadBuffer) (Records, *Stream, error) {
	spans := p.fileSpansLocked(i, j)
	file := p.file
	p.mu.RUnlock()
	s := &Stream{parts: make([]streamPart, 0, len(spans))}
	pinned := false
	for _, span := range spans {
		n := span.end - span.pos
		if span.mem != nil {
			n = int64(len(span.mem))
		}
		switch {
		case span.mem != nil:
			s.parts = append(s.parts, streamPart{mem: span.mem})
		case n < streamMinBytes && rb.copied+n <= streamCopyBudget:
			buf, err := p.copySpan(file, span, rb)
			if err != nil {
				return nil, nil, err
			}
			rb.copied += n
			s.parts = append(s.parts, streamPart{mem: buf})
		default:
			sec, err := file.Pin(span.pos, n)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: %s-%d: %v", ErrStorage, p.Topic, p.Index, err)
			}
			rb.pins = append(rb.pins, sec)
			s.parts = append(s.parts, streamPart{sec: sec})
			pinned = true
		}
		s.n += int(n)
	}
	if pinned {
		return nil, s, nil
	}
	out := make(Records, len(s.parts))
	for k, part := range s.parts {
		out[k] = part.mem
	}
	return out, nil, nil
}
