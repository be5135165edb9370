package durable

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// Background compaction of the metadata log (docs/durability.md
// meta-compaction). Share acknowledgements, offset commits and
// transactions add a record each, so between starts meta.log would grow
// without bound; like Kafka's share coordinator, which writes a snapshot
// of a share partition after share.coordinator.snapshot.update.records.
// per.snapshot (500) updates, the Dir rewrites meta.log as a snapshot once
// enough records were appended since the last one.
//
// Invariant: the file named meta.log always replays to the state of every
// record appended so far (appends and the swap both happen under Dir.mu).
//  1. Under Dir.mu, note the file's length (cut): every record before it
//     is whole, as each append writes a whole record under the lock.
//  2. Without the lock, replay the records before cut and write their
//     snapshot to meta.log.tmp. Appends go on into meta.log meanwhile.
//  3. Under Dir.mu again, copy the records after cut to meta.log.tmp,
//     fsync it, rename it over meta.log, fsync the directory, and make the
//     open meta.log.tmp handle (now meta.log) the one appends use.
//
// A crash before the rename leaves the old meta.log, complete; after it,
// the new one, whose snapshot replays as the records before cut did and
// whose tail is every record after cut, and no append lands in the old
// file once its tail was copied, as that and the swap share one hold of
// the lock. A leftover meta.log.tmp is never read; the next start
// overwrites it. The new file is fsynced before the rename whatever the
// flush properties say: a rename that reached the disk before the file's
// bytes could otherwise lose every record at a power cut, where without
// compaction only the unflushed tail could go.

// DefaultCompactEvery is how many records appended to meta.log, at least,
// start a background compaction (Options.CompactEvery).
const DefaultCompactEvery = 500

// compactEvery resolves Options.CompactEvery: 0 is the default, negative
// never.
func (o Options) compactEvery() int {
	if o.CompactEvery == 0 {
		return DefaultCompactEvery
	}
	return o.CompactEvery
}

// due reports whether enough records were appended since the last
// snapshot: at least every, and at least as many as the snapshot holds,
// so rewriting the live state costs O(1) per appended record however
// large it is.
func (m *metaLog) due() bool {
	return m.every > 0 && m.since >= max(m.every, m.base)
}

// startCompactor starts the background compaction, which Close stops.
func (d *Dir) startCompactor() {
	d.compactKick = make(chan struct{}, 1)
	d.compactStop = make(chan struct{})
	d.compactDone = make(chan struct{})
	go func() {
		defer close(d.compactDone)
		for {
			select {
			case <-d.compactStop:
				return
			case <-d.compactKick:
			}
			before, after, err := d.compactMeta()
			switch {
			case err != nil && d.opts.OnCompactError != nil:
				d.opts.OnCompactError(err)
			case err == nil && after > 0 && d.opts.OnCompacted != nil:
				d.opts.OnCompacted(before, after)
			}
		}
	}()
}

// stopCompactor stops the background compaction and waits for one under
// way to finish. Dir.mu must not be held.
func (d *Dir) stopCompactor() {
	d.stopOnce.Do(func() {
		if d.compactStop != nil {
			close(d.compactStop)
			<-d.compactDone
		}
	})
}

// compactMeta rewrites meta.log as a snapshot of its records (steps 1-3
// above) and returns its size in bytes before and after (0, 0 when the
// Dir was closed first). On error the old file stays in use,
// unchanged.
func (d *Dir) compactMeta() (before, after int, err error) {
	name := filepath.Join(d.path, metaFile)
	tmp := name + ".tmp"
	// 1.
	d.mu.Lock()
	if d.meta == nil {
		d.mu.Unlock()
		return 0, 0, nil
	}
	info, err := d.meta.f.Stat()
	if err != nil {
		d.mu.Unlock()
		return 0, 0, fmt.Errorf("compacting %s: %w", name, err)
	}
	cut := info.Size()
	d.meta.since = 0 // what is appended from now on counts toward the next one
	d.mu.Unlock()

	// 2. Only the records after the last run's are read: its state is
	// kept, and the file it wrote begins with that state's snapshot.
	if d.compactState == nil {
		d.compactState, d.compactFrom = newMetaState(), 0
	}
	from := d.compactFrom
	fail := func(err error) (int, int, error) {
		d.compactState = nil // read it all again next time
		return 0, 0, fmt.Errorf("compacting %s: %w", name, err)
	}
	prefix, err := readRange(name, from, cut)
	if err != nil {
		return fail(err)
	}
	recs, valid, err := readMetaLog(prefix)
	if err != nil {
		return fail(err)
	}
	if valid != len(prefix) {
		return fail(fmt.Errorf("%w: a record cut short at byte %d, before later ones", ErrCorrupt, from+int64(valid)))
	}
	st, err := replayOnto(d.compactState, recs)
	if err != nil {
		return fail(err)
	}
	// From here on the state holds the records before cut: a run that
	// fails without renaming goes on from cut in the same file.
	d.compactFrom = cut
	snap := snapshot(st)
	f, err := openNoFollow(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, 0, fmt.Errorf("compacting %s: %w", name, err)
	}
	swapped := false
	defer func() {
		if !swapped {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(snap); err != nil {
		return 0, 0, fmt.Errorf("compacting %s: %w", name, err)
	}
	d.compactHook("snapshot-written")

	// 3.
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.meta == nil {
		return 0, 0, nil // closed meanwhile
	}
	info, err = d.meta.f.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("compacting %s: %w", name, err)
	}
	tail, err := readRange(name, cut, info.Size())
	if err != nil {
		return 0, 0, fmt.Errorf("compacting %s: %w", name, err)
	}
	if _, err := f.Write(tail); err != nil {
		return 0, 0, fmt.Errorf("compacting %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return 0, 0, fmt.Errorf("compacting %s: %w", name, err)
	}
	d.compactHook("before-rename")
	if err := os.Rename(tmp, name); err != nil {
		return 0, 0, fmt.Errorf("compacting %s: %w", name, err)
	}
	swapped = true
	old := d.meta.f
	d.meta.f = f
	d.meta.base = countMetaRecords(snap)
	d.meta.since = countMetaRecords(tail)
	d.compactFrom = int64(len(snap))
	old.Close()
	d.compactHook("renamed")
	before, after = int(info.Size()), len(snap)+len(tail)
	if err := syncDir(d.path); err != nil {
		return before, after, fmt.Errorf("compacting %s: %w", name, err)
	}
	return before, after, nil
}

// compactHook is where tests stop a compaction between its steps.
func (d *Dir) compactHook(stage string) {
	if d.testCompactHook != nil {
		d.testCompactHook(stage)
	}
}

// readRange reads bytes [from, to) of the file at name.
func readRange(name string, from, to int64) ([]byte, error) {
	f, err := openNoFollow(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, to-from)
	if n, err := f.ReadAt(b, from); n != len(b) {
		return nil, fmt.Errorf("%s: read %d of bytes [%d, %d): %v", name, n, from, to, err)
	}
	return b, nil
}

// countMetaRecords counts the whole records in b, a run of records.
func countMetaRecords(b []byte) int {
	n := 0
	for pos := 0; pos+metaHeaderBytes <= len(b); pos += metaHeaderBytes + int(binary.BigEndian.Uint32(b[pos:])) {
		n++
	}
	return n
}
