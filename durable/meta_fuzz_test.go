package durable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
)

// FuzzReadMetaLog feeds arbitrary bytes to the metadata-log reader (its
// corpus holds a real meta.log, testdata/datadir's, and damaged copies):
// no panic; the valid prefix reads back as the same records with nothing
// torn; a torn tail holds no whole record (no-silent-loss); an error is
// only ever ErrCorrupt.
func FuzzReadMetaLog(f *testing.F) {
	var log []byte
	log = appendMetaRecord(log, metaRecord{Op: opTopic, Name: "t", ID: "00112233445566778899aabbccddeeff", Partitions: 3})
	log = appendMetaRecord(log, metaRecord{Op: opLogStart, ID: "00112233445566778899aabbccddeeff", Partition: 1, Offset: 9})
	log = appendMetaRecord(log, metaRecord{Op: opOffsets, Group: "g", Kind: "classic", Offsets: []GroupOffset{{Topic: "t", Offset: 4}}})
	f.Add(log)
	f.Add(log[:len(log)-3])
	f.Add(append(append([]byte(nil), log...), make([]byte, 64)...))
	bad := append([]byte(nil), log...)
	bad[12] ^= 1
	f.Add(bad)
	f.Add([]byte{0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, valid, err := readMetaLog(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if valid > len(data) {
			t.Fatalf("valid %d past the end %d", valid, len(data))
		}
		// no-silent-loss: no whole record with a matching CRC starts in
		// the dropped tail (checked here byte by byte, apart from the
		// reader's own search).
		for q := valid + 1; q+metaHeaderBytes+len(metaPayloadStart) <= len(data); q++ {
			n := int(binary.BigEndian.Uint32(data[q:]))
			end := q + metaHeaderBytes + n
			if n > maxMetaRecordBytes || end > len(data) || !bytes.HasPrefix(data[q+metaHeaderBytes:end], metaPayloadStart) {
				continue
			}
			if crc32.Checksum(data[q+metaHeaderBytes:end], castagnoli) == binary.BigEndian.Uint32(data[q+4:]) {
				t.Fatalf("the torn tail from %d dropped a whole record at %d", valid, q)
			}
		}
		again, v2, err := readMetaLog(data[:valid])
		if err != nil || v2 != valid || len(again) != len(recs) {
			t.Fatalf("re-read of the valid prefix: %d/%d records, %d bytes, %v", len(again), len(recs), v2, err)
		}
	})
}
