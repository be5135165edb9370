package durable

import (
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/sharebroker/sharebroker/storage"
)

// Sections of a partition's files pinned for a streamed Fetch answer
// (storage.FileLog.Pin; docs/durability.md fetch-pins-segments). The
// answer's size is fixed when it is read, and the bytes go out later, as
// fast as the client reads. So a section holds a reference to each
// segment's read handle: deleting the segment (retention, DeleteRecords,
// a deleted topic) removes its name and drops the sink's reference, and
// the handle closes when the last section lets go. An unlinked file keeps
// its bytes while a descriptor is open, and a segment is only ever
// appended to past its published bytes, so a section always writes the
// bytes it was pinned with. Kafka gets the same from a FileRecords slice
// of a FileChannel that stays open until the segment's asynchronous
// deletion (LocalLog.deleteSegmentFiles, after file.delete.delay.ms), and
// FileRecords.writeTo refuses a file that shrank under it; here the file
// cannot shrink, and a short read is an error all the same.

// Pin returns the stream's bytes [pos, pos+n) pinned in their segments.
func (s *sink) Pin(pos, n int64) (storage.Section, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := &section{}
	end := pos + n
	k := sort.Search(len(s.segs), func(i int) bool { return s.segs[i].start+s.segs[i].size > pos })
	for ; pos < end; k++ {
		if k == len(s.segs) || s.segs[k].start > pos || s.segs[k].r == nil {
			sec.Release()
			return nil, fmt.Errorf("%w: stream position %d of %s is in no segment", errGone, pos, s.dir)
		}
		g := &s.segs[k]
		if g.pins == nil {
			g.pins = new(atomic.Int32)
			g.pins.Store(1) // the sink's own hold
		}
		g.pins.Add(1)
		m := min(end-pos, g.start+g.size-pos)
		sec.parts = append(sec.parts, pinnedPart{f: g.r, pins: g.pins, off: pos - g.start, n: m})
		pos += m
	}
	return sec, nil
}

// section is a storage.Section: one part per segment it spans.
type section struct {
	parts []pinnedPart
}

// pinnedPart is n bytes at off of one segment's read handle f, holding one
// of the handle's pins.
type pinnedPart struct {
	f      *os.File
	pins   *atomic.Int32
	off, n int64
}

// Release drops the section's pins, closing a deleted segment's handle
// when it held the last.
func (sec *section) Release() {
	for _, p := range sec.parts {
		if p.pins.Add(-1) == 0 {
			p.f.Close()
		}
	}
	sec.parts = nil
}

// WriteTo writes the section to w: with sendfile(2) where w is a socket
// the runtime polls (a plain TCP connection), else in pieces of
// pieceBytes read with pread into one pooled buffer (a TLS connection,
// which encrypts what it writes), so a client that reads slowly holds at
// most one piece of memory, never the section.
func (sec *section) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for _, p := range sec.parts {
		n, handled, err := sendFile(w, p.f, p.off, p.n)
		if !handled {
			n, err = copyPieces(w, p.f, p.off+n, p.n-n)
		}
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// pieceBytes is the size of the pieces a section is written in where
// sendfile cannot be used: Kafka's SslTransportLayer.transferFrom reads a
// file into a buffer of the same 32 KiB (two TLS records) per connection.
const pieceBytes = 32 << 10

var piecePool = sync.Pool{New: func() any { return new([pieceBytes]byte) }}

// copyPieces writes n bytes of f from off to w through a pooled buffer.
func copyPieces(w io.Writer, f *os.File, off, n int64) (int64, error) {
	if n <= 0 {
		return 0, nil
	}
	buf := piecePool.Get().(*[pieceBytes]byte)
	defer piecePool.Put(buf)
	var written int64
	for written < n {
		m := min(n-written, pieceBytes)
		if _, err := f.ReadAt(buf[:m], off+written); err != nil {
			return written, fmt.Errorf("%s: %w", f.Name(), err)
		}
		k, err := w.Write(buf[:m])
		written += int64(k)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}
