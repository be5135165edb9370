package durable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/sharebroker/sharebroker/internal/batchtest"
	"github.com/sharebroker/sharebroker/storage"
)

// FuzzScanSegment feeds arbitrary bytes to the segment reader, read in
// blocks of any size (its corpus holds a real segment, testdata/datadir's,
// and damaged copies). Whatever the input: no panic; the valid prefix is whole batches that ParseBatch
// accepts, tiling it exactly; a clean scan of that prefix finds the same
// batches and nothing torn; and an error is only ever ErrCorrupt.
func FuzzScanSegment(f *testing.F) {
	b1 := batchtest.Plain(2).Build()
	b2 := batchtest.Idempotent(3, 0, 0, 4).Build()
	two := append(append([]byte(nil), b1...), b2...)
	f.Add(two, true, uint16(0))
	f.Add(two, true, uint16(70)) // the second batch crosses a block
	f.Add(two[:len(two)-5], true, uint16(5))
	f.Add(two[:len(two)-5], false, uint16(0))
	f.Add(append(append([]byte(nil), two...), make([]byte, 100)...), true, uint16(30))
	bad := append([]byte(nil), two...)
	bad[len(b1)+30] ^= 1
	f.Add(bad, true, uint16(0))
	f.Add([]byte{}, true, uint16(0))
	f.Add(make([]byte, 11), true, uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, last bool, block uint16) {
		// Small blocks make batches cross them; 0 is recovery's size.
		blockSize := int(block)
		if blockSize == 0 {
			blockSize = blockBytes
		}
		var tiles []int64
		var covered, runBytes int64
		base := int64(0)
		if len(data) >= 8 {
			base = int64(binary.BigEndian.Uint64(data))
		}
		scan := func(data []byte, last bool, block int) segmentScan {
			return segmentScan{r: bytes.NewReader(data), size: int64(len(data)), name: "fuzz", base: base, last: last, block: block}
		}
		var next int64 = base
		valid, err := scan(data, last, blockSize).scan(func(batch []byte, pos int64) error {
			if pos != covered {
				t.Fatalf("batch at %d, previous ended at %d", pos, covered)
			}
			if _, err := storage.ParseBatch(batch); err != nil {
				t.Fatalf("handed an invalid batch: %v", err)
			}
			h, _ := storage.ParseBatch(batch)
			next = h.BaseOffset + int64(h.LastOffsetDelta) + 1
			tiles = append(tiles, pos)
			covered += int64(len(batch))
			return nil
		}, func(block []byte) error {
			runBytes += int64(len(block))
			return nil
		})
		nop := func([]byte, int64) error { return nil }
		whole, wholeErr := scan(data, last, blockBytes).scan(nop, func([]byte) error { return nil })
		if whole != valid || (wholeErr == nil) != (err == nil) {
			t.Fatalf("block size %d: valid %d (%v); in one block: %d (%v)", blockSize, valid, err, whole, wholeErr)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if valid != covered || valid != runBytes || valid > int64(len(data)) {
			t.Fatalf("valid %d, batches cover %d and runs %d of %d", valid, covered, runBytes, len(data))
		}
		if valid < int64(len(data)) && !last {
			t.Fatalf("a torn tail accepted in a segment that is not the last")
		}
		var again []int64
		// no-silent-loss: no whole valid batch that could follow the
		// last one starts in what was dropped (checked here position by
		// position, apart from the scan's own search).
		for q := valid + 1; q+batchMinBytes <= int64(len(data)); q++ {
			rest := data[q:]
			length := int64(int32(binary.BigEndian.Uint32(rest[8:]))) + batchPrefixBytes
			if length < batchMinBytes || length > int64(len(rest)) {
				continue
			}
			if h, err := storage.ParseBatch(rest[:length]); err == nil && h.BaseOffset >= next && h.BaseOffset <= next+int64(len(data)) {
				t.Fatalf("the torn tail from %d dropped a whole batch at %d (offset %d)", valid, q, h.BaseOffset)
			}
		}
		v2, err := scan(data[:valid], false, blockBytes).scan(func(_ []byte, pos int64) error {
			again = append(again, pos)
			return nil
		}, func([]byte) error { return nil })
		if err != nil || v2 != valid || len(again) != len(tiles) {
			t.Fatalf("rescan of the valid prefix: %d/%d batches, %d bytes, %v", len(again), len(tiles), v2, err)
		}
	})
}
