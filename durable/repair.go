package durable

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sharebroker/sharebroker/storage"
)

// Repair is the way out of a refused start (docs/durability.md
// repair-data-dir): it runs recovery on the data directory at path and,
// each time recovery meets corruption, cuts the file it names at the byte
// it names, after copying the bytes it cuts to lost+found; a cut segment's
// later segments, whose offsets no longer follow, are moved there too.
// It repeats until recovery reads the whole directory back, and reports
// every cut and move with the whole batches (records, offsets) or
// metadata records the removed bytes still held. Nothing is deleted: what
// is cut is kept. The directory is locked meanwhile, as a broker locks it
// (lock-dir). A symbolic link is not repaired: it is refused as at start.
func Repair(path string, opts Options) (RepairReport, error) {
	rr := RepairReport{Dir: path}
	d, err := Open(path, opts)
	if err != nil {
		return rr, err
	}
	defer d.Close()
	for {
		rep, err := d.recover(storage.NewStore())
		if err == nil {
			rr.Recovered = rep
			return rr, nil
		}
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.File == "" {
			return rr, err
		}
		if err := d.cut(ce, &rr); err != nil {
			return rr, fmt.Errorf("repairing %s: %w", path, err)
		}
	}
}

// RepairReport says what Repair did.
type RepairReport struct {
	Dir string
	// Cuts are the files cut, in the order they were.
	Cuts []RepairCut
	// SetAside are the segments moved to lost+found because a segment
	// before them was cut.
	SetAside []RepairMove
	// Recovered is what the recovery after the cuts did: torn tails cut,
	// unknown topics' files set aside.
	Recovered Report
}

// RepairCut is one file cut at byte From: bytes [From, To) went, kept in
// KeptIn.
type RepairCut struct {
	File     string
	From, To int64
	Why      string
	KeptIn   string
	Held     Held
}

// RepairMove is one segment moved to lost+found, and what it held.
type RepairMove struct {
	Move
	Held Held
}

// Held is what removed bytes still held that can be read: whole batches
// with a matching CRC (in a segment) or whole records (in meta.log).
type Held struct {
	Batches, Records        int64
	FirstOffset, LastOffset int64 // of the batches; -1 without any
	// MetaOps counts the metadata records by op.
	MetaOps map[string]int
	// Partial: the bytes held more batch-like headers than were checked
	// (maxCandidates), so there may be more.
	Partial bool
}

func (h Held) String() string {
	var s string
	switch {
	case len(h.MetaOps) > 0:
		var parts []string
		n := 0
		for _, op := range slices.Sorted(maps.Keys(h.MetaOps)) {
			parts = append(parts, fmt.Sprintf("%d %s", h.MetaOps[op], op))
			n += h.MetaOps[op]
		}
		s = fmt.Sprintf("%d whole metadata records (%s)", n, strings.Join(parts, ", "))
	case h.Batches > 0:
		s = fmt.Sprintf("%d whole batches, %d records, offsets %d-%d", h.Batches, h.Records, h.FirstOffset, h.LastOffset)
	default:
		s = "no whole batch or record"
	}
	if h.Partial {
		s = "at least " + s
	}
	return s
}

// String is the report as the repair tool prints it, a line per change.
func (rr RepairReport) String() string {
	var b strings.Builder
	for _, c := range rr.Cuts {
		fmt.Fprintf(&b, "cut %s at byte %d: dropped bytes %d-%d (%d bytes) holding %s; %s; the bytes are kept in %s\n",
			c.File, c.From, c.From, c.To, c.To-c.From, c.Held, c.Why, c.KeptIn)
	}
	for _, m := range rr.SetAside {
		fmt.Fprintf(&b, "moved %s to %s: it follows a cut segment; it holds %s\n", m.From, m.To, m.Held)
	}
	rep := rr.Recovered
	for _, t := range rep.Truncated {
		fmt.Fprintf(&b, "torn tail cut off %s at byte %d: %d bytes\n", t.File, t.At, t.Dropped)
	}
	for _, m := range rep.SetAside {
		fmt.Fprintf(&b, "moved %s to %s: the metadata log does not know its topic\n", m.From, m.To)
	}
	for _, r := range rep.Removed {
		fmt.Fprintf(&b, "removed %s: %s\n", r.Name, r.Why)
	}
	if b.Len() == 0 {
		fmt.Fprintf(&b, "nothing to repair in %s\n", rr.Dir)
	}
	fmt.Fprintf(&b, "%s now reads back: %d topics, %d partitions, %d batches, %d metadata records\n",
		rr.Dir, rep.Topics, rep.Partitions, rep.Batches, rep.MetaRecords)
	return b.String()
}

