package storage

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"
)

// appendN appends n one-record batches of valueBytes each, stamped ts0,
// ts0+1, ..., and returns each stored batch's size.
func appendN(t *testing.T, p *Partition, n, valueBytes int, ts0 int64) []int {
	t.Helper()
	var sizes []int
	for i := range n {
		raw := batchSpec{Stamps: []int64{ts0 + int64(i)}, ValueBytes: valueBytes}.build(t)
		if _, err := p.Append(raw, AppendOptions{}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		sizes = append(sizes, len(raw))
	}
	return sizes
}

// baseOffsets lists the base offsets of the batches in records.
func baseOffsets(t *testing.T, records []byte) []int64 {
	t.Helper()
	var offs []int64
	for len(records) > 0 {
		if len(records) < batchHeaderBytes {
			t.Fatalf("%d trailing bytes", len(records))
		}
		h := readBatchHeader(records)
		offs = append(offs, h.BaseOffset)
		records = records[h.Length:]
	}
	return offs
}

func TestRead(t *testing.T) {
	p := newPartition("t", 0)
	sizes := appendN(t, p, 5, 10, 0) // equal sizes
	size := int32(sizes[0])
	tests := []struct {
		name       string
		offset     int64
		maxBytes   int32
		includeOne bool
		want       []int64
		wantErr    error
	}{
		{name: "everything", offset: 0, maxBytes: 1 << 20, want: []int64{0, 1, 2, 3, 4}},
		{name: "from the middle", offset: 3, maxBytes: 1 << 20, want: []int64{3, 4}},
		{name: "maxBytes cuts at a batch", offset: 0, maxBytes: 2*size + size/2, want: []int64{0, 1}},
		{name: "maxBytes exactly two", offset: 1, maxBytes: 2 * size, want: []int64{1, 2}},
		{name: "first batch too big, includeOne", offset: 2, maxBytes: size - 1, includeOne: true, want: []int64{2}},
		{name: "first batch too big", offset: 2, maxBytes: size - 1, want: nil},
		{name: "zero maxBytes, includeOne", offset: 0, maxBytes: 0, includeOne: true, want: []int64{0}},
		{name: "at the high watermark", offset: 5, maxBytes: 1 << 20, want: nil},
		{name: "past the high watermark", offset: 6, maxBytes: 1 << 20, wantErr: ErrOffsetOutOfRange},
		{name: "negative", offset: -1, maxBytes: 1 << 20, wantErr: ErrOffsetOutOfRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := p.Read(tc.offset, tc.maxBytes, tc.includeOne)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if res.HighWatermark != 5 || res.LogStart != 0 {
				t.Fatalf("offsets %+v", res.Offsets)
			}
			if got := baseOffsets(t, res.Records.Join()); !equalInt64s(got, tc.want) {
				t.Fatalf("batches %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReadMultiRecordBatch reads from inside a batch: the whole batch comes
// back, starting at its base offset, for the client to skip into.
func TestReadMultiRecordBatch(t *testing.T) {
	p := newPartition("t", 0)
	p.Append(batchSpec{Stamps: []int64{1, 2, 3}}.build(t), AppendOptions{})
	p.Append(batchSpec{Stamps: []int64{4, 5}}.build(t), AppendOptions{})
	res, err := p.Read(4, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := baseOffsets(t, res.Records.Join()); !equalInt64s(got, []int64{3}) {
		t.Fatalf("batches %v", got)
	}
	res, _ = p.Read(1, 1<<20, true)
	if got := baseOffsets(t, res.Records.Join()); !equalInt64s(got, []int64{0, 3}) {
		t.Fatalf("batches %v", got)
	}
}

// TestReadChunkBoundary fills more than one chunk: a read that crosses
// chunks returns every batch that fits in maxBytes, in order, with their
// base offsets, exactly as a read inside one chunk does.
func TestReadChunkBoundary(t *testing.T) {
	p := newPartition("t", 0)
	sizes := appendN(t, p, 40, 64<<10, 0) // ~64 KiB each
	if len(p.batches) != 40 || p.batches[0].chunk == p.batches[39].chunk {
		t.Fatalf("expected several chunks")
	}
	// One read with room for everything crosses every chunk boundary.
	res, err := p.Read(0, 100<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	if offs := baseOffsets(t, res.Records.Join()); len(offs) != 40 {
		t.Fatalf("a read with room for all 40 batches returned %d", len(offs))
	}
	// Reads of ~3 batches at a time cover the log in order.
	var got []int64
	next := int64(0)
	for reads := 0; next < 40; reads++ {
		if reads > 40 {
			t.Fatal("reads do not progress")
		}
		res, err := p.Read(next, 200<<10, true)
		if err != nil {
			t.Fatal(err)
		}
		offs := baseOffsets(t, res.Records.Join())
		if len(offs) == 0 {
			t.Fatalf("empty read at %d", next)
		}
		got = append(got, offs...)
		next = offs[len(offs)-1] + 1
	}
	for i, o := range got {
		if o != int64(i) {
			t.Fatalf("offsets %v", got)
		}
	}
	total := 0
	for _, s := range sizes {
		total += s
	}
	if p.Bytes() != int64(total) {
		t.Fatalf("Bytes() = %d, want %d", p.Bytes(), total)
	}
}

// TestReadAliasesAreStable holds a read result while more is appended: the
// bytes it holds must not change.
func TestReadAliasesAreStable(t *testing.T) {
	p := newPartition("t", 0)
	appendN(t, p, 3, 10, 0)
	res, _ := p.Read(0, 1<<20, true)
	held := slices.Concat(res.Records...)
	appendN(t, p, 200, 10<<10, 100) // grows and replaces the tail chunk
	if string(held) != string(res.Records.Join()) {
		t.Fatal("a held read changed under appends")
	}
}

func TestDeleteRecordsBefore(t *testing.T) {
	p := newPartition("t", 0)
	appendN(t, p, 3, 10, 0)
	p.Append(batchSpec{Stamps: []int64{3, 3, 3}}.build(t), AppendOptions{}) // offsets 3-5

	if ls, err := p.DeleteRecordsBefore(1); err != nil || ls != 1 {
		t.Fatalf("delete before 1: %d, %v", ls, err)
	}
	if p.Bytes() != p.bytesOfBatches() || len(p.batches) != 3 {
		t.Fatalf("after delete before 1: %d batches, %d bytes", len(p.batches), p.Bytes())
	}
	// Inside a batch: the log start moves, the batch stays.
	if ls, err := p.DeleteRecordsBefore(4); err != nil || ls != 4 || len(p.batches) != 1 {
		t.Fatalf("delete before 4: %d, %v, %d batches", ls, err, len(p.batches))
	}
	if _, err := p.Read(3, 1<<20, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the log start: %v", err)
	}
	// Backwards is a no-op.
	if ls, err := p.DeleteRecordsBefore(2); err != nil || ls != 4 {
		t.Fatalf("delete before 2: %d, %v", ls, err)
	}
	if _, err := p.DeleteRecordsBefore(7); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("delete past the high watermark: %v", err)
	}
	if _, err := p.DeleteRecordsBefore(-2); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("delete before -2: %v", err)
	}
	// -1 is the high watermark: everything goes.
	if ls, err := p.DeleteRecordsBefore(-1); err != nil || ls != 6 || len(p.batches) != 0 || p.Bytes() != 0 {
		t.Fatalf("delete before -1: %d, %v, %d batches, %d bytes", ls, err, len(p.batches), p.Bytes())
	}
	if off := p.Offsets(); off.LogStart != 6 || off.HighWatermark != 6 {
		t.Fatalf("offsets %+v", off)
	}
	// Appends continue at the high watermark.
	res, err := p.Append(batchSpec{Stamps: []int64{9}}.build(t), AppendOptions{})
	if err != nil || res.BaseOffset != 6 || res.LogStart != 6 {
		t.Fatalf("append after delete: %+v, %v", res, err)
	}
}

func (p *Partition) bytesOfBatches() int64 {
	var n int64
	for _, b := range p.batches {
		n += int64(b.size)
	}
	return n
}

func TestApplyRetention(t *testing.T) {
	tests := []struct {
		name           string
		retentionMs    int64
		retentionBytes int64 // in batches: every batch has the same size
		nowMs          int64
		wantStart      int64
	}{
		{name: "both off", retentionMs: -1, retentionBytes: -1, nowMs: 1e9, wantStart: 0},
		{name: "nothing old enough", retentionMs: 1000, retentionBytes: -1, nowMs: 1000 + 1000, wantStart: 0},
		{name: "oldest two expired", retentionMs: 1000, retentionBytes: -1, nowMs: 1001 + 1000 + 1, wantStart: 2},
		{name: "all expired", retentionMs: 0, retentionBytes: -1, nowMs: 1e9, wantStart: 4},
		{name: "bytes keep three", retentionMs: -1, retentionBytes: 3, wantStart: 1},
		{name: "bytes keep all", retentionMs: -1, retentionBytes: 4, wantStart: 0},
		{name: "time wins over bytes", retentionMs: 0, retentionBytes: 4, nowMs: 1e9, wantStart: 4},
		{name: "bytes keep none", retentionMs: -1, retentionBytes: 0, wantStart: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPartition("t", 0)
			sizes := appendN(t, p, 4, 100, 1000) // stamped 1000..1003
			retentionBytes := tc.retentionBytes
			if retentionBytes > 0 {
				retentionBytes *= int64(sizes[0])
			}
			p.ApplyRetention(tc.retentionMs, retentionBytes, tc.nowMs)
			if got := p.Offsets().LogStart; got != tc.wantStart {
				t.Fatalf("log start %d, want %d", got, tc.wantStart)
			}
			if p.Bytes() != p.bytesOfBatches() || int64(len(p.batches)) != 4-tc.wantStart {
				t.Fatalf("%d batches, %d bytes", len(p.batches), p.Bytes())
			}
			if got := p.Offsets().HighWatermark; got != 4 {
				t.Fatalf("high watermark %d", got)
			}
		})
	}
}

// TestApplyRetentionLogAppendTime expires by the stamped broker time, not
// the producer's timestamps.
func TestApplyRetentionLogAppendTime(t *testing.T) {
	p := newPartition("t", 0)
	raw := batchSpec{Stamps: []int64{1}}.build(t) // created at 1 ms
	if _, err := p.Append(raw, AppendOptions{LogAppendTime: true, NowMs: 50_000}); err != nil {
		t.Fatal(err)
	}
	p.ApplyRetention(10_000, -1, 55_000)
	if p.Offsets().LogStart != 0 {
		t.Fatal("a batch appended 5 s ago expired under a 10 s retention")
	}
	p.ApplyRetention(10_000, -1, 60_001)
	if p.Offsets().LogStart != 1 {
		t.Fatal("batch not expired 10 s after its append time")
	}
	stored := binary.BigEndian.Uint64(raw[offMaxTimestamp:])
	if stored != 1 {
		t.Fatal("Append modified the caller's bytes")
	}
}

func TestWatch(t *testing.T) {
	p := newPartition("t", 0)
	a, b := make(chan struct{}, 1), make(chan struct{}, 1)
	p.Watch(a)
	p.Watch(b)
	p.Unwatch(b)
	appendN(t, p, 1, 1, 0)
	select {
	case <-a:
	case <-time.After(5 * time.Second):
		t.Fatal("watcher not woken by an append")
	}
	select {
	case <-b:
		t.Fatal("unwatched channel woken")
	default:
	}
	// The registration was used up.
	appendN(t, p, 1, 1, 0)
	select {
	case <-a:
		t.Fatal("woken twice by one registration")
	default:
	}
	// A rejected batch and a duplicate do not wake.
	p.Watch(a)
	p.Append([]byte("garbage"), AppendOptions{})
	dup := idem(t, 0, 0, 1)
	p.Append(dup, AppendOptions{})
	<-a // the first idempotent append
	p.Watch(a)
	if res, err := p.Append(dup, AppendOptions{}); err != nil || !res.Duplicate {
		t.Fatalf("retry: %+v, %v", res, err)
	}
	select {
	case <-a:
		t.Fatal("woken by a duplicate")
	default:
	}
	// A full channel does not block the appender.
	full := make(chan struct{})
	p.Watch(full)
	appendN(t, p, 1, 1, 0)
	select {
	case <-a:
	default:
		t.Fatal("watcher not woken after a duplicate")
	}
}

func equalInt64s(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
