package storage

import (
	"errors"
	"slices"
	"testing"
)

// threeRecordBatches appends n batches of three records each: offsets
// [0-2], [3-5], …
func threeRecordBatches(t *testing.T, p *Partition, n int) {
	t.Helper()
	for i := range n {
		raw := batchSpec{Stamps: []int64{int64(i), int64(i), int64(i)}, ValueBytes: 100}.build(t)
		if _, err := p.Append(raw, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBatchesDescribesProducerBatches(t *testing.T) {
	p := newPartition("t", 0)
	threeRecordBatches(t, p, 4) // [0-2] [3-5] [6-8] [9-11]
	bases := func(bs []BatchInfo) []int64 {
		var out []int64
		for _, b := range bs {
			out = append(out, b.BaseOffset)
		}
		return out
	}
	got, offs, err := p.Batches(4, 1<<62, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(bases(got), []int64{3, 6, 9}) || got[0].LastOffset != 5 || offs.HighWatermark != 12 {
		t.Fatalf("from 4: %+v, hw %d", got, offs.HighWatermark)
	}
	if got[0].Control || got[0].Transactional || got[0].Bytes <= 0 {
		t.Fatalf("flags of a plain batch: %+v", got[0])
	}
	// The end offset stops before a batch that starts at or after it.
	if got, _, _ = p.Batches(0, 6, 1<<20); !slices.Equal(bases(got), []int64{0, 3}) {
		t.Fatalf("up to 6: %v", bases(got))
	}
	// A byte budget smaller than one batch still returns the first.
	if got, _, _ = p.Batches(0, 1<<62, 1); !slices.Equal(bases(got), []int64{0}) {
		t.Fatalf("1-byte budget: %v", bases(got))
	}
	if got, _, _ = p.Batches(12, 1<<62, 1<<20); len(got) != 0 {
		t.Fatalf("at the high watermark: %v", got)
	}
	if _, _, err = p.Batches(13, 1<<62, 1<<20); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("past the high watermark: %v", err)
	}
}

func TestReadRangeCoversExactlyTheAcquiredOffsets(t *testing.T) {
	p := newPartition("t", 0)
	threeRecordBatches(t, p, 4)
	cases := []struct {
		first, last int64
		want        []int64
	}{
		{4, 4, []int64{3}},
		{4, 6, []int64{3, 6}},
		{0, 11, []int64{0, 3, 6, 9}},
		{9, 20, []int64{9}},
		{12, 20, nil},
	}
	for _, tc := range cases {
		got := p.ReadRangeInto(tc.first, tc.last, nil).Join()
		if offs := baseOffsets(t, got); !slices.Equal(offs, tc.want) {
			t.Errorf("ReadRangeInto(%d, %d) = batches %v, want %v", tc.first, tc.last, offs, tc.want)
		}
	}
	// Below the log start nothing is returned for the deleted batches.
	if _, err := p.DeleteRecordsBefore(6); err != nil {
		t.Fatal(err)
	}
	if offs := baseOffsets(t, p.ReadRangeInto(0, 7, nil).Join()); !slices.Equal(offs, []int64{6}) {
		t.Errorf("after DeleteRecords(6): %v", offs)
	}
}

// share-fetch-min-bytes: BytesFrom counts whole stored batches from the
// one holding offset, up to the end offset, and stops once it has enough.
func TestBytesFromCountsBatchesToTheEnd(t *testing.T) {
	p := newPartition("t", 0)
	threeRecordBatches(t, p, 4) // [0-2] [3-5] [6-8] [9-11]
	one := int64(p.batches[0].size)
	for _, c := range []struct {
		name                       string
		offset, end, atLeast, want int64
	}{
		{"all", 0, 12, 1 << 30, 4 * one},
		{"from inside a batch", 4, 12, 1 << 30, 3 * one},
		{"up to the end offset", 0, 6, 1 << 30, 2 * one},
		{"stops once enough", 0, 12, one + 1, 2 * one},
		{"at the high watermark", 12, 12, 1 << 30, 0},
		{"below the log start", -1, 12, 1 << 30, 0},
	} {
		if got := p.BytesFrom(c.offset, c.end, c.atLeast); got != c.want {
			t.Errorf("%s: %d bytes, want %d", c.name, got, c.want)
		}
	}
}
