package durable

import (
	"errors"
	"testing"
)

// FuzzReadMetaLog feeds arbitrary bytes to the metadata-log reader: no
// panic; the valid prefix reads back as the same records with nothing
// torn; an error is only ever ErrCorrupt.
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
		again, v2, err := readMetaLog(data[:valid])
		if err != nil || v2 != valid || len(again) != len(recs) {
			t.Fatalf("re-read of the valid prefix: %d/%d records, %d bytes, %v", len(again), len(recs), v2, err)
		}
	})
}
