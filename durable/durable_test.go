package durable

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/internal/batchtest"
	"github.com/sharebroker/sharebroker/storage"
)

// open opens and recovers dir into a new store, failing the test on error.
func open(t *testing.T, dir string, opts Options) (*Dir, *storage.Store, Report) {
	t.Helper()
	d, store, rep, err := tryOpen(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, store, rep
}

func tryOpen(dir string, opts Options) (*Dir, *storage.Store, Report, error) {
	d, err := Open(dir, opts)
	if err != nil {
		return nil, nil, Report{}, err
	}
	store := storage.NewStore()
	rep, err := d.Recover(store)
	if err != nil {
		d.Close()
		return nil, nil, rep, err
	}
	return d, store, rep, nil
}

// smallSegments makes every batch of these tests' size its own segment.
func smallSegments(map[string]string) Policy {
	return Policy{SegmentBytes: 100, FlushMessages: 1<<63 - 1, FlushMs: 1<<63 - 1}
}

func appendPlain(t *testing.T, p *storage.Partition, n int) {
	t.Helper()
	for range n {
		if _, err := p.Append(batchtest.Plain(2).Build(), storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// readAll returns every stored batch of p, back to back.
func readAll(t *testing.T, p *storage.Partition) []byte {
	t.Helper()
	offs := p.Offsets()
	res, err := p.Read(offs.LogStart, 1<<30, true)
	if err != nil {
		t.Fatal(err)
	}
	return res.Records.Join()
}

// same-bytes: topics, IDs, configs and batches come back as they were.
func TestRestartSameBytes(t *testing.T) {
	dir := t.TempDir()
	d, store, _ := open(t, dir, Options{})
	tp, err := store.CreateTopic("orders", 2, map[string]string{"retention.ms": "-1"})
	if err != nil {
		t.Fatal(err)
	}
	appendPlain(t, tp.Partition(0), 3)
	appendPlain(t, tp.Partition(1), 1)
	if err := tp.AddPartitions(3); err != nil {
		t.Fatal(err)
	}
	appendPlain(t, tp.Partition(2), 2)
	if err := tp.UpdateConfigs(func(map[string]string) (map[string]string, error) {
		return map[string]string{"retention.ms": "1000"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	want := [][]byte{readAll(t, tp.Partition(0)), readAll(t, tp.Partition(1)), readAll(t, tp.Partition(2))}
	d.Close()

	_, store2, rep := open(t, dir, Options{})
	got := store2.Topic("orders")
	if got == nil || got.ID != tp.ID || len(got.Partitions()) != 3 {
		t.Fatalf("topic after restart: %+v", got)
	}
	if v, _ := got.Config("retention.ms"); v != "1000" {
		t.Errorf("retention.ms = %q, want 1000", v)
	}
	for i, w := range want {
		if b := readAll(t, got.Partition(int32(i))); !bytes.Equal(b, w) {
			t.Errorf("partition %d: %d bytes back, want %d byte for byte", i, len(b), len(w))
		}
	}
	if rep.Batches != 6 || len(rep.Truncated) != 0 {
		t.Errorf("report %+v", rep)
	}
	// Appends go on at the next offset.
	res, err := got.Partition(0).Append(batchtest.Plain(1).Build(), storage.AppendOptions{})
	if err != nil || res.BaseOffset != 6 {
		t.Fatalf("append after restart: %+v %v", res, err)
	}
}

// torn-tail: a last batch cut short is dropped with a report naming the
// file and the bytes; the partition goes on from the batch before.
func TestTornTail(t *testing.T) {
	for _, cut := range []int{1, 11, 12, 40, 61} {
		dir := t.TempDir()
		d, store, _ := open(t, dir, Options{})
		tp, _ := store.CreateTopic("t", 1, nil)
		appendPlain(t, tp.Partition(0), 3)
		want := readAll(t, tp.Partition(0))
		d.Close()
		seg := filepath.Join(dir, logsDir, topicIDString(tp.ID), "0", segmentName(0))
		size := fileSize(t, seg)
		if err := os.Truncate(seg, size-int64(cut)); err != nil {
			t.Fatal(err)
		}
		_, store2, rep := open(t, dir, Options{})
		p := store2.Topic("t").Partition(0)
		if hw := p.Offsets().HighWatermark; hw != 4 {
			t.Errorf("cut %d: high watermark %d, want 4 (the third batch is gone)", cut, hw)
		}
		last := int64(len(want)) / 3
		if len(rep.Truncated) != 1 || rep.Truncated[0].File != seg || rep.Truncated[0].Dropped != last-int64(cut) {
			t.Errorf("cut %d: report %+v, want %s with %d bytes", cut, rep.Truncated, seg, last-int64(cut))
		}
		if got := fileSize(t, seg); got != size-last {
			t.Errorf("cut %d: segment %d bytes after recovery, want %d", cut, got, size-last)
		}
		if !bytes.Equal(readAll(t, p), want[:len(want)-int(last)]) {
			t.Errorf("cut %d: the first two batches changed", cut)
		}
	}
}

// torn-tail: a last batch with a bad CRC, or zeros after the data, is a
// torn tail too.
func TestTornTailCRCAndZeros(t *testing.T) {
	dir := t.TempDir()
	d, store, _ := open(t, dir, Options{})
	tp, _ := store.CreateTopic("t", 1, nil)
	appendPlain(t, tp.Partition(0), 2)
	d.Close()
	seg := filepath.Join(dir, logsDir, topicIDString(tp.ID), "0", segmentName(0))
	b, _ := os.ReadFile(seg)
	b[len(b)-1] ^= 0xff                  // the last batch's CRC fails
	b = append(b, make([]byte, 4096)...) // and the file was extended with zeros
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, store2, rep := open(t, dir, Options{})
	if hw := store2.Topic("t").Partition(0).Offsets().HighWatermark; hw != 2 {
		t.Errorf("high watermark %d, want 2", hw)
	}
	if len(rep.Truncated) != 1 {
		t.Errorf("report %+v", rep)
	}
}

// no-silent-loss: a bad batch with valid data after it refuses the start.
func TestCorruptMiddle(t *testing.T) {
	dir := t.TempDir()
	d, store, _ := open(t, dir, Options{})
	tp, _ := store.CreateTopic("t", 1, nil)
	appendPlain(t, tp.Partition(0), 3)
	d.Close()
	seg := filepath.Join(dir, logsDir, topicIDString(tp.ID), "0", segmentName(0))
	b, _ := os.ReadFile(seg)
	b[len(b)/3+70] ^= 0xff // inside the second batch
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, _, err := tryOpen(dir, Options{})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt", err)
	}
	if got := fileSize(t, seg); got != int64(len(b)) {
		t.Errorf("a refused start changed the segment: %d bytes, was %d", got, len(b))
	}
}

// lock-dir: a second Open of a held directory fails naming it; after
// Close it opens.
func TestLock(t *testing.T) {
	dir := t.TempDir()
	d, _, _ := open(t, dir, Options{})
	_, err := Open(dir, Options{})
	if !errors.Is(err, ErrLocked) || !bytes.Contains([]byte(err.Error()), []byte(dir)) {
		t.Fatalf("second open: %v, want ErrLocked naming %s", err, dir)
	}
	d.Close()
	d2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d2.Close()
}

// format-version: a newer version is refused with both versions named.
func TestNewerFormat(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, formatFile), []byte("sharebroker-data 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{})
	if !errors.Is(err, ErrNewerFormat) || !bytes.Contains([]byte(err.Error()), []byte("version 2")) {
		t.Fatalf("err = %v, want ErrNewerFormat naming version 2", err)
	}
}

// whole-segments-go: DeleteRecords and retention delete whole segments
// below the log start; the log start survives a restart, even when every
// segment is gone.
func TestLogStartAndSegments(t *testing.T) {
	dir := t.TempDir()
	d, store, _ := open(t, dir, Options{Policy: smallSegments})
	tp, _ := store.CreateTopic("t", 1, nil)
	p := tp.Partition(0)
	appendPlain(t, p, 4) // offsets 0-7, one segment per batch
	pdir := filepath.Join(dir, logsDir, topicIDString(tp.ID), "0")
	if n := countSegments(t, pdir); n != 4 {
		t.Fatalf("%d segments, want 4", n)
	}
	if _, err := p.DeleteRecordsBefore(5); err != nil { // inside the third batch
		t.Fatal(err)
	}
	if n := countSegments(t, pdir); n != 2 {
		t.Errorf("%d segments after DeleteRecords(5), want 2", n)
	}
	d.Close()

	d2, store2, _ := open(t, dir, Options{Policy: smallSegments})
	p2 := store2.Topic("t").Partition(0)
	if o := p2.Offsets(); o.LogStart != 5 || o.HighWatermark != 8 {
		t.Errorf("offsets after restart %+v, want log start 5, high watermark 8", o)
	}
	if _, err := p2.DeleteRecordsBefore(-1); err != nil {
		t.Fatal(err)
	}
	if n := countSegments(t, pdir); n != 0 {
		t.Errorf("%d segments after deleting everything, want 0", n)
	}
	d2.Close()

	_, store3, _ := open(t, dir, Options{Policy: smallSegments})
	p3 := store3.Topic("t").Partition(0)
	if o := p3.Offsets(); o.LogStart != 8 || o.HighWatermark != 8 {
		t.Errorf("offsets after the second restart %+v, want 8, 8", o)
	}
	res, err := p3.Append(batchtest.Plain(1).Build(), storage.AppendOptions{})
	if err != nil || res.BaseOffset != 8 {
		t.Errorf("append: %+v %v, want offset 8", res, err)
	}
}

// metadata-first: a deleted topic's files go; a topic of the same name is
// a new one.
func TestDeleteTopic(t *testing.T) {
	dir := t.TempDir()
	d, store, _ := open(t, dir, Options{})
	tp, _ := store.CreateTopic("t", 1, nil)
	appendPlain(t, tp.Partition(0), 2)
	if _, err := store.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, logsDir, topicIDString(tp.ID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the deleted topic's directory is still there: %v", err)
	}
	tp2, _ := store.CreateTopic("t", 1, nil)
	appendPlain(t, tp2.Partition(0), 1)
	d.Close()
	_, store2, _ := open(t, dir, Options{})
	got := store2.Topic("t")
	if got == nil || got.ID != tp2.ID || got.Partition(0).Offsets().HighWatermark != 2 {
		t.Fatalf("after restart: %+v", got)
	}
}

// set-aside-not-deleted: a directory under logs/ of a topic the metadata
// log does not know is moved to lost+found, with what it holds, and
// reported; a deleted topic's directory (its deletion is in the metadata
// log) is removed.
func TestUnknownTopicDirSetAside(t *testing.T) {
	dir := t.TempDir()
	d, store, _ := open(t, dir, Options{})
	gone, _ := store.CreateTopic("gone", 1, nil)
	appendPlain(t, gone.Partition(0), 1)
	d.Close()
	// A crash after the deletion was logged, before its files went.
	goneDir := filepath.Join(dir, logsDir, topicIDString(gone.ID))
	saved := filepath.Join(t.TempDir(), "saved")
	if err := os.Rename(goneDir, saved); err != nil {
		t.Fatal(err)
	}
	d, store, _ = open(t, dir, Options{})
	if _, err := store.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if err := os.Rename(saved, goneDir); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(dir, logsDir, "00112233445566778899aabbccddeeff", "0")
	if err := os.MkdirAll(stray, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stray, segmentName(0)), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, rep := open(t, dir, Options{})
	if len(rep.SetAside) != 1 || rep.SetAside[0].From != filepath.Dir(stray) {
		t.Fatalf("set aside %v, want the stray directory", rep.SetAside)
	}
	b, err := os.ReadFile(filepath.Join(rep.SetAside[0].To, "0", segmentName(0)))
	if err != nil || string(b) != "kept" || !strings.HasPrefix(rep.SetAside[0].To, filepath.Join(dir, lostFoundDir)) {
		t.Fatalf("the stray segment in lost+found: %q %v (moved to %s)", b, err, rep.SetAside[0].To)
	}
	if len(rep.Removed) != 1 || rep.Removed[0].Name != goneDir {
		t.Errorf("removed %v, want the deleted topic's %s", rep.Removed, goneDir)
	}
}

// producer-state-from-log: a retried batch after a restart is a duplicate
// at its original offset.
func TestProducerStateFromLog(t *testing.T) {
	dir := t.TempDir()
	d, store, _ := open(t, dir, Options{})
	tp, _ := store.CreateTopic("t", 1, nil)
	batch := batchtest.Idempotent(7, 0, 0, 3).Build()
	if _, err := tp.Partition(0).Append(batch, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	_, store2, _ := open(t, dir, Options{})
	res, err := store2.Topic("t").Partition(0).Append(batch, storage.AppendOptions{})
	if err != nil || !res.Duplicate || res.BaseOffset != 0 {
		t.Fatalf("retry after restart: %+v %v, want a duplicate at 0", res, err)
	}
	_, err = store2.Topic("t").Partition(0).Append(batchtest.Idempotent(7, 0, 5, 1).Build(), storage.AppendOptions{})
	if !errors.Is(err, storage.ErrOutOfOrderSequence) {
		t.Fatalf("a gap after restart: %v, want out of order", err)
	}
}

// compact-on-start: the metadata log holds one record per live fact
// after a restart.
func TestCompactOnStart(t *testing.T) {
	dir := t.TempDir()
	d, store, _ := open(t, dir, Options{})
	for range 5 {
		store.CreateTopic("gone", 1, nil)
		store.DeleteTopic("gone")
	}
	store.CreateTopic("kept", 1, nil)
	d.ReserveProducerIDs(1000)
	d.Close()
	d2, _, _ := open(t, dir, Options{})
	b, _ := os.ReadFile(filepath.Join(dir, metaFile))
	recs, _, err := readMetaLog(b)
	if err != nil || len(recs) != 2 {
		t.Fatalf("metadata log after restart: %d records (%v), want 2", len(recs), err)
	}
	if got := d2.ReservedProducerIDs(); got != 1000 {
		t.Errorf("reserved producer IDs %d, want 1000", got)
	}
}

// torn-tail of the metadata log: a record cut short is dropped.
func TestMetaTornTail(t *testing.T) {
	dir := t.TempDir()
	d, store, _ := open(t, dir, Options{})
	store.CreateTopic("a", 1, nil)
	store.CreateTopic("b", 1, nil)
	d.Close()
	name := filepath.Join(dir, metaFile)
	if err := os.Truncate(name, fileSize(t, name)-3); err != nil {
		t.Fatal(err)
	}
	_, store2, rep := open(t, dir, Options{})
	if store2.Topic("a") == nil || store2.Topic("b") != nil {
		t.Errorf("topics after a torn metadata log: a=%v b=%v, want a only", store2.Topic("a") != nil, store2.Topic("b") != nil)
	}
	if len(rep.Truncated) != 1 || rep.Truncated[0].File != name {
		t.Errorf("report %+v", rep)
	}
}

// flush-as-kafka: flush.messages=1 fsyncs each append (observable only as
// "no error"; the fsync itself is the kernel's).
func TestFlushMessages(t *testing.T) {
	dir := t.TempDir()
	_, store, _ := open(t, dir, Options{Policy: func(map[string]string) Policy {
		return Policy{SegmentBytes: 1 << 30, FlushMessages: 1, FlushMs: 1<<63 - 1}
	}})
	tp, _ := store.CreateTopic("t", 1, nil)
	appendPlain(t, tp.Partition(0), 3)
}

func fileSize(t *testing.T, name string) int64 {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func countSegments(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return len(segmentBases(names))
}

// unflushed returns how many records the sink of partition 0 of topic id
// appended since its last fsync.
func unflushed(t *testing.T, d *Dir, id storage.TopicID) int64 {
	t.Helper()
	d.mu.Lock()
	s := d.topics[id].sinks[0]
	d.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unflushed
}

// flush-as-kafka: flush.ms fsyncs on the first append once that long has
// passed since the last fsync, on the given clock; a huge flush.ms never
// does.
func TestFlushMs(t *testing.T) {
	for _, tc := range []struct {
		flushMs int64
		synced  bool
	}{{1000, true}, {1 << 62, false}} {
		now := time.Unix(1_700_000_000, 0)
		d, store, _ := open(t, t.TempDir(), Options{
			Policy: func(map[string]string) Policy {
				return Policy{SegmentBytes: 1 << 30, FlushMessages: 1<<63 - 1, FlushMs: tc.flushMs}
			},
			Now: func() time.Time { return now },
		})
		tp, _ := store.CreateTopic("t", 1, nil)
		appendPlain(t, tp.Partition(0), 1)
		if got := unflushed(t, d, tp.ID); got != 2 {
			t.Fatalf("flush.ms %d: %d records unflushed right after the first append, want 2", tc.flushMs, got)
		}
		now = now.Add(2 * time.Second)
		appendPlain(t, tp.Partition(0), 1)
		if got := unflushed(t, d, tp.ID); (got == 0) != tc.synced {
			t.Errorf("flush.ms %d: %d records unflushed 2 s later; synced %v, want %v", tc.flushMs, got, got == 0, tc.synced)
		}
	}
}
