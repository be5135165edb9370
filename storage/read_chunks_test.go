package storage

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"
)

// testBatch builds an uncompressed magic-2 batch of one record whose value
// is valueBytes long. Only the header fields Append reads matter here.
func testBatch(valueBytes int) []byte {
	rec := []byte{0}                                  // attributes
	rec = binary.AppendVarint(rec, 0)                 // timestamp delta
	rec = binary.AppendVarint(rec, 0)                 // offset delta
	rec = binary.AppendVarint(rec, -1)                // null key
	rec = binary.AppendVarint(rec, int64(valueBytes)) // value length
	rec = append(rec, bytes.Repeat([]byte{'v'}, valueBytes)...)
	rec = binary.AppendVarint(rec, 0) // no headers
	b := make([]byte, batchHeaderBytes)
	b[offMagic] = 2
	binary.BigEndian.PutUint64(b[offProducerID:], ^uint64(0)) // -1
	binary.BigEndian.PutUint16(b[offProducerEpoch:], 0xffff)
	binary.BigEndian.PutUint32(b[offBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[offRecordCount:], 1)
	b = binary.AppendVarint(b, int64(len(rec)))
	b = append(b, rec...)
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-batchLengthOverhead))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

// TestReadAcrossChunks checks that a read returns every batch its limit
// allows even when they lie in different chunks, back to back and with
// their own offsets.
func TestReadAcrossChunks(t *testing.T) {
	p := newPartition("t", 0)
	const n = 30
	size := 0
	for range n {
		b := testBatch(100_000)
		size = len(b)
		if _, err := p.Append(b, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if first, last := p.batches[0].chunk, p.batches[n-1].chunk; first == last {
		t.Fatal("test setup: all batches in one chunk")
	}
	for _, tc := range []struct {
		offset   int64
		maxBytes int32
		want     int
	}{
		{0, 1 << 30, n},
		{0, int32(size*15 + size/2), 15},
		{7, int32(size * 20), 20},
		{29, 1 << 30, 1},
		{0, 10, 1}, // includeOne
	} {
		res, err := p.Read(tc.offset, tc.maxBytes, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Records) != tc.want*size {
			t.Fatalf("Read(%d, %d): %d bytes, want %d batches of %d", tc.offset, tc.maxBytes, len(res.Records), tc.want, size)
		}
		for i := range tc.want {
			h := readBatchHeader(res.Records[i*size:])
			if h.BaseOffset != tc.offset+int64(i) || h.Length != int32(size) {
				t.Fatalf("Read(%d, %d): batch %d has base offset %d length %d", tc.offset, tc.maxBytes, i, h.BaseOffset, h.Length)
			}
		}
	}
	if res, _ := p.Read(0, 10, false); len(res.Records) != 0 {
		t.Fatalf("Read without includeOne returned %d bytes over the limit", len(res.Records))
	}
}

// TestReadWhileAppending reads the tail chunk while another goroutine
// appends to it: a read must take its slice of the chunk before releasing
// the lock, because appends grow the chunk's slice header under it. Run
// with -race; it found the read of the header after the unlock.
func TestReadWhileAppending(t *testing.T) {
	p := newPartition("t", 0)
	if _, err := p.Append(testBatch(10), AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			if _, err := p.Append(testBatch(10), AppendOptions{}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 200 {
		if _, err := p.Read(0, 1<<20, true); err != nil {
			t.Fatal(err)
		}
	}
	<-done
}
