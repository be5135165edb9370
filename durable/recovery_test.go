package durable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sharebroker/sharebroker/storage"
)

// snapshotFiles returns every regular file under dir with its bytes, by
// path relative to dir (the lock file aside).
func snapshotFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := make(map[string]string)
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || e.Name() == lockName {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if e.Type()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(path)
			files[rel] = "-> " + target
			return nil
		}
		b, err := os.ReadFile(path)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// sameFiles fails unless dir holds exactly the files of before.
func sameFiles(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	after := snapshotFiles(t, dir)
	for name, b := range before {
		if a, ok := after[name]; !ok {
			t.Errorf("%s is gone", name)
		} else if a != b {
			t.Errorf("%s changed: %d bytes, was %d", name, len(a), len(b))
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s appeared", name)
		}
	}
}

// refused opens dir expecting a *CorruptError about file at byte offset,
// whose message names both and the repair tool, and no file changed.
func refused(t *testing.T, dir, file string, offset int64) *CorruptError {
	t.Helper()
	before := snapshotFiles(t, dir)
	_, _, _, err := tryOpen(dir, Options{})
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("start: %v, want a CorruptError", err)
	}
	if ce.File != file || ce.Offset != offset {
		t.Fatalf("start refused about %s at byte %d (%v), want %s at %d", ce.File, ce.Offset, err, file, offset)
	}
	for _, want := range []string{file, "at byte", "repair-data-dir " + dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	sameFiles(t, dir, before)
	return ce
}

// withTopics writes a directory with topics a (3 batches) and b (2
// batches), one partition each, and returns it and a's segment.
func withTopics(t *testing.T) (dir, segA, segB string) {
	t.Helper()
	dir = t.TempDir()
	d, store, _ := open(t, dir, Options{})
	a, _ := store.CreateTopic("a", 1, nil)
	b, _ := store.CreateTopic("b", 1, nil)
	appendPlain(t, a.Partition(0), 3)
	appendPlain(t, b.Partition(0), 2)
	d.Close()
	return dir, filepath.Join(dir, logsDir, topicIDString(a.ID), "0", segmentName(0)),
		filepath.Join(dir, logsDir, topicIDString(b.ID), "0", segmentName(0))
}

func patch(t *testing.T, name string, at int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

// no-silent-loss: a batch length overwritten with 0x7ffffff0 (issue 21:
// read as a torn tail, every record lost) is impossible for a batch, so
// corruption: the start is refused at the batch, nothing changed.
func TestImpossibleBatchLengthRefused(t *testing.T) {
	dir, segA, _ := withTopics(t)
	patch(t, segA, 8, []byte{0x7f, 0xff, 0xff, 0xf0})
	refused(t, dir, segA, 0)
}

// no-silent-loss: a plausible length that runs past the end of the file,
// with whole batches after it, is no torn write.
func TestLengthPastEndWithBatchesAfterRefused(t *testing.T) {
	dir, segA, _ := withTopics(t)
	patch(t, segA, 8, binary.BigEndian.AppendUint32(nil, 4000))
	ce := refused(t, dir, segA, 0)
	if !strings.Contains(ce.Why, "whole valid batch starts after it") {
		t.Errorf("why: %s", ce.Why)
	}
}

// no-silent-loss: one flipped bit in the length of meta.log's first
// record (0x50 -> 0x00800050; issue 21: meta.log cut to nothing and every
// segment deleted) is refused, and every segment stays.
func TestMetaLengthBitFlipRefused(t *testing.T) {
	dir, _, _ := withTopics(t)
	meta := filepath.Join(dir, metaFile)
	b, _ := os.ReadFile(meta)
	b[1] |= 0x80
	patch(t, meta, 0, b[:4])
	refused(t, dir, meta, 0)
}

// no-silent-loss: a bad length in the middle of meta.log, records after
// it, is refused at that record.
func TestMetaBadLengthInMiddleRefused(t *testing.T) {
	dir, _, _ := withTopics(t)
	meta := filepath.Join(dir, metaFile)
	b, _ := os.ReadFile(meta)
	second := int64(metaHeaderBytes + binary.BigEndian.Uint32(b))
	patch(t, meta, second, []byte{0, 0, 0, 9})
	refused(t, dir, meta, second)
}

// no-silent-loss: an invalid batch in a segment before the last is
// refused even at its end.
func TestTornInEarlierSegmentRefused(t *testing.T) {
	dir := t.TempDir()
	d, store, _ := open(t, dir, Options{Policy: smallSegments})
	tp, _ := store.CreateTopic("t", 1, nil)
	appendPlain(t, tp.Partition(0), 3) // a segment each
	d.Close()
	first := filepath.Join(dir, logsDir, topicIDString(tp.ID), "0", segmentName(0))
	size := fileSize(t, first)
	if err := os.Truncate(first, size-5); err != nil {
		t.Fatal(err)
	}
	refused(t, dir, first, 0)
}

// torn-tail, no-silent-loss: a refused start changes no file, not even
// a torn tail of another partition it would have cut.
func TestRefusalCutsNoTornTail(t *testing.T) {
	dir, segA, segB := withTopics(t)
	if err := os.Truncate(segB, fileSize(t, segB)-7); err != nil { // torn
		t.Fatal(err)
	}
	patch(t, segA, 8, []byte{0x7f, 0xff, 0xff, 0xf0})
	refused(t, dir, segA, 0)
}

// no-symlinks: a segment reached through a symbolic link is refused,
// and the file it points to (here with a torn tail) is not cut.
func TestSymlinkSegmentRefused(t *testing.T) {
	dir, segA, _ := withTopics(t)
	target := filepath.Join(t.TempDir(), "elsewhere.log")
	b, _ := os.ReadFile(segA)
	torn := append(b, b[:30]...)
	if err := os.WriteFile(target, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(segA); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, segA); err != nil {
		t.Fatal(err)
	}
	_, _, _, err := tryOpen(dir, Options{})
	if !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), segA) {
		t.Fatalf("start: %v, want ErrSymlink naming %s", err, segA)
	}
	if got, _ := os.ReadFile(target); !bytes.Equal(got, torn) {
		t.Fatalf("the link's target changed: %d bytes, was %d", len(got), len(torn))
	}
}

