// Package batchtest builds magic-2 record batches for tests: the bytes a
// producer sends, with a correct length and CRC unless asked otherwise. It
// is for tests only; one builder for every package's tests.
package batchtest

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Spec describes a batch. Start from Plain or Idempotent and change fields.
type Spec struct {
	// Records is the number of records, all stamped TimestampMs, unless
	// Stamps is set: then one record per stamp.
	Records     int
	TimestampMs int64
	Stamps      []int64
	// ValueBytes is the size of each record's value.
	ValueBytes int

	ProducerID    int64 // -1 for a producer without idempotence
	ProducerEpoch int16
	BaseSequence  int32
	// Transactional sets the transactional attribute bit.
	Transactional bool

	// Codec is the compression attribute (1 gzip, 2 snappy, 3 lz4, 4 zstd);
	// Compress must then turn the encoded records into that codec's bytes.
	Codec    int8
	Compress func([]byte) []byte
	// CorruptCRC makes the CRC wrong by one bit.
	CorruptCRC bool
}

// Plain is n records from a producer without idempotence.
func Plain(n int) Spec {
	return Spec{Records: n, TimestampMs: 1_600_000_000_000, ValueBytes: 8, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
}

// Idempotent is n records from producer id at epoch, starting at sequence seq.
func Idempotent(id int64, epoch int16, seq int32, n int) Spec {
	s := Plain(n)
	s.ProducerID, s.ProducerEpoch, s.BaseSequence = id, epoch, seq
	return s
}

// Transactional is n records from transactional producer id at epoch,
// starting at sequence seq.
func Transactional(id int64, epoch int16, seq int32, n int) Spec {
	s := Idempotent(id, epoch, seq, n)
	s.Transactional = true
	return s
}

// Stamped is one record per timestamp, from a producer without idempotence.
func Stamped(stamps ...int64) Spec {
	s := Plain(len(stamps))
	s.Stamps, s.TimestampMs = stamps, stamps[0]
	return s
}

// Build encodes the batch.
func (s Spec) Build() []byte {
	stamps := s.Stamps
	if stamps == nil {
		stamps = make([]int64, s.Records)
		for i := range stamps {
			stamps[i] = s.TimestampMs
		}
	}
	base, maxTs := stamps[0], stamps[0]
	for _, ts := range stamps {
		maxTs = max(maxTs, ts)
	}
	var records []byte
	for i, ts := range stamps {
		r := kmsg.NewRecord()
		r.TimestampDelta64 = ts - base
		r.OffsetDelta = int32(i)
		r.Key = fmt.Appendf(nil, "k%d", i)
		r.Value = make([]byte, s.ValueBytes)
		for j := range r.Value {
			r.Value[j] = byte('a' + (i+j)%26)
		}
		r.Headers = []kmsg.Header{{Key: "h", Value: []byte("v")}}
		// Length counts what follows it: encode once with a zero length
		// (one varint byte) to measure, then for real.
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		records = r.AppendTo(records)
	}
	if s.Compress != nil {
		records = s.Compress(records)
	}
	rb := kmsg.NewRecordBatch()
	rb.Magic = 2
	rb.Attributes = int16(s.Codec)
	if s.Transactional {
		rb.Attributes |= 0x10
	}
	rb.LastOffsetDelta = int32(len(stamps) - 1)
	rb.FirstTimestamp, rb.MaxTimestamp = base, maxTs
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = s.ProducerID, s.ProducerEpoch, s.BaseSequence
	rb.NumRecords = int32(len(stamps))
	rb.Records = records
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	crc := crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli))
	if s.CorruptCRC {
		crc ^= 1
	}
	binary.BigEndian.PutUint32(b[17:], crc)
	return b
}
