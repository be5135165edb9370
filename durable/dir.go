// Package durable keeps a broker's data in a directory so that it
// survives a restart or a killed process (docs/durability.md). It writes
// what storage tells it through storage.Journal and storage.Sink, and at
// start reads it back into a storage.Store. It knows files and the record
// batch format, but no Kafka request and no socket.
package durable

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FormatVersion is the on-disk format this code writes (format-version).
const FormatVersion = 1

const (
	formatFile = "format"
	lockName   = "lock"
	metaFile   = "meta.log"
	logsDir    = "logs"
	// lostFoundDir holds what recovery and repair set aside instead of
	// deleting (set-aside-not-deleted).
	lostFoundDir = "lost+found"
	formatMagic  = "sharebroker-data"
)

// Errors a caller may want to tell apart.
var (
	// ErrLocked: another running broker holds the directory (lock-dir).
	ErrLocked = errors.New("data directory in use")
	// ErrNewerFormat: the directory was written by a newer format version.
	ErrNewerFormat = errors.New("data directory written by a newer version")
	// ErrCorrupt: data that is not a torn tail failed to read back
	// (no-silent-loss).
	ErrCorrupt = errors.New("data directory corrupt")
	// ErrSymlink: a symbolic link where a file or directory of the data
	// directory belongs (no-symlinks).
	ErrSymlink = errors.New("symbolic link in the data directory")
)

func symlinkError(name string) error {
	return fmt.Errorf("%w: %s; recovery opens the directory's files only as themselves, never through a link: put the file or directory it points to in its place", ErrSymlink, name)
}

// checkNotSymlink refuses a symbolic link at name (no-symlinks); a
// missing name is fine.
func checkNotSymlink(name string) error {
	fi, err := os.Lstat(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return symlinkError(name)
	}
	return nil
}

// Policy is what a topic's configs say about its files, as the broker
// resolves them from its property table.
type Policy struct {
	SegmentBytes  int64 // segment.bytes
	FlushMessages int64 // flush.messages; math.MaxInt64 is never
	FlushMs       int64 // flush.ms; math.MaxInt64 is never
}

// Options configure a Dir.
type Options struct {
	// Policy resolves a topic's overrides (nil for none) into its Policy.
	// Nil means 1 GiB segments and no fsync.
	Policy func(configs map[string]string) Policy
	// SyncMeta fsyncs each metadata-log record; the broker sets it when a
	// flush property asks for power-loss durability.
	SyncMeta bool
	// Now is the time flush.ms is measured on; nil means time.Now.
	Now func() time.Time
	// CompactEvery is how many records appended to the metadata log, at
	// least, start its compaction in the background (compact.go); 0 means
	// DefaultCompactEvery, a negative number only at start.
	CompactEvery int
	// OnCompactError hears a background compaction that failed; the old
	// metadata log stays in use. Nil ignores it.
	OnCompactError func(error)
	// OnCompacted hears a background compaction done, with the metadata
	// log's size in bytes before and after it. Nil ignores it.
	OnCompacted func(before, after int)
	// MaxBatchBytes is the largest batch one write can carry, for telling
	// a torn tail from corruption (tail.go); 0 means
	// DefaultMaxBatchBytes. The broker sets socket.request.max.bytes.
	MaxBatchBytes int64
}

// Dir is an open, locked data directory. After Recover it is the store's
// storage.Journal. It is safe for concurrent use.
type Dir struct {
	path string
	opts Options
	lock *os.File

	mu   sync.Mutex // guards meta and the metaState
	meta *metaLog
	// metaState is what the metadata log says: recovered at start, then
	// kept current for the topics, the producer ID blocks and the groups'
	// records; the share, SCRAM, ACL and transaction records of later
	// writes go to the log only, and the next start replays them.
	metaState

	// The background compaction of meta.log (compact.go).
	compactKick chan struct{}
	compactStop chan struct{}
	compactDone chan struct{}
	stopOnce    sync.Once
	// compactState is the state of meta.log's records before byte
	// compactFrom, kept from one compaction to the next; only the
	// compactor touches them.
	compactState    *metaState
	compactFrom     int64
	testCompactHook func(stage string) // tests: called between steps

	// lostFound is the lost+found/<time> directory this run sets things
	// aside in, once it has one.
	lostFound string
}

// topicFiles is what the Dir knows of one live topic.
type topicFiles struct {
	name    string
	configs map[string]string
	parts   int32
	policy  Policy
	sinks   map[int32]*sink
	// logStarts are the log start offsets recorded, by partition.
	logStarts map[int32]int64
}

// Open creates dir if needed, locks it and checks its format version. It
// reads nothing else: call Recover.
func Open(path string, opts Options) (*Dir, error) {
	if opts.Policy == nil {
		opts.Policy = func(map[string]string) Policy {
			return Policy{SegmentBytes: 1 << 30, FlushMessages: 1<<63 - 1, FlushMs: 1<<63 - 1}
		}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	lf, err := openNoFollow(filepath.Join(path, lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", path, err)
	}
	if err := lockFile(lf, path); err != nil {
		lf.Close()
		return nil, err
	}
	d := &Dir{path: path, opts: opts, lock: lf, metaState: *newMetaState()}
	if err := d.checkFormat(); err != nil {
		lf.Close()
		return nil, err
	}
	return d, nil
}

// Path returns the directory.
func (d *Dir) Path() string { return d.path }

// checkFormat reads the format file, or writes it into a directory that
// holds no data yet.
func (d *Dir) checkFormat() error {
	name := filepath.Join(d.path, formatFile)
	b, err := readSmallFile(name)
	if errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(d.path, metaFile)); err == nil {
			return fmt.Errorf("%w: %s has a %s but no %s file", ErrCorrupt, d.path, metaFile, formatFile)
		}
		return writeFileAtomic(name, fmt.Appendf(nil, "%s %d\n", formatMagic, FormatVersion))
	}
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	magic, v, ok := strings.Cut(string(bytes.TrimSpace(b)), " ")
	version, verr := strconv.Atoi(v)
	if !ok || magic != formatMagic || verr != nil || version < 1 {
		return fmt.Errorf("%w: %s does not name a sharebroker format version", ErrCorrupt, name)
	}
	if version > FormatVersion {
		return fmt.Errorf("%w: %s is format version %d; this broker reads up to version %d", ErrNewerFormat, d.path, version, FormatVersion)
	}
	return nil
}

// readSmallFile reads the start of the file at name, never following a
// symbolic link and never more than 256 bytes: the format file is one
// short line, and a larger one is not a format file.
func readSmallFile(name string) ([]byte, error) {
	f, err := openNoFollow(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 256))
}

// Close closes the files and releases the lock. Sinks refuse writes after it.
func (d *Dir) Close() error {
	d.stopCompactor()
	d.mu.Lock()
	var sinks []*sink
	for _, t := range d.topics {
		for _, s := range t.sinks {
			sinks = append(sinks, s)
		}
	}
	d.mu.Unlock()
	var errs []error
	for _, s := range sinks { // not under d.mu: a sink takes it under its own lock
		errs = append(errs, s.close())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.meta != nil {
		errs = append(errs, d.meta.close())
		d.meta = nil
	}
	if d.lock != nil {
		errs = append(errs, d.lock.Close())
		d.lock = nil
	}
	return errors.Join(errs...)
}

// writeFileAtomic writes a whole file under a temporary name, fsyncs it,
// renames it into place and fsyncs the directory, so a crash leaves either
// the old file or the new one.
func writeFileAtomic(name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := openNoFollow(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		return err
	}
	return syncDir(filepath.Dir(name))
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
