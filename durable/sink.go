package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sharebroker/sharebroker/storage"
)

// sink writes one partition's batches to its segment files and reads them
// back (storage.FileLog). Its methods run under the partition's lock, which
// orders them; mu also guards against the Dir deleting or closing the
// topic meanwhile. Order: partition lock → sink.mu → Dir.mu (LogStartMoved
// records the move in the metadata log).
type sink struct {
	d     *Dir
	id    storage.TopicID
	index int32
	dir   string

	mu sync.Mutex // guards the fields below
	// segs are the segment files, oldest first; the last is the one
	// appended to.
	segs []segment
	f    *os.File // the last segment, opened on first append; nil before
	// next is the offset after the last batch written: the log end.
	next int64
	// end is the stream position after the last batch written: the
	// segments' sizes added up from the first one this sink knew.
	end       int64
	policy    Policy
	unflushed int64     // records appended since the last fsync
	lastSync  time.Time // when the last fsync ran (or the sink opened)
	// dirSynced: the directory entry of f was fsynced.
	dirSynced bool
	// failed is the first write error; every later write returns it, so
	// the files stay a prefix of the log.
	failed error
}

// segment is one segment file. r reads it: it is opened with the
// segment and closed when the segment is deleted or the sink closes —
// or, if a Fetch answer pinned it, when the last pin goes
// (fetch-pins-segments) — and os.File makes a ReadAt racing that Close
// fail with os.ErrClosed rather than read another file
// (reads-from-files).
type segment struct {
	base  int64
	size  int64
	start int64 // stream position of its first byte
	r     *os.File
	// pins counts the holders of r once a streamed answer pinned it
	// (fetch-pins-segments): one for the sink while the segment is in
	// its list, one per pinned section; r closes when it drops to zero.
	// nil until the first pin: the sink alone holds r.
	pins *atomic.Int32
}

var errClosed = errors.New("data directory closed or topic deleted")

// Append writes a batch at the end of the last segment, first starting a
// new one when the batch would take it past segment.bytes; then fsyncs if
// flush.messages or flush.ms says so (ack-after-write, flush-as-kafka).
func (s *sink) Append(stored []byte, base int64, records int32) error {
	_, err := s.AppendAt(stored, base, records)
	return err
}

// AppendAt is Append, returning the batch's stream position.
func (s *sink) AppendAt(stored []byte, base int64, records int32) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return 0, s.failed
	}
	pos := s.end
	return pos, s.appendLocked(stored, base, records)
}

func (s *sink) appendLocked(stored []byte, base int64, records int32) error {
	n := int64(len(stored))
	if s.f == nil && len(s.segs) > 0 {
		// After a restart: go on with the last segment recovery left.
		name := filepath.Join(s.dir, segmentName(s.segs[len(s.segs)-1].base))
		f, err := openNoFollow(name, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			s.failed = err
			return err
		}
		s.f = f
	}
	if s.f == nil || (s.segs[len(s.segs)-1].size > 0 && s.segs[len(s.segs)-1].size+n > s.policy.SegmentBytes) {
		if err := s.rollLocked(base); err != nil {
			s.failed = err
			return err
		}
	}
	seg := &s.segs[len(s.segs)-1]
	if _, err := s.f.Write(stored); err != nil {
		err = fmt.Errorf("%s: %w", s.f.Name(), err)
		// Cut a partial write back so the file ends with a whole batch;
		// if even that fails, recovery will find the torn tail.
		if terr := s.f.Truncate(seg.size); terr != nil {
			s.failed = err
		}
		return err
	}
	seg.size += n
	s.end += n
	s.next = base + int64(records)
	s.unflushed += int64(records)
	// flush.ms is compared in milliseconds: as a Duration a large value
	// would overflow.
	if s.unflushed >= s.policy.FlushMessages ||
		(s.policy.FlushMs < 1<<63-1 && s.d.opts.Now().Sub(s.lastSync).Milliseconds() >= s.policy.FlushMs) {
		return s.syncLocked()
	}
	return nil
}

