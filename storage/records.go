package storage

// Record-level access for the few places that need more than whole
// batches: a share group's dead-letter queue (KIP-1191) copies source
// records and writes records of its own. Fetch paths never come here; they
// hand out stored batches as they are.

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// Record is one record of the log, or one to be written. A nil Key or Value
// is null on the wire.
type Record struct {
	Offset    int64 // absolute; ignored by BuildBatch
	Timestamp int64 // Unix ms
	Key       []byte
	Value     []byte
	Headers   []Header
}

// RecordsIn returns the records at offsets [first, last] that are still in
// the log, in offset order, decompressed. Offsets below the log start, or
// missing (compacted away, control records), are simply absent. A batch
// that cannot be decoded is an error; the caller decides what a record it
// cannot read is worth.
func (p *Partition) RecordsIn(first, last int64) ([]Record, error) {
	p.mu.RLock()
	first = max(first, p.logStart)
	var views []batchView
	for _, b := range p.batches {
		if b.lastOffset >= first && b.baseOffset <= last && b.attributes&attrControl == 0 {
			views = append(views, p.viewLocked(b))
		}
	}
	p.mu.RUnlock()

	var out []Record
	for _, v := range views {
		raw, err := v.bytes()
		if err != nil {
			return out, err
		}
		recs, err := decodeRecords(raw)
		if err != nil {
			return out, err
		}
		for _, r := range recs {
			if r.Offset >= first && r.Offset <= last {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// decodeRecords decodes every record of a stored batch.
func decodeRecords(batch []byte) ([]Record, error) {
	if len(batch) < batchHeaderBytes {
		return nil, fmt.Errorf("%w: %d bytes", errRecords, len(batch))
	}
	h := readBatchHeader(batch)
	if h.NumRecords < 0 || int64(h.NumRecords) > int64(len(batch)) {
		return nil, fmt.Errorf("%w: %d records", errRecords, h.NumRecords)
	}
	raw, err := decompress(h.Compression(), batch[batchHeaderBytes:])
	if err != nil {
		return nil, err
	}
	d := recordDecoder{b: raw}
	out := make([]Record, 0, min(int(h.NumRecords), len(raw)/minRecordBytes))
	for i := int32(0); i < h.NumRecords && d.err == nil; i++ {
		length := d.varint()
		if d.err != nil || length < 0 || length > int64(len(d.b)) {
			return nil, fmt.Errorf("%w: record %d has a bad length", errRecords, i)
		}
		r := recordDecoder{b: d.b[:length]}
		d.b = d.b[length:]
		r.bytes(1) // attributes
		tsDelta := r.varint()
		offDelta := r.varint()
		rec := Record{Offset: h.BaseOffset + offDelta, Timestamp: h.BaseTimestamp + tsDelta}
		if h.Attributes&attrLogAppendTime != 0 {
			rec.Timestamp = h.MaxTimestamp
		}
		rec.Key = r.nullable()
		rec.Value = r.nullable()
		n := r.varint()
		if n < 0 || n > int64(len(r.b)) {
			return nil, fmt.Errorf("%w: record %d has %d headers", errRecords, i, n)
		}
		for j := int64(0); j < n && r.err == nil; j++ {
			k := r.nullable()
			rec.Headers = append(rec.Headers, Header{Key: string(k), Value: r.nullable()})
		}
		if r.err != nil {
			return nil, fmt.Errorf("%w: record %d: %v", errRecords, i, r.err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// recordDecoder reads the varint-framed fields of a record; the first
// failure sticks and later reads return zero values.
type recordDecoder struct {
	b   []byte
	err error
}

func (d *recordDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *recordDecoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = fmt.Errorf("field of %d bytes, %d left", n, len(d.b))
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}

// nullable reads a varint length and that many bytes; -1 is null.
func (d *recordDecoder) nullable() []byte {
	n := d.varint()
	if n < 0 {
		return nil
	}
	if n > int64(len(d.b)) {
		d.err = fmt.Errorf("field of %d bytes, %d left", n, len(d.b))
		return nil
	}
	return d.bytes(int(n))
}

// BuildBatch encodes records as one uncompressed magic-2 batch with no
// producer (ProducerID -1, as a non-idempotent producer sends), stamped
// with each record's own timestamp, ready for Partition.Append. Offsets
// are assigned in order from 0; Append rewrites the base.
func BuildBatch(records []Record) []byte {
	if len(records) == 0 {
		panic("storage: BuildBatch with no records")
	}
	base, maxTs := records[0].Timestamp, records[0].Timestamp
	for _, r := range records {
		base, maxTs = min(base, r.Timestamp), max(maxTs, r.Timestamp)
	}
	b := make([]byte, batchHeaderBytes, batchHeaderBytes+64*len(records))
	var rec []byte
	for i, r := range records {
		rec = rec[:0]
		rec = append(rec, 0) // attributes
		rec = binary.AppendVarint(rec, r.Timestamp-base)
		rec = binary.AppendVarint(rec, int64(i))
		rec = appendNullable(rec, r.Key)
		rec = appendNullable(rec, r.Value)
		rec = binary.AppendVarint(rec, int64(len(r.Headers)))
		for _, h := range r.Headers {
			rec = binary.AppendVarint(rec, int64(len(h.Key)))
			rec = append(rec, h.Key...)
			rec = appendNullable(rec, h.Value)
		}
		b = binary.AppendVarint(b, int64(len(rec)))
		b = append(b, rec...)
	}
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-batchLengthOverhead))
	b[offMagic] = 2
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(len(records)-1))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(base))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(maxTs))
	binary.BigEndian.PutUint64(b[offProducerID:], 0xffffffffffffffff)
	binary.BigEndian.PutUint16(b[offProducerEpoch:], 0xffff)
	binary.BigEndian.PutUint32(b[offBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(len(records)))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

func appendNullable(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}
