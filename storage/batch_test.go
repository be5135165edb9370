package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// batchSpec describes a magic-2 record batch for tests. The zero value
// plus Stamps is a plain batch without a producer.
type batchSpec struct {
	// Stamps holds one timestamp per record; BaseTimestamp is Stamps[0]
	// and MaxTimestamp their maximum unless MaxTs is set.
	Stamps        []int64
	MaxTs         int64
	ProducerID    int64 // 0 is taken as "none" (-1 on the wire) unless Idempotent
	Idempotent    bool
	Epoch         int16
	BaseSeq       int32
	Codec         int8
	XerialSnappy  bool // frame snappy as the Java client does
	LogAppendTime bool
	ValueBytes    int // padding per record value
}

// build encodes the batch with a correct CRC and base offset 0.
func (s batchSpec) build(t testing.TB) []byte {
	t.Helper()
	var records []byte
	maxTs := s.Stamps[0]
	for i, ts := range s.Stamps {
		maxTs = max(maxTs, ts)
		var body []byte
		body = append(body, 0) // attributes
		body = binary.AppendVarint(body, ts-s.Stamps[0])
		body = binary.AppendVarint(body, int64(i))
		body = binary.AppendVarint(body, -1) // null key
		value := bytes.Repeat([]byte{byte('a' + i%26)}, s.ValueBytes+1)
		body = binary.AppendVarint(body, int64(len(value)))
		body = append(body, value...)
		body = binary.AppendVarint(body, 0) // no headers
		records = binary.AppendVarint(records, int64(len(body)))
		records = append(records, body...)
	}
	if s.MaxTs != 0 {
		maxTs = s.MaxTs
	}
	records = compressForTest(t, s.Codec, s.XerialSnappy, records)

	attrs := uint16(s.Codec)
	if s.LogAppendTime {
		attrs |= attrLogAppendTime
	}
	pid, epoch, seq := int64(-1), int16(-1), int32(-1)
	if s.Idempotent {
		pid, epoch, seq = s.ProducerID, s.Epoch, s.BaseSeq
	}
	b := make([]byte, batchHeaderBytes, batchHeaderBytes+len(records))
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(batchHeaderBytes-batchLengthOverhead+len(records)))
	b[offMagic] = 2
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(len(s.Stamps)-1))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(s.Stamps[0]))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(maxTs))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(epoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(seq))
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(len(s.Stamps)))
	b = append(b, records...)
	fixCRC(b)
	return b
}

func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
}

func compressForTest(t testing.TB, codec int8, xerial bool, in []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch codec {
	case codecNone:
		return in
	case codecGzip:
		w := gzip.NewWriter(&buf)
		w.Write(in)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case codecSnappy:
		if !xerial {
			return s2.EncodeSnappy(nil, in)
		}
		// Two blocks, to exercise the block loop.
		buf.Write(xerialMagic)
		buf.Write([]byte{0, 0, 0, 1, 0, 0, 0, 1})
		half := len(in) / 2
		for _, part := range [][]byte{in[:half], in[half:]} {
			enc := s2.EncodeSnappy(nil, part)
			buf.Write(binary.BigEndian.AppendUint32(nil, uint32(len(enc))))
			buf.Write(enc)
		}
	case codecLZ4:
		w := lz4.NewWriter(&buf)
		w.Write(in)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case codecZstd:
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		return enc.EncodeAll(in, nil)
	default:
		t.Fatalf("codec %d", codec)
	}
	return buf.Bytes()
}

func TestParseBatch(t *testing.T) {
	good := batchSpec{Stamps: []int64{100, 101, 102}}.build(t)
	tests := []struct {
		name    string
		mutate  func([]byte) []byte
		wantErr error
	}{
		{name: "valid", mutate: func(b []byte) []byte { return b }},
		{name: "bad CRC", mutate: func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, wantErr: ErrCorruptMessage},
		{name: "CRC field wrong", mutate: func(b []byte) []byte { b[offCRC] ^= 0xff; return b }, wantErr: ErrCorruptMessage},
		{name: "shorter than a header", mutate: func(b []byte) []byte { return b[:batchHeaderBytes-1] }, wantErr: ErrCorruptMessage},
		{name: "empty", mutate: func(b []byte) []byte { return nil }, wantErr: ErrCorruptMessage},
		{name: "truncated", mutate: func(b []byte) []byte { return b[:len(b)-2] }, wantErr: ErrCorruptMessage},
		{name: "length says more", mutate: func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offBatchLength:], binary.BigEndian.Uint32(b[offBatchLength:])+1)
			return b
		}, wantErr: ErrCorruptMessage},
		{name: "negative length", mutate: func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offBatchLength:], 0xfffffff0)
			return b
		}, wantErr: ErrInvalidRecord},
		{name: "magic 1", mutate: func(b []byte) []byte { b[offMagic] = 1; return b }, wantErr: ErrInvalidRecord},
		{name: "magic 3", mutate: func(b []byte) []byte { b[offMagic] = 3; return b }, wantErr: ErrInvalidRecord},
		{name: "count above delta", mutate: func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offRecordCount:], 4)
			fixCRC(b)
			return b
		}, wantErr: ErrInvalidRecord},
		{name: "delta above count", mutate: func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 3)
			fixCRC(b)
			return b
		}, wantErr: ErrInvalidRecord},
		{name: "zero records", mutate: func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offRecordCount:], 0)
			binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 0xffffffff)
			fixCRC(b)
			return b
		}, wantErr: ErrInvalidRecord},
		{name: "two batches", mutate: func(b []byte) []byte { return append(b, b...) }, wantErr: ErrInvalidRecord},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ParseBatch(tc.mutate(bytes.Clone(good)))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err == nil && (h.NumRecords != 3 || h.LastOffsetDelta != 2 || h.BaseTimestamp != 100 || h.MaxTimestamp != 102 ||
				h.ProducerID != -1 || h.Length != int32(len(good))) {
				t.Fatalf("header %+v", h)
			}
		})
	}
}

func TestBatchHeaderAccessors(t *testing.T) {
	b := batchSpec{Stamps: []int64{1, 2}, Codec: codecZstd, Idempotent: true, ProducerID: 7, Epoch: 3, BaseSeq: 0x7fffffff}.build(t)
	h, err := ParseBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Compression() != codecZstd || h.Transactional() || h.Control() {
		t.Fatalf("attributes %x", h.Attributes)
	}
	if h.ProducerID != 7 || h.ProducerEpoch != 3 {
		t.Fatalf("producer %d/%d", h.ProducerID, h.ProducerEpoch)
	}
	if got := h.LastSequence(); got != 0 {
		t.Fatalf("last sequence of a batch starting at MaxInt32 with 2 records = %d, want 0", got)
	}
}
