package storage

// Timestamp lookups for ListOffsets. A batch header only gives the batch's
// largest timestamp; Kafka answers a timestamp query with the exact record,
// so we open the batch (decompressing it if needed) and walk its records.
// Only the batches a query cannot rule out from their header are opened.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// maxDecompressedBytes bounds what one batch may inflate to while we look
// for a timestamp. A batch past it (a compression bomb, or a real batch far
// larger than anything a client sends) is answered at batch granularity.
const maxDecompressedBytes = 64 << 20

// Compression codec IDs in the batch attributes.
const (
	codecNone   = 0
	codecGzip   = 1
	codecSnappy = 2
	codecLZ4    = 3
	codecZstd   = 4
)

var errRecords = errors.New("cannot read the records of a batch")

// recordStamp is one record's absolute offset and timestamp.
type recordStamp struct {
	offset    int64
	timestamp int64
}

// batchView is a stored batch captured under the partition lock, to be
// decoded after it is released: the bytes are immutable once published.
type batchView struct {
	base, last int64
	maxTs      int64
	raw        []byte
	// file and pos locate the batch when its partition's log lives in
	// files (raw is nil then); bytes reads it.
	file FileLog
	pos  int64
	size int32
}

// OffsetForTimestamp returns the first offset at or above the log start
// whose record is stamped at or after ts, with that record's timestamp;
// found is false when no record is that new. For a log-append-time batch
// every record carries the batch's time. A batch whose records cannot be
// read answers with its first offset and its max timestamp.
func (p *Partition) OffsetForTimestamp(ts int64) (offset, timestamp int64, found bool) {
	p.mu.RLock()
	logStart := p.logStart
	var candidates []batchView
	for _, b := range p.batches {
		if b.maxTimestamp >= ts && b.lastOffset >= logStart {
			candidates = append(candidates, p.viewLocked(b))
		}
	}
	p.mu.RUnlock()

	for _, b := range candidates {
		raw, err := b.bytes()
		if err != nil {
			return max(b.base, logStart), b.maxTs, true
		}
		stamps, err := recordStamps(raw)
		if err != nil {
			return max(b.base, logStart), b.maxTs, true
		}
		for _, r := range stamps {
			if r.offset >= logStart && r.timestamp >= ts {
				return r.offset, r.timestamp, true
			}
		}
	}
	return 0, 0, false
}

// MaxTimestamp returns the offset and timestamp of the record with the
// largest timestamp at or above the log start, the first such record on
// ties (as Kafka does since KAFKA-16310); found is false for an empty log.
func (p *Partition) MaxTimestamp() (offset, timestamp int64, found bool) {
	p.mu.RLock()
	logStart := p.logStart
	var best []batchView // batches whose header ties for the largest timestamp
	var first *batchView // a batch straddling the log start: its header may count records below it
	bestTs := int64(-1)
	for _, b := range p.batches {
		if b.lastOffset < logStart {
			continue
		}
		if b.baseOffset < logStart {
			v := p.viewLocked(b)
			first = &v
			continue
		}
		switch {
		case b.maxTimestamp > bestTs:
			bestTs, best = b.maxTimestamp, append(best[:0], p.viewLocked(b))
		case b.maxTimestamp == bestTs:
			best = append(best, p.viewLocked(b))
		}
	}
	p.mu.RUnlock()

	timestamp = -1
	consider := func(b batchView) {
		raw, err := b.bytes()
		var stamps []recordStamp
		if err == nil {
			stamps, err = recordStamps(raw)
		}
		if err != nil {
			if b.maxTs > timestamp {
				offset, timestamp, found = max(b.base, logStart), b.maxTs, true
			}
			return
		}
		for _, r := range stamps {
			if r.offset >= logStart && r.timestamp > timestamp {
				offset, timestamp, found = r.offset, r.timestamp, true
			}
		}
	}
	if first != nil {
		consider(*first)
	}
	for _, b := range best {
		// Later batches only win with a strictly larger timestamp, so
		// once one is found among the tied batches the rest cannot beat it.
		if found && timestamp >= bestTs {
			break
		}
		consider(b)
	}
	return offset, timestamp, found
}

func (p *Partition) viewLocked(b batchMeta) batchView {
	v := batchView{base: b.baseOffset, last: b.lastOffset, maxTs: b.maxTimestamp}
	if b.chunk == nil {
		v.file, v.pos, v.size = p.file, b.pos, b.size
		return v
	}
	v.raw = b.chunk.buf[b.pos : b.pos+int64(b.size)]
	return v
}