// no-symlinks: meta.log, a partition directory and logs/ itself are not
// followed either.
func TestSymlinkMetaAndDirsRefused(t *testing.T) {
	for _, which := range []string{"meta", "partition", "logs"} {
		t.Run(which, func(t *testing.T) {
			dir, segA, _ := withTopics(t)
			var name string
			switch which {
			case "meta":
				name = filepath.Join(dir, metaFile)
			case "partition":
				name = filepath.Dir(segA)
			case "logs":
				name = filepath.Join(dir, logsDir)
			}
			moved := filepath.Join(t.TempDir(), "moved")
			if err := os.Rename(name, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(moved, name); err != nil {
				t.Fatal(err)
			}
			if _, _, _, err := tryOpen(dir, Options{}); !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), name) {
				t.Fatalf("start: %v, want ErrSymlink naming %s", err, name)
			}
		})
	}
}

// meta-read-bounded: meta.log is read in bounded steps: a 512 MiB tail
// of zeros (a file extended and never written) is a torn tail, and
// recovering it allocates a few MiB, not the file (issue 21: 1.24 GB).
func TestMetaZeroTailBoundedMemory(t *testing.T) {
	dir, _, _ := withTopics(t)
	meta := filepath.Join(dir, metaFile)
	size := fileSize(t, meta)
	const tail = 512 << 20
	if err := os.Truncate(meta, size+tail); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d, store, rep, err := tryOpen(dir, Options{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("recovery with a %d MiB zero tail allocated %.1f MiB", tail>>20, float64(allocated)/(1<<20))
	if allocated > 32<<20 {
		t.Errorf("recovery allocated %d MiB, want under 32 MiB whatever the tail", allocated>>20)
	}
	if store.Topic("a") == nil || store.Topic("b") == nil {
		t.Error("topics lost")
	}
	if len(rep.Truncated) != 1 || rep.Truncated[0].At != size || rep.Truncated[0].Dropped != tail {
		t.Errorf("truncated %+v, want the %d zero bytes at %d", rep.Truncated, tail, size)
	}
}

// repair-data-dir: Repair cuts a refused file at the byte recovery names,
// keeps the cut bytes in lost+found, reports what they held, moves the
// later segments aside, and the directory then starts.
func TestRepairCutsAndReports(t *testing.T) {
	dir := t.TempDir()
	d, store, _ := open(t, dir, Options{Policy: smallSegments})
	tp, _ := store.CreateTopic("t", 1, nil)
	appendPlain(t, tp.Partition(0), 4) // segments at 0, 2, 4, 6
	d.Close()
	pdir := filepath.Join(dir, logsDir, topicIDString(tp.ID), "0")
	second := filepath.Join(pdir, segmentName(2))
	patch(t, second, 70, []byte{0xff}) // inside the batch: CRC fails
	orig, _ := os.ReadFile(second)
	refused(t, dir, second, 0)

	rr, err := Repair(dir, Options{Policy: smallSegments})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("repair:\n%s", rr)
	if len(rr.Cuts) != 1 {
		t.Fatalf("cuts %+v, want one", rr.Cuts)
	}
	c := rr.Cuts[0]
	if c.File != second || c.From != 0 || c.To != int64(len(orig)) || c.Held.Batches != 0 {
		t.Errorf("cut %+v, want %s bytes 0-%d holding no whole batch", c, second, len(orig))
	}
	if _, err := os.Stat(second); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a segment cut at byte 0 is still in place: %v", err)
	}
	if kept, _ := os.ReadFile(c.KeptIn); !bytes.Equal(kept, orig) {
		t.Errorf("lost+found keeps %d bytes, want the %d cut", len(kept), len(orig))
	}
	if len(rr.SetAside) != 2 || rr.SetAside[0].Held.Batches != 1 || rr.SetAside[0].Held.FirstOffset != 4 ||
		rr.SetAside[1].Held.LastOffset != 7 {
		t.Errorf("set aside %+v, want the segments at 4 and 6 with a batch each", rr.SetAside)
	}
	for _, want := range []string{"cut " + second + " at byte 0", "offsets 4-5", "lost+found"} {
		if !strings.Contains(rr.String(), want) {
			t.Errorf("the report does not say %q:\n%s", want, rr)
		}
	}
	_, store2, _ := open(t, dir, Options{Policy: smallSegments})
	if hw := store2.Topic("t").Partition(0).Offsets().HighWatermark; hw != 2 {
		t.Errorf("high watermark after repair %d, want 2 (the first batch)", hw)
	}
}

// repair-data-dir: a meta.log cut by Repair sets the segments of the
// topics it no longer knows aside at the next start, never deletes them.
func TestRepairMetaThenSetAside(t *testing.T) {
	dir, segA, segB := withTopics(t)
	meta := filepath.Join(dir, metaFile)
	b, _ := os.ReadFile(meta)
	b[1] |= 0x80
	patch(t, meta, 0, b[:4])
	rr, err := Repair(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("repair:\n%s", rr)
	if len(rr.Cuts) != 1 || rr.Cuts[0].File != meta || rr.Cuts[0].Held.MetaOps["topic"] != 1 {
		t.Fatalf("cuts %+v, want meta.log cut holding one more whole topic record", rr.Cuts)
	}
	if len(rr.Recovered.SetAside) != 2 {
		t.Fatalf("set aside %+v, want both topics' directories", rr.Recovered.SetAside)
	}
	for _, seg := range []string{segA, segB} {
		rel, _ := filepath.Rel(dir, seg)
		if _, err := os.Stat(filepath.Join(rr.Recovered.SetAside[0].To, "..", "..", rel)); err != nil {
			t.Errorf("%s is not in lost+found: %v", rel, err)
		}
	}
}

// Recovery reads back into a fresh store what a CorruptError-free
// directory holds; a helper for the fuzz target.
func recoverInto(dir string) (*storage.Store, Report, error) {
	d, store, rep, err := tryOpen(dir, Options{})
	if err == nil {
		d.Close()
	}
	return store, rep, err
}

// torn-tail: whatever prefix of its last write a crash left — the last
// batch of the real directory's segment, or the last record of its
// meta.log, cut at any byte, or with zeros from any byte on (a power
// loss) — recovery accepts it as torn and keeps everything before it.
func TestEveryTornLastWriteAccepted(t *testing.T) {
	base := realDirFiles(t)
	var segName string
	for name := range base {
		if strings.HasPrefix(name, logsDir+string(filepath.Separator)) {
			segName = name
		}
	}
	seg := segmentBatches(base[segName])
	lastBatch := seg[len(seg)-1]
	spans := metaRecordSpans(base[metaFile])
	lastRec := spans[len(spans)-1]
	cases := []struct {
		file       string
		start, end int64
	}{{segName, lastBatch.pos, lastBatch.pos + int64(len(lastBatch.raw))}, {metaFile, lastRec[0], lastRec[1]}}
	for _, c := range cases {
		for at := c.start; at < c.end; at++ {
			for _, zeros := range []bool{false, true} {
				if zeros && !slices.ContainsFunc(base[c.file][at:c.end], func(b byte) bool { return b != 0 }) {
					continue // the write's bytes from here are zeros anyway: nothing torn
				}
				dir := t.TempDir()
				for name, b := range base {
					if name == c.file {
						if zeros {
							b = append(slices.Clone(b[:at]), make([]byte, c.end-at)...)
						} else {
							b = b[:at]
						}
					}
					os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
					if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				_, rep, err := recoverInto(dir)
				if err != nil {
					t.Fatalf("%s torn at byte %d (zeros %v): %v", c.file, at, zeros, err)
				}
				if c.file == metaFile && rep.MetaRecords != len(spans)-1 {
					t.Fatalf("meta.log torn at byte %d: %d records, want %d", at, rep.MetaRecords, len(spans)-1)
				}
				if c.file == segName && rep.Batches != int64(len(seg)-1) {
					t.Fatalf("segment torn at byte %d (zeros %v): %d batches, want %d", at, zeros, rep.Batches, len(seg)-1)
				}
			}
		}
	}
}
