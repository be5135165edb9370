package bench_test

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/storage"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeBatch returns one uncompressed magic-2 record batch of n records with
// the given value and no key or headers, as a non-idempotent producer sends
// it (producer ID -1), so the same bytes may be appended again and again.
func encodeBatch(n int, value []byte, timestampMs int64) []byte {
	var records []byte
	for i := 0; i < n; i++ {
		var body []byte
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, 0)        // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = binary.AppendVarint(body, -1)       // null key
		body = binary.AppendVarint(body, int64(len(value)))
		body = append(body, value...)
		body = binary.AppendVarint(body, 0) // no headers
		records = binary.AppendVarint(records, int64(len(body)))
		records = append(records, body...)
	}
	batch := kmsg.RecordBatch{
		Magic:           2,
		LastOffsetDelta: int32(n - 1),
		FirstTimestamp:  timestampMs,
		MaxTimestamp:    timestampMs,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(n),
		Records:         records,
	}
	raw := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))                   // length after the first 12 bytes
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli)) // CRC from attributes on
	return raw
}

// TestEncodeBatch checks that the hand-built batch is one the broker's
// storage accepts, so the allocation benchmarks measure the real path.
func TestEncodeBatch(t *testing.T) {
	raw := encodeBatch(10, benchValue, 1700000000000)
	h, err := storage.ParseBatch(raw)
	if err != nil {
		t.Fatalf("ParseBatch: %v", err)
	}
	if h.NumRecords != 10 || h.LastOffsetDelta != 9 || h.ProducerID != -1 {
		t.Fatalf("header %+v: want 10 records, last delta 9, producer -1", h)
	}
}