// recordStamps returns the offset and timestamp of every record in a stored
// batch, in order.
func recordStamps(batch []byte) ([]recordStamp, error) {
	if len(batch) < batchHeaderBytes {
		return nil, fmt.Errorf("%w: %d bytes", errRecords, len(batch))
	}
	h := readBatchHeader(batch)
	if h.NumRecords < 0 || int64(h.NumRecords) > int64(len(batch)) {
		return nil, fmt.Errorf("%w: %d records", errRecords, h.NumRecords)
	}
	records, err := decompress(h.Compression(), batch[batchHeaderBytes:])
	if err != nil {
		return nil, err
	}
	logAppend := h.Attributes&attrLogAppendTime != 0
	stamps := make([]recordStamp, 0, min(int(h.NumRecords), len(records)/minRecordBytes))
	for i := int32(0); i < h.NumRecords; i++ {
		length, n := binary.Varint(records)
		if n <= 0 || length < 0 || length > int64(len(records)-n) {
			return nil, fmt.Errorf("%w: record %d has a bad length", errRecords, i)
		}
		rec := records[n : n+int(length)]
		records = records[n+int(length):]
		if len(rec) < 1 {
			return nil, fmt.Errorf("%w: record %d is empty", errRecords, i)
		}
		tsDelta, n := binary.Varint(rec[1:]) // after the attributes byte
		if n <= 0 {
			return nil, fmt.Errorf("%w: record %d has a bad timestamp delta", errRecords, i)
		}
		offDelta, m := binary.Varint(rec[1+n:])
		if m <= 0 {
			return nil, fmt.Errorf("%w: record %d has a bad offset delta", errRecords, i)
		}
		s := recordStamp{offset: h.BaseOffset + offDelta, timestamp: h.BaseTimestamp + tsDelta}
		if logAppend {
			s.timestamp = h.MaxTimestamp
		}
		stamps = append(stamps, s)
	}
	return stamps, nil
}

// xerialMagic starts a snappy payload in the framing of the Java
// snappy-java library, which Kafka's Java producer uses: the magic, two
// 4-byte version numbers, then blocks each prefixed by a 4-byte length.
// Other clients send one raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderBytes = 16

var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxDecompressedBytes))
	if err != nil {
		panic(fmt.Sprintf("zstd decoder with static options: %v", err))
	}
	return d
})

// decompress returns the records section of a batch in the clear.
func decompress(codec int8, src []byte) ([]byte, error) {
	switch codec {
	case codecNone:
		return src, nil
	case codecGzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", errRecords, err)
		}
		return readLimited(zr, "gzip")
	case codecSnappy:
		if !bytes.HasPrefix(src, xerialMagic) {
			return snappyBlock(nil, src)
		}
		if len(src) < xerialHeaderBytes {
			return nil, fmt.Errorf("%w: snappy: short xerial header", errRecords)
		}
		var out []byte
		for rest := src[xerialHeaderBytes:]; len(rest) > 0; {
			if len(rest) < 4 {
				return nil, fmt.Errorf("%w: snappy: short xerial block length", errRecords)
			}
			n := binary.BigEndian.Uint32(rest)
			if uint64(n) > uint64(len(rest)-4) {
				return nil, fmt.Errorf("%w: snappy: xerial block of %d bytes, %d left", errRecords, n, len(rest)-4)
			}
			var err error
			if out, err = snappyBlock(out, rest[4:4+n]); err != nil {
				return nil, err
			}
			rest = rest[4+n:]
		}
		return out, nil
	case codecLZ4:
		return readLimited(lz4.NewReader(bytes.NewReader(src)), "lz4")
	case codecZstd:
		out, err := zstdDecoder().DecodeAll(src, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", errRecords, err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: unknown compression codec %d", errRecords, codec)
}

// snappyBlock appends one decoded raw snappy block to dst.
func snappyBlock(dst, block []byte) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", errRecords, err)
	}
	if n > maxDecompressedBytes-len(dst) {
		return nil, fmt.Errorf("%w: snappy: more than %d bytes decompressed", errRecords, maxDecompressedBytes)
	}
	out, err := s2.Decode(nil, block)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", errRecords, err)
	}
	return append(dst, out...), nil
}

func readLimited(r io.Reader, codec string) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, maxDecompressedBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errRecords, codec, err)
	}
	if len(out) > maxDecompressedBytes {
		return nil, fmt.Errorf("%w: %s: more than %d bytes decompressed", errRecords, codec, maxDecompressedBytes)
	}
	return out, nil
}
