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
// their own offsets, as one piece of the log per chunk: nothing is copied.
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
		if res.Records.Len() != tc.want*size {
			t.Fatalf("Read(%d, %d): %d bytes, want %d batches of %d", tc.offset, tc.maxBytes, res.Records.Len(), tc.want, size)
		}
		checkPiecesAliasLog(t, p, tc.offset, tc.want, res.Records)
		joined := res.Records.Join()
		for i := range tc.want {
			h := readBatchHeader(joined[i*size:])
			if h.BaseOffset != tc.offset+int64(i) || h.Length != int32(size) {
				t.Fatalf("Read(%d, %d): batch %d has base offset %d length %d", tc.offset, tc.maxBytes, i, h.BaseOffset, h.Length)
			}
		}
	}
	if res, _ := p.Read(0, 10, false); res.Records.Len() != 0 {
		t.Fatalf("Read without includeOne returned %d bytes over the limit", res.Records.Len())
	}
}

// checkPiecesAliasLog fails unless records, a read of n one-record batches
// from offset, is one piece per chunk those batches lie in, each piece the
// log's own bytes from the first of its batches to the last.
func checkPiecesAliasLog(t *testing.T, p *Partition, offset int64, n int, records Records) {
	t.Helper()
	var want []batchMeta // the first batch of the read in each chunk
	lens := map[*chunk]int32{}
	for _, b := range p.batches[offset : offset+int64(n)] {
		if len(want) == 0 || want[len(want)-1].chunk != b.chunk {
			want = append(want, b)
		}
		lens[b.chunk] += b.size
	}
	if len(records) != len(want) {
		t.Fatalf("read from %d: %d pieces, want one per chunk crossed (%d)", offset, len(records), len(want))
	}
	for i, b := range want {
		piece := records[i]
		if &piece[0] != &b.chunk.buf[b.pos] || int32(len(piece)) != lens[b.chunk] {
			t.Fatalf("read from %d: piece %d is not the log's bytes of its chunk", offset, i)
		}
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