// rollLocked starts a new last segment whose first batch is at base. The
// segment before it stays open only until this returns.
func (s *sink) rollLocked(base int64) error {
	if s.f != nil {
		if s.unflushed > 0 && s.policy.flushes() {
			if err := s.syncLocked(); err != nil {
				return err
			}
		}
		if err := s.f.Close(); err != nil {
			return err
		}
		s.f = nil
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	// A new segment's base is past every batch in the files, so no file
	// has its name; O_EXCL turns a bug that broke that into a refused
	// write rather than lost data.
	name := filepath.Join(s.dir, segmentName(base))
	f, err := openNoFollow(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	r, err := openNoFollow(name, os.O_RDONLY, 0)
	if err != nil {
		f.Close()
		os.Remove(name)
		return err
	}
	s.f = f
	s.segs = append(s.segs, segment{base: base, start: s.end, r: r})
	s.dirSynced = false
	return nil
}

func (s *sink) syncLocked() error {
	if err := s.f.Sync(); err != nil {
		s.failed = fmt.Errorf("%s: fsync: %w", s.f.Name(), err)
		return s.failed
	}
	if !s.dirSynced {
		if err := syncDir(s.dir); err != nil {
			return err
		}
		s.dirSynced = true
	}
	s.unflushed = 0
	s.lastSync = s.d.opts.Now()
	return nil
}

// LogStartMoved records the new log start offset in the metadata log
// (metadata-first), then deletes the segments that lie wholly below it
// (whole-segments-go).
func (s *sink) LogStartMoved(offset int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return s.failed
	}
	if err := s.d.recordLogStart(s.id, s.index, offset); err != nil {
		return err
	}
	for len(s.segs) > 0 {
		end := s.next
		if len(s.segs) > 1 {
			end = s.segs[1].base
		}
		if end > offset {
			break
		}
		if len(s.segs) == 1 && s.f != nil {
			s.f.Close()
			s.f = nil
		}
		if err := os.Remove(filepath.Join(s.dir, segmentName(s.segs[0].base))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		s.segs[0].close()
		s.segs = s.segs[1:]
	}
	return nil
}

// setPolicy applies a topic's new configs to later appends.
func (s *sink) setPolicy(p Policy) {
	s.mu.Lock()
	s.policy = p
	s.mu.Unlock()
}

// close closes the open segment, fsyncing what flush settings asked for,
// and refuses later writes.
func (s *sink) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if s.f != nil {
		if s.unflushed > 0 && s.policy.flushes() {
			err = s.f.Sync()
		}
		err = errors.Join(err, s.f.Close())
		s.f = nil
	}
	for i := range s.segs {
		s.segs[i].close()
	}
	s.segs = nil // closed: nothing is read or pinned through the sink
	if s.failed == nil {
		s.failed = errClosed
	}
	return err
}

// flushes reports whether the policy asks for fsync at all; the defaults
// (Long.MAX) never do.
func (p Policy) flushes() bool { return p.FlushMessages < 1<<63-1 || p.FlushMs < 1<<63-1 }

// close drops the sink's hold on the segment's reader, closing it unless
// a pinned section still reads it (fetch-pins-segments); a ReadAt racing
// the close fails. Called under sink.mu, as the segment leaves the list.
func (g *segment) close() {
	if g.r != nil && (g.pins == nil || g.pins.Add(-1) == 0) {
		g.r.Close()
	}
}

// ReadAt fills dst with the stream's bytes from pos, across segments. It
// takes the sink's lock only to find each segment and reads after
// releasing it, so a read never holds up an append. The bytes asked for
// were published, so they were written before: a segment holding them is
// either still there, and its file has them, or deleted (the read fails).
func (s *sink) ReadAt(dst []byte, pos int64) error {
	for len(dst) > 0 {
		s.mu.Lock()
		k := sort.Search(len(s.segs), func(i int) bool { return s.segs[i].start+s.segs[i].size > pos })
		if k == len(s.segs) || s.segs[k].start > pos || s.segs[k].r == nil {
			s.mu.Unlock()
			return fmt.Errorf("%w: stream position %d of %s is in no segment", errGone, pos, s.dir)
		}
		seg := s.segs[k]
		s.mu.Unlock()
		n := min(int64(len(dst)), seg.start+seg.size-pos)
		if _, err := seg.r.ReadAt(dst[:n], pos-seg.start); err != nil {
			return fmt.Errorf("%s: %w", seg.r.Name(), err)
		}
		dst, pos = dst[n:], pos+n
	}
	return nil
}

// errGone is a read of bytes whose segment was deleted.
var errGone = errors.New("segment deleted")
