package durable

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"

	"github.com/sharebroker/sharebroker/internal/batchtest"
	"github.com/sharebroker/sharebroker/storage"
)

// Tests of reads-from-files: with a data directory a partition's record
// bytes live in its segment files, and the Go heap holds only the index.

// liveHeap returns the bytes of live heap objects after a full GC.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func policy(segmentBytes int64) func(map[string]string) Policy {
	return func(map[string]string) Policy {
		return Policy{SegmentBytes: segmentBytes, FlushMessages: 1<<63 - 1, FlushMs: 1<<63 - 1}
	}
}

// reads-from-files: appending 64 MB, and restarting on it, leaves the
// live heap within a few MB of where it started (the index: some 60 bytes
// a batch), where an in-memory log would hold all 64 MB.
func TestHeapFlatWithRetainedBytes(t *testing.T) {
	const (
		batches    = 1024
		valueBytes = 64 << 10 // one record a batch: 64 MiB in all
		bound      = 8 << 20
	)
	dir := t.TempDir()
	d, store, _ := open(t, dir, Options{Policy: policy(16 << 20)})
	tp, err := store.CreateTopic("t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := batchtest.Plain(1)
	spec.ValueBytes = valueBytes
	raw := spec.Build()
	before := liveHeap()
	for range batches {
		if _, err := tp.Partition(0).Append(raw, storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	after := liveHeap()
	if got := tp.Partition(0).Bytes(); got < batches*valueBytes {
		t.Fatalf("partition holds %d bytes, want at least %d", got, batches*valueBytes)
	}
	if after > before+bound {
		t.Errorf("live heap grew %d bytes over %d MiB appended, bound %d", after-before, batches*valueBytes>>20, bound)
	}
	d.Close()
	store = nil

	start := liveHeap()
	_, store2, rep := open(t, dir, Options{Policy: policy(16 << 20)})
	if rep.Batches != batches {
		t.Fatalf("recovered %d batches, want %d", rep.Batches, batches)
	}
	if got := liveHeap(); got > start+bound {
		t.Errorf("live heap grew %d bytes restarting on %d MiB, bound %d", got-start, batches*valueBytes>>20, bound)
	}
	// And the records read back are the ones written.
	res, err := store2.Topic("t").Partition(0).Read(batches-1, 1<<20, true)
	if err != nil || len(res.Records) != 1 || len(res.Records[0]) != len(raw) {
		t.Fatalf("read of the last batch: %v %v", res.Records.Len(), err)
	}
}

// memoryTwin appends the same batches to an in-memory partition: the
// bytes a file-backed one must return (same-bytes).
func memoryTwin(t *testing.T, raws [][]byte) *storage.Partition {
	t.Helper()
	tp, err := storage.NewStore().CreateTopic("t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range raws {
		if _, err := tp.Partition(0).Append(raw, storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return tp.Partition(0)
}

func readJoined(t *testing.T, p *storage.Partition, offset int64, maxBytes int32) []byte {
	t.Helper()
	res, err := p.Read(offset, maxBytes, true)
	if err != nil {
		t.Fatal(err)
	}
	return res.Records.Join()
}

// reads-from-files: a fetch of batches in rolled segments, of one
// crossing segments, and a share read of a range return exactly the bytes
// stored, before and after a restart.
func TestReadFromRolledSegments(t *testing.T) {
	dir := t.TempDir()
	d, store, _ := open(t, dir, Options{Policy: smallSegments})
	tp, _ := store.CreateTopic("t", 1, nil)
	var raws [][]byte
	for i := range 6 {
		raws = append(raws, batchtest.Plain(1+i%3).Build())
	}
	for _, raw := range raws {
		if _, err := tp.Partition(0).Append(raw, storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	twin := memoryTwin(t, raws)
	check := func(p *storage.Partition, when string) {
		t.Helper()
		end := twin.Offsets().HighWatermark
		for off := int64(0); off < end; off++ {
			for _, maxBytes := range []int32{1, 200, 1 << 20} {
				if got, want := readJoined(t, p, off, maxBytes), readJoined(t, twin, off, maxBytes); !bytes.Equal(got, want) {
					t.Errorf("%s: read at %d of %d bytes: %d bytes, want %d byte for byte", when, off, maxBytes, len(got), len(want))
				}
			}
			if got, want := p.ReadRangeInto(off, end-1, nil).Join(), twin.ReadRangeInto(off, end-1, nil).Join(); !bytes.Equal(got, want) {
				t.Errorf("%s: ReadRangeInto(%d, %d) differs", when, off, end-1)
			}
		}
		recs, err := p.RecordsIn(0, end)
		if err != nil || len(recs) != int(end) {
			t.Errorf("%s: RecordsIn: %d records, %v", when, len(recs), err)
		}
	}
	check(tp.Partition(0), "live")
	d.Close()
	_, store2, _ := open(t, dir, Options{Policy: smallSegments})
	check(store2.Topic("t").Partition(0), "after restart")
}

// reads-from-files: deleting segments (DeleteRecords here; retention
// takes the same path) while readers hold records read from them, or are
// reading them, never changes a byte they hold: a read returns the stored
// bytes or an error, never others. Run under -race.
func TestDeleteSegmentsWhileReading(t *testing.T) {
	dir := t.TempDir()
	_, store, _ := open(t, dir, Options{Policy: smallSegments})
	tp, _ := store.CreateTopic("t", 1, nil)
	p := tp.Partition(0)
	var raws [][]byte
	for range 200 {
		raws = append(raws, batchtest.Plain(2).Build())
	}
	for _, raw := range raws {
		if _, err := p.Append(raw, storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	twin := memoryTwin(t, raws)
	held, err := p.Read(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	want := readJoined(t, twin, 0, 1<<20)

	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(0); i < 400; i += 2 {
				off := (i + int64(r)) % 400
				res, err := p.Read(off, 300, true)
				if err != nil {
					if !errors.Is(err, storage.ErrOffsetOutOfRange) && !errors.Is(err, storage.ErrStorage) {
						t.Errorf("read at %d: %v", off, err)
					}
					continue
				}
				want, _ := twin.Read(off, 300, true)
				if got := res.Records.Join(); !bytes.Equal(got, want.Records.Join()) {
					t.Errorf("read at %d: bytes differ from those stored", off)
				}
			}
		}()
	}
	for off := int64(2); off <= 400; off += 2 {
		if _, err := p.DeleteRecordsBefore(off); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	if !bytes.Equal(held.Records.Join(), want) {
		t.Errorf("records held across the deletion of their segments changed")
	}
}

// reads-from-files: the index rebuilt at start from the segments equals
// the one the appends built, for random mixes of plain, idempotent and
// transactional batches, markers, segment sizes and log start moves.
func TestIndexRebuildRandom(t *testing.T) {
	for seed := range uint64(20) {
		indexRebuild(t, seed)
	}
}

func FuzzIndexRebuild(f *testing.F) {
	for seed := range uint64(4) {
		f.Add(seed)
	}
	f.Fuzz(indexRebuild)
}

func indexRebuild(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 14))
	dir := t.TempDir()
	segBytes := int64(100 + rng.IntN(2000))
	d, store, _ := open(t, dir, Options{Policy: policy(segBytes)})
	tp, _ := store.CreateTopic("t", 1, nil)
	p := tp.Partition(0)
	seq := map[int64]int32{}
	txns := map[int64]bool{}
	for range 10 + rng.IntN(60) {
		var raw []byte
		switch k := rng.IntN(10); {
		case k < 3:
			raw = batchtest.Plain(1 + rng.IntN(4)).Build()
		case k < 6:
			id := int64(1 + rng.IntN(3))
			n := 1 + rng.IntN(3)
			raw = batchtest.Idempotent(id, 0, seq[id], n).Build()
			seq[id] += int32(n)
		case k < 8:
			id := int64(10 + rng.IntN(2))
			n := 1 + rng.IntN(3)
			raw = batchtest.Transactional(id, 0, seq[id], n).Build()
			seq[id] += int32(n)
			txns[id] = true
		default:
			for id := range txns {
				p.AppendMarker(storage.MarkerOptions{ProducerID: id, ProducerEpoch: 0, Commit: rng.IntN(2) == 0, NowMs: 1})
				delete(txns, id)
				break
			}
			continue
		}
		if _, err := p.Append(raw, storage.AppendOptions{}); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		// A transaction wholly below the log start is forgotten at a
		// restart with its producer (producer-state-from-log), so the
		// log start moves only with none open.
		if len(txns) == 0 && rng.IntN(8) == 0 {
			hw := p.Offsets().HighWatermark
			if _, err := p.DeleteRecordsBefore(hw - int64(rng.IntN(int(hw)+1))); err != nil {
				t.Fatal(err)
			}
		}
	}
	type snap struct {
		offs    storage.Offsets
		batches []storage.BatchInfo
		bytes   []byte
		open    map[int64]int16
	}
	take := func(p *storage.Partition) snap {
		offs := p.Offsets()
		bs, _, err := p.Batches(offs.LogStart, 1<<62, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		return snap{offs, bs, readJoined(t, p, offs.LogStart, 1<<30), p.OpenTransactions()}
	}
	want := take(p)
	// A transaction whose first batch is below the log start comes back
	// opened at its first batch still stored; only the bound matters.
	want.offs.LastStable = max(want.offs.LastStable, want.offs.LogStart)
	d.Close()
	_, store2, _ := open(t, dir, Options{Policy: policy(segBytes)})
	got := take(store2.Topic("t").Partition(0))
	got.offs.LastStable = max(got.offs.LastStable, got.offs.LogStart)
	if got.offs != want.offs || len(got.batches) != len(want.batches) || !bytes.Equal(got.bytes, want.bytes) || len(got.open) != len(want.open) {
		t.Fatalf("seed %d: rebuilt %+v, %d batches, %d bytes, open %v; want %+v, %d, %d, %v",
			seed, got.offs, len(got.batches), len(got.bytes), got.open, want.offs, len(want.batches), len(want.bytes), want.open)
	}
	for i := range got.batches {
		if got.batches[i] != want.batches[i] {
			t.Fatalf("seed %d: batch %d rebuilt as %+v, want %+v", seed, i, got.batches[i], want.batches[i])
		}
	}
	for id, e := range want.open {
		if got.open[id] != e {
			t.Fatalf("seed %d: open transaction of %d at epoch %d, want %d", seed, id, got.open[id], e)
		}
	}
}

// reads-from-files: reads into one ReadBuffer each keep their own bytes
// until Reset, however many follow and however the buffer grows.
func TestReadBufferKeepsEarlierReads(t *testing.T) {
	dir := t.TempDir()
	_, store, _ := open(t, dir, Options{Policy: smallSegments})
	tp, _ := store.CreateTopic("t", 1, nil)
	var raws [][]byte
	for i := range 50 {
		spec := batchtest.Plain(1)
		spec.ValueBytes = 1 + i*100
		raws = append(raws, spec.Build())
	}
	for _, raw := range raws {
		if _, err := tp.Partition(0).Append(raw, storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	twin := memoryTwin(t, raws)
	var rb storage.ReadBuffer
	for round := range 2 {
		var held []storage.Records
		for off := range int64(50) {
			res, err := tp.Partition(0).ReadIsolatedInto(off, 1<<20, true, false, &rb)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, res.Records)
			held = append(held, tp.Partition(0).ReadRangeInto(off, off, &rb))
		}
		for k, recs := range held {
			off := int64(k / 2)
			want := readJoined(t, twin, off, 1<<20)
			if k%2 == 1 {
				want = twin.ReadRangeInto(off, off, nil).Join()
			}
			if !bytes.Equal(recs.Join(), want) {
				t.Fatalf("round %d: read %d at offset %d changed before Reset", round, k, off)
			}
		}
		rb.Reset()
	}
}
