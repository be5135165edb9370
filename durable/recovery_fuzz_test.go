package durable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sharebroker/sharebroker/internal/batchtest"
	"github.com/sharebroker/sharebroker/storage"
)

// The recovery fuzz targets damage copies of real data directories:
// testdata/datadir, written by a sharebroker process (kgo produce, share
// consume, an ACL and a SCRAM user; cmd/sharebroker
// datadir_corrupt_process_test.go writes it again with
// SHAREBROKER_WRITE_RECOVERY_SEEDS=1), and one written here through the
// Dir with a segment per batch. Their property is docs/durability.md's
// no-silent-loss: recovery either succeeds with every batch and record
// the damage left intact, or refuses and changes no file; it never
// panics, and nothing it drops is deleted unread.

// realDirFiles returns the files of testdata/datadir by relative path.
func realDirFiles(t testing.TB) map[string][]byte {
	files := make(map[string][]byte)
	root := filepath.Join("testdata", "datadir")
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		b, err := os.ReadFile(path)
		files[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// smallDirFiles writes a directory through the Dir: topic a in a segment
// per batch with its log start moved, topic b in one, a deleted topic,
// and returns its files.
func smallDirFiles(t testing.TB) map[string][]byte {
	dir, err := os.MkdirTemp("", "durable-fuzz-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	d, store, _, err := tryOpen(dir, Options{Policy: smallSegments})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := store.CreateTopic("a", 1, nil)
	b, _ := store.CreateTopic("b", 1, nil)
	gone, _ := store.CreateTopic("gone", 1, nil)
	for _, tp := range []*storage.Topic{a, b, gone} {
		for range 4 {
			if _, err := tp.Partition(0).Append(batchtest.Plain(2).Build(), storage.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := a.Partition(0).DeleteRecordsBefore(3); err != nil {
		t.Fatal(err)
	}
	if _, err := store.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	d.Close()
	files := make(map[string][]byte)
	err = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || e.Name() == lockName {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		b, err := os.ReadFile(path)
		files[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// applyDamage overwrites data at at%len with patch and cuts cut bytes off
// the end; it returns the result and the first byte that differs from
// data (len of the result when it is a prefix of data).
func applyDamage(data []byte, at uint32, patch []byte, cut uint16) ([]byte, int64) {
	out := slices.Clone(data)
	if len(out) > 0 {
		copy(out[int(at)%len(out):], patch)
	}
	out = out[:len(out)-min(int(cut), len(out))]
	dp := int64(len(out))
	for i := range out {
		if out[i] != data[i] {
			dp = int64(i)
			break
		}
	}
	return out, dp
}

// batchAt is one whole batch of a segment as it was written.
type batchAt struct {
	pos  int64
	base int64
	raw  []byte
}

// segmentBatches lists the batches of a segment as written.
func segmentBatches(b []byte) []batchAt {
	var out []batchAt
	for pos := 0; pos+batchMinBytes <= len(b); {
		n := int(int32(binary.BigEndian.Uint32(b[pos+8:]))) + batchPrefixBytes
		if n < batchMinBytes || pos+n > len(b) {
			break
		}
		out = append(out, batchAt{int64(pos), int64(binary.BigEndian.Uint64(b[pos:])), b[pos : pos+n]})
		pos += n
	}
	return out
}

// metaRecordSpans lists where each record of a meta.log as written
// starts and ends.
func metaRecordSpans(b []byte) [][2]int64 {
	var out [][2]int64
	for pos := 0; pos+metaHeaderBytes <= len(b); {
		end := pos + metaHeaderBytes + int(binary.BigEndian.Uint32(b[pos:]))
		if end > len(b) {
			break
		}
		out = append(out, [2]int64{int64(pos), int64(end)})
		pos = end
	}
	return out
}

func FuzzRecoverDir(f *testing.F) {
	bases := []map[string][]byte{realDirFiles(f), smallDirFiles(f)}
	policies := []func(map[string]string) Policy{nil, smallSegments}
	// The damage of issue 21, on the real directory: file 1 is the
	// segment, file 0 meta.log (sorted names).
	f.Add(uint8(0), uint8(1), uint32(8), []byte{0x7f, 0xff, 0xff, 0xf0}, uint16(0))
	f.Add(uint8(0), uint8(0), uint32(1), []byte{0x80}, uint16(0))
	f.Add(uint8(0), uint8(0), uint32(0), []byte{}, uint16(30))
	f.Add(uint8(0), uint8(1), uint32(0), []byte{}, uint16(40))
	f.Add(uint8(1), uint8(2), uint32(70), []byte{0xff}, uint16(0))
	f.Add(uint8(1), uint8(5), uint32(0), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, uint16(0))
	f.Fuzz(func(t *testing.T, which, file uint8, at uint32, patch []byte, cut uint16) {
		base := bases[int(which)%len(bases)]
		policy := policies[int(which)%len(bases)]
		var names []string
		for name := range base {
			if name != formatFile {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		target := names[int(file)%len(names)]
		damaged, dp := applyDamage(base[target], at, patch, cut)
		dir := t.TempDir()
		for name, b := range base {
			if name == target {
				b = damaged
			}
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		written := snapshotFiles(t, dir)
		d, store, rep, err := tryOpen(dir, Options{Policy: policy})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s damaged at %d: %v, not ErrCorrupt", target, dp, err)
			}
			sameFiles(t, dir, written)
			return
		}
		defer d.Close()
		// Success: every record of meta.log the damage left in place is
		// replayed (recovery reads a prefix, so all before the last one).
		if target == metaFile {
			orig := base[metaFile]
			for i, sp := range metaRecordSpans(orig) {
				if sp[1] <= int64(len(damaged)) && bytes.Equal(damaged[sp[0]:sp[1]], orig[sp[0]:sp[1]]) && i >= rep.MetaRecords {
					t.Fatalf("meta.log damaged at %d: record %d (bytes %d-%d) intact but only %d replayed", dp, i, sp[0], sp[1], rep.MetaRecords)
				}
			}
		}
		// Every batch the damage left in place is served at its offset,
		// unless below the log start, or kept in lost+found.
		for _, name := range names {
			if name == metaFile {
				continue
			}
			parts := strings.Split(name, string(filepath.Separator))
			id, _ := parseTopicID(parts[1])
			now := base[name]
			if name == target {
				now = damaged
			}
			for _, b := range segmentBatches(base[name]) {
				end := b.pos + int64(len(b.raw))
				if end > int64(len(now)) || !bytes.Equal(now[b.pos:end], b.raw) {
					continue // damaged
				}
				if keptAside(t, dir, name, b) {
					continue
				}
				tp := store.TopicByID(id)
				if tp == nil {
					t.Fatalf("%s damaged at %d: the batch at %d of %s is intact, but its topic is gone and it is not in lost+found", target, dp, b.pos, name)
				}
				p := tp.Partition(0)
				h, _ := storage.ParseBatch(b.raw)
				logStart := p.Offsets().LogStart
				if b.base+int64(h.LastOffsetDelta) < logStart {
					continue
				}
				got := readJoined(t, p, max(b.base, logStart), int32(len(b.raw)))
				if !bytes.HasPrefix(got, b.raw) {
					t.Fatalf("%s damaged at %d: the intact batch at %d of %s (offset %d) is not served", target, dp, b.pos, name, b.base)
				}
			}
		}
	})
}

// keptAside reports whether lost+found under dir holds the segment name
// with batch b at its position.
func keptAside(t *testing.T, dir, name string, b batchAt) bool {
	t.Helper()
	found := false
	filepath.WalkDir(filepath.Join(dir, lostFoundDir), func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.Contains(path, filepath.Dir(name)) {
			return nil
		}
		kept, _ := os.ReadFile(path)
		if end := b.pos + int64(len(b.raw)); end <= int64(len(kept)) && bytes.Equal(kept[b.pos:end], b.raw) {
			found = true
		}
		return nil
	})
	return found
}

// TestWriteRecoverySeeds writes the corpora of FuzzReadMetaLog and
// FuzzScanSegment from testdata/datadir (run with
// SHAREBROKER_WRITE_RECOVERY_SEEDS=1 after the directory is written
// again): its meta.log and segment as they are, cut short, and with the
// damage of issue 21.
func TestWriteRecoverySeeds(t *testing.T) {
	if os.Getenv("SHAREBROKER_WRITE_RECOVERY_SEEDS") != "1" {
		t.Skip("writes the fuzz corpora: SHAREBROKER_WRITE_RECOVERY_SEEDS=1")
	}
	files := realDirFiles(t)
	var meta, seg []byte
	for name, b := range files {
		switch {
		case name == metaFile:
			meta = b
		case strings.HasSuffix(name, segmentSuffix):
			seg = b
		}
	}
	write := func(target, name string, values ...any) {
		var b strings.Builder
		b.WriteString("go test fuzz v1\n")
		for _, v := range values {
			switch v := v.(type) {
			case []byte:
				fmt.Fprintf(&b, "[]byte(%q)\n", v)
			case bool:
				fmt.Fprintf(&b, "bool(%v)\n", v)
			case uint16:
				fmt.Fprintf(&b, "uint16(%d)\n", v)
			}
		}
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	flip := slices.Clone(meta)
	flip[1] |= 0x80
	write("FuzzReadMetaLog", "real", meta)
	write("FuzzReadMetaLog", "real-torn", meta[:len(meta)-20])
	write("FuzzReadMetaLog", "real-length-bit-flip", flip)
	long := slices.Clone(seg)
	copy(long[8:], []byte{0x7f, 0xff, 0xff, 0xf0})
	write("FuzzScanSegment", "real", seg, true, uint16(0))
	write("FuzzScanSegment", "real-torn", seg[:len(seg)-40], true, uint16(100))
	write("FuzzScanSegment", "real-length-0x7ffffff0", long, true, uint16(0))
	write("FuzzScanSegment", "real-not-last-torn", seg[:len(seg)-40], false, uint16(0))
}
