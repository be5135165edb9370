package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sharebroker/sharebroker/storage"
)

// sink writes one partition's batches to its segment files
// (storage.Sink). Its methods run under the partition's lock, which
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
	next      int64
	policy    Policy
	unflushed int64     // records appended since the last fsync
	lastSync  time.Time // when the last fsync ran (or the sink opened)
	// dirSynced: the directory entry of f was fsynced.
	dirSynced bool
	// failed is the first write error; every later write returns it, so
	// the files stay a prefix of the log.
	failed error
}

type segment struct {
	base int64
	size int64
}

var errClosed = errors.New("data directory closed or topic deleted")

// Append writes a batch at the end of the last segment, first starting a
// new one when the batch would take it past segment.bytes; then fsyncs if
// flush.messages or flush.ms says so (ack-after-write, flush-as-kafka).
func (s *sink) Append(stored []byte, base int64, records int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return s.failed
	}
	n := int64(len(stored))
	if s.f == nil && len(s.segs) > 0 {
		// After a restart: go on with the last segment recovery left.
		name := filepath.Join(s.dir, segmentName(s.segs[len(s.segs)-1].base))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
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
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	s.f = f
	s.segs = append(s.segs, segment{base: base})
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
	if s.failed == nil {
		s.failed = errClosed
	}
	return err
}

// flushes reports whether the policy asks for fsync at all; the defaults
// (Long.MAX) never do.
func (p Policy) flushes() bool { return p.FlushMessages < 1<<63-1 || p.FlushMs < 1<<63-1 }
