package storage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Byte positions of the fields of a magic-2 record batch header. The CRC
// covers everything from attributes to the end of the batch, so the base
// offset and partition leader epoch can be rewritten without recomputing it.
const (
	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57
	batchHeaderBytes   = 61

	// batchLengthOverhead is what batchLength does not count: the base
	// offset and the length field itself.
	batchLengthOverhead = 12
)

// Attribute bits of a record batch.
const (
	attrCompressionMask = 0x07
	attrLogAppendTime   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the decoded fixed header of a magic-2 record batch.
type BatchHeader struct {
	BaseOffset      int64
	Length          int32 // whole batch in bytes, including the 12-byte prefix
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	NumRecords      int32
}

// Transactional reports whether the batch is part of a transaction.
func (h *BatchHeader) Transactional() bool { return h.Attributes&attrTransactional != 0 }

// Control reports whether the batch holds a control record (commit or abort marker).
func (h *BatchHeader) Control() bool { return h.Attributes&attrControl != 0 }

// Compression returns the codec ID: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
func (h *BatchHeader) Compression() int8 { return int8(h.Attributes & attrCompressionMask) }

// LastSequence returns the sequence of the batch's last record, wrapping at
// int32 as Kafka's producers do.
func (h *BatchHeader) LastSequence() int32 {
	return int32(int64(h.BaseSequence)+int64(h.LastOffsetDelta)) & 0x7fffffff
}

// ParseBatch validates one produced record batch: it must be exactly one
// magic-2 batch filling b, its CRC must match, and its record count must
// agree with its offset delta. The error wraps ErrCorruptMessage or
// ErrInvalidRecord.
func ParseBatch(b []byte) (BatchHeader, error) {
	var h BatchHeader
	if len(b) < batchHeaderBytes {
		return h, fmt.Errorf("%w: %d bytes is shorter than a batch header", ErrCorruptMessage, len(b))
	}
	if magic := int8(b[offMagic]); magic != 2 {
		return h, fmt.Errorf("%w: record batch magic %d, only magic 2 is accepted", ErrInvalidRecord, magic)
	}
	length := int64(int32(binary.BigEndian.Uint32(b[offBatchLength:]))) + batchLengthOverhead
	if length != int64(len(b)) {
		if length < int64(len(b)) {
			return h, fmt.Errorf("%w: a produce request must carry exactly one record batch per partition", ErrInvalidRecord)
		}
		return h, fmt.Errorf("%w: batch length %d, %d bytes sent", ErrCorruptMessage, length, len(b))
	}
	if want, got := binary.BigEndian.Uint32(b[offCRC:]), crc32.Checksum(b[offAttributes:], castagnoli); want != got {
		return h, fmt.Errorf("%w: CRC mismatch (batch says %08x, computed %08x)", ErrCorruptMessage, want, got)
	}
	h = readBatchHeader(b)
	if h.NumRecords <= 0 || h.LastOffsetDelta != h.NumRecords-1 {
		return h, fmt.Errorf("%w: %d records but last offset delta %d", ErrInvalidRecord, h.NumRecords, h.LastOffsetDelta)
	}
	return h, nil
}

func readBatchHeader(b []byte) BatchHeader {
	return BatchHeader{
		BaseOffset:      int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		Length:          int32(binary.BigEndian.Uint32(b[offBatchLength:])) + batchLengthOverhead,
		Attributes:      int16(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta: int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:   int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:    int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		ProducerID:      int64(binary.BigEndian.Uint64(b[offProducerID:])),
		ProducerEpoch:   int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		BaseSequence:    int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		NumRecords:      int32(binary.BigEndian.Uint32(b[offRecordCount:])),
	}
}

// stampLogAppendTime marks a stored batch as using log-append time: the
// timestamp-type attribute is set, the max timestamp becomes now, and the CRC
// is recomputed. Consumers then read every record's timestamp as now.
func stampLogAppendTime(b []byte, nowMs int64) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | attrLogAppendTime
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(nowMs))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
}