// cut cuts the file ce names at its offset, keeping the cut bytes in
// lost+found (a file cut at byte 0 is moved there whole), and moves a cut
// segment's later segments there.
func (d *Dir) cut(ce *CorruptError, rr *RepairReport) error {
	f, err := openNoFollow(ce.File, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if ce.Offset < 0 || ce.Offset >= size {
		return fmt.Errorf("cannot cut %s at byte %d: it has %d bytes (%s)", ce.File, ce.Offset, size, ce.Why)
	}
	isMeta := filepath.Base(ce.File) == metaFile
	held, err := holdings(f, ce.Offset, size, isMeta)
	if err != nil {
		return err
	}
	var kept string
	if ce.Offset == 0 {
		// Nothing stays: the whole file goes aside as it is.
		f.Close()
		kept, err = d.setAside(ce.File)
	} else {
		kept, err = d.keepCopy(f, ce.File, ce.Offset, size)
		if err == nil {
			err = f.Truncate(ce.Offset)
		}
		if err == nil {
			err = f.Sync()
		}
	}
	if err != nil {
		return err
	}
	rr.Cuts = append(rr.Cuts, RepairCut{File: ce.File, From: ce.Offset, To: size, Why: ce.Why, KeptIn: kept, Held: held})
	if isMeta {
		return nil
	}
	// The segments after a cut one no longer follow on from it.
	dir := filepath.Dir(ce.File)
	base, _ := segmentBase(filepath.Base(ce.File))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	for _, b := range segmentBases(names) {
		if b <= base {
			continue
		}
		name := filepath.Join(dir, segmentName(b))
		held, err := holdingsOf(name)
		if err != nil {
			return err
		}
		to, err := d.setAside(name)
		if err != nil {
			return err
		}
		rr.SetAside = append(rr.SetAside, RepairMove{Move: Move{From: name, To: to}, Held: held})
	}
	return nil
}

// keepCopy copies bytes [from, to) of f, the file at name, to
// lost+found, named after name and from, and returns the copy's name.
func (d *Dir) keepCopy(f *os.File, name string, from, to int64) (string, error) {
	rel, err := filepath.Rel(d.path, name)
	if err != nil {
		return "", err
	}
	if _, err := d.setAsideDir(); err != nil {
		return "", err
	}
	dst := filepath.Join(d.lostFound, fmt.Sprintf("%s.cut-at-%d", rel, from))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(out, io.NewSectionReader(f, from, to-from))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return dst, err
}

func holdingsOf(name string) (Held, error) {
	f, err := openNoFollow(name, os.O_RDONLY, 0)
	if err != nil {
		return Held{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Held{}, err
	}
	return holdings(f, 0, fi.Size(), false)
}

// holdings finds the whole valid batches (or, for meta.log, records) in
// bytes [from, to) of r, wherever they start.
func holdings(r io.ReaderAt, from, to int64, meta bool) (Held, error) {
	h := Held{FirstOffset: -1, LastOffset: -1}
	if meta {
		h.MetaOps = make(map[string]int)
	}
	for pos := from; pos < to; {
		var q int64
		var err error
		if meta {
			q, err = findMetaRecordAfter(r, pos-1, to, to)
		} else {
			q, err = findBatchAfter(r, pos-1, to, to, 0, math.MaxInt64)
		}
		if err == errTooManyCandidates {
			h.Partial = true
			return h, nil
		}
		if err != nil || q < 0 {
			return h, err
		}
		if meta {
			var hdr [metaHeaderBytes]byte
			if _, err := r.ReadAt(hdr[:], q); err != nil {
				return h, err
			}
			n := int64(binary.BigEndian.Uint32(hdr[:]))
			payload := make([]byte, n)
			if _, err := r.ReadAt(payload, q+metaHeaderBytes); err != nil {
				return h, err
			}
			var rec metaRecord
			if json.Unmarshal(payload, &rec) == nil {
				h.MetaOps[rec.Op]++
			}
			pos = q + metaHeaderBytes + n
			continue
		}
		var hdr [batchMinBytes]byte
		if _, err := r.ReadAt(hdr[:], q); err != nil {
			return h, err
		}
		base := int64(binary.BigEndian.Uint64(hdr[:]))
		last := base + int64(int32(binary.BigEndian.Uint32(hdr[batchLastDeltaAt:])))
		h.Batches++
		h.Records += int64(int32(binary.BigEndian.Uint32(hdr[batchRecordsAt:])))
		if h.FirstOffset < 0 {
			h.FirstOffset = base
		}
		h.LastOffset = max(h.LastOffset, last)
		pos = q + int64(int32(binary.BigEndian.Uint32(hdr[8:]))) + batchPrefixBytes
	}
	return h, nil
}
