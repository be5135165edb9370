package storage

import (
	"testing"
)

var codecCases = []struct {
	name   string
	codec  int8
	xerial bool
}{
	{"none", codecNone, false},
	{"gzip", codecGzip, false},
	{"snappy", codecSnappy, false},
	{"snappy xerial", codecSnappy, true},
	{"lz4", codecLZ4, false},
	{"zstd", codecZstd, false},
}

func TestTimestampLookupsAreRecordExact(t *testing.T) {
	for _, cc := range codecCases {
		t.Run(cc.name, func(t *testing.T) {
			p := newPartition("t", 0)
			for _, stamps := range [][]int64{{100, 150, 120}, {200, 180, 250, 250}} {
				raw := batchSpec{Stamps: stamps, Codec: cc.codec, XerialSnappy: cc.xerial, ValueBytes: 300}.build(t)
				if _, err := p.Append(raw, AppendOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			lookups := []struct {
				ts      int64
				wantOff int64
				wantTs  int64
				found   bool
			}{
				{ts: 0, wantOff: 0, wantTs: 100, found: true},
				{ts: 100, wantOff: 0, wantTs: 100, found: true},
				{ts: 101, wantOff: 1, wantTs: 150, found: true}, // not the batch's base offset
				{ts: 121, wantOff: 1, wantTs: 150, found: true},
				{ts: 151, wantOff: 3, wantTs: 200, found: true},
				{ts: 181, wantOff: 3, wantTs: 200, found: true},
				{ts: 201, wantOff: 5, wantTs: 250, found: true},
				{ts: 251, found: false},
			}
			for _, l := range lookups {
				off, ts, found := p.OffsetForTimestamp(l.ts)
				if found != l.found || found && (off != l.wantOff || ts != l.wantTs) {
					t.Errorf("OffsetForTimestamp(%d) = %d, %d, %v; want %d, %d, %v", l.ts, off, ts, found, l.wantOff, l.wantTs, l.found)
				}
			}
			if off, ts, found := p.MaxTimestamp(); !found || off != 5 || ts != 250 {
				t.Errorf("MaxTimestamp = %d, %d, %v; want 5, 250 (the first of the tie)", off, ts, found)
			}

			// Records below the log start no longer answer.
			if _, err := p.DeleteRecordsBefore(2); err != nil {
				t.Fatal(err)
			}
			if off, ts, _ := p.OffsetForTimestamp(0); off != 2 || ts != 120 {
				t.Errorf("after delete: OffsetForTimestamp(0) = %d, %d; want 2, 120", off, ts)
			}
			if off, ts, _ := p.OffsetForTimestamp(130); off != 3 || ts != 200 {
				t.Errorf("after delete: OffsetForTimestamp(130) = %d, %d; want 3, 200", off, ts)
			}
		})
	}
}

// TestMaxTimestampStraddlingLogStart puts the largest timestamp below the
// log start inside the first kept batch: it must not count.
func TestMaxTimestampStraddlingLogStart(t *testing.T) {
	p := newPartition("t", 0)
	p.Append(batchSpec{Stamps: []int64{900, 10, 20}, Codec: codecLZ4}.build(t), AppendOptions{})
	p.Append(batchSpec{Stamps: []int64{30, 40}}.build(t), AppendOptions{})
	if off, ts, _ := p.MaxTimestamp(); off != 0 || ts != 900 {
		t.Fatalf("MaxTimestamp = %d, %d; want 0, 900", off, ts)
	}
	p.DeleteRecordsBefore(1)
	if off, ts, _ := p.MaxTimestamp(); off != 4 || ts != 40 {
		t.Fatalf("after delete: MaxTimestamp = %d, %d; want 4, 40", off, ts)
	}
	p.DeleteRecordsBefore(5)
	if _, _, found := p.MaxTimestamp(); found {
		t.Fatal("MaxTimestamp found a record in an empty log")
	}
	if _, _, found := p.OffsetForTimestamp(0); found {
		t.Fatal("OffsetForTimestamp found a record in an empty log")
	}
}

// TestTimestampLookupLogAppendTime: every record of a log-append-time batch
// carries the broker's time, whatever the producer stamped.
func TestTimestampLookupLogAppendTime(t *testing.T) {
	p := newPartition("t", 0)
	p.Append(batchSpec{Stamps: []int64{5, 6}, Codec: codecGzip}.build(t), AppendOptions{LogAppendTime: true, NowMs: 7000})
	p.Append(batchSpec{Stamps: []int64{1, 2}, Codec: codecZstd}.build(t), AppendOptions{LogAppendTime: true, NowMs: 8000})
	if off, ts, _ := p.OffsetForTimestamp(7001); off != 2 || ts != 8000 {
		t.Fatalf("OffsetForTimestamp(7001) = %d, %d; want 2, 8000", off, ts)
	}
	if off, ts, _ := p.OffsetForTimestamp(0); off != 0 || ts != 7000 {
		t.Fatalf("OffsetForTimestamp(0) = %d, %d; want 0, 7000", off, ts)
	}
	if off, ts, _ := p.MaxTimestamp(); off != 2 || ts != 8000 {
		t.Fatalf("MaxTimestamp = %d, %d; want 2, 8000", off, ts)
	}
}

// TestTimestampLookupUnreadableRecords stores a batch whose CRC is right but
// whose compressed records are garbage: lookups fall back to the batch.
func TestTimestampLookupUnreadableRecords(t *testing.T) {
	p := newPartition("t", 0)
	p.Append(batchSpec{Stamps: []int64{1}}.build(t), AppendOptions{})
	raw := batchSpec{Stamps: []int64{100, 300, 200}, Codec: codecZstd}.build(t)
	for i := batchHeaderBytes; i < len(raw); i++ {
		raw[i] = 0xa5
	}
	fixCRC(raw)
	if _, err := p.Append(raw, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if off, ts, found := p.OffsetForTimestamp(150); !found || off != 1 || ts != 300 {
		t.Fatalf("OffsetForTimestamp = %d, %d, %v; want the batch: 1, 300", off, ts, found)
	}
	if off, ts, found := p.MaxTimestamp(); !found || off != 1 || ts != 300 {
		t.Fatalf("MaxTimestamp = %d, %d, %v; want the batch: 1, 300", off, ts, found)
	}
}

func TestRecordStampsRejectsGarbage(t *testing.T) {
	good := batchSpec{Stamps: []int64{1, 2, 3}}.build(t)
	for cut := batchHeaderBytes; cut < len(good); cut++ {
		if _, err := recordStamps(good[:cut]); err == nil {
			t.Fatalf("records cut at %d decoded", cut)
		}
	}
	for codec := int8(1); codec <= 7; codec++ {
		b := append([]byte(nil), good...)
		b[offAttributes+1] |= byte(codec)
		if _, err := recordStamps(b); err == nil {
			t.Fatalf("plain records read as codec %d", codec)
		}
	}
}

func FuzzRecordStamps(f *testing.F) {
	for _, cc := range codecCases {
		f.Add(batchSpec{Stamps: []int64{1, 5, 3}, Codec: cc.codec, XerialSnappy: cc.xerial}.build(f))
	}
	f.Fuzz(func(t *testing.T, batch []byte) {
		stamps, err := recordStamps(batch)
		if err == nil && len(stamps) != int(readBatchHeader(batch).NumRecords) {
			t.Fatalf("%d stamps for %d records", len(stamps), readBatchHeader(batch).NumRecords)
		}
	})
}
