package storage

import (
	"encoding/binary"
	"slices"
	"testing"
)

// Rule: epoch-stamp (docs/cluster.md): every appended batch carries
// the partition's current leader epoch; epoch-history: OffsetForLeaderEpoch
// answers from the history as Kafka's LeaderEpochFileCache.endOffsetFor.
func TestLeaderEpochHistory(t *testing.T) {
	p := newPartition("t", 0)
	if e, off := p.EndOffsetForEpoch(0); e != 0 || off != 0 {
		t.Fatalf("empty partition, epoch 0: %d %d", e, off)
	}
	appendN(t, p, 3, 1, 0) // epoch 0: offsets 0-2
	p.SetLeaderEpoch(1)    // epoch 1 from 3, no records
	p.SetLeaderEpoch(2)    // epoch 2 from 3: epoch 1 dropped
	appendN(t, p, 2, 1, 0) // epoch 2: offsets 3-4
	p.SetLeaderEpoch(2)    // not higher: nothing
	p.SetLeaderEpoch(4)    // epoch 4 from 5
	appendN(t, p, 1, 1, 0) // epoch 4: offset 5
	want := []EpochStart{{0, 0}, {2, 3}, {4, 5}}
	if got := p.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	for _, tc := range []struct {
		requested, epoch int32
		end              int64
	}{
		{-1, -1, -1},
		{0, 0, 3},
		{1, 0, 3}, // never had records: the epoch below, ending where 2 starts
		{2, 2, 5},
		{3, 2, 5},
		{4, 4, 6}, // current: the log end offset
		{5, -1, -1},
	} {
		if e, off := p.EndOffsetForEpoch(tc.requested); e != tc.epoch || off != tc.end {
			t.Errorf("epoch %d: %d %d, want %d %d", tc.requested, e, off, tc.epoch, tc.end)
		}
	}
	for off, want := range []int32{0, 0, 0, 2, 2, 4} {
		if e := p.EpochForOffset(int64(off)); e != want {
			t.Errorf("offset %d: epoch %d, want %d", off, e, want)
		}
	}
	// Each stored batch carries its epoch.
	res, err := p.Read(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	var stamped []int32
	for _, rec := range res.Records {
		for len(rec) > 0 {
			h := readBatchHeader(rec)
			stamped = append(stamped, int32(binary.BigEndian.Uint32(rec[offLeaderEpoch:])))
			rec = rec[h.Length:]
		}
	}
	if !slices.Equal(stamped, []int32{0, 0, 0, 2, 2, 4}) {
		t.Fatalf("stamped epochs %v", stamped)
	}
	// The log start trims the history (truncateFromStart): below every
	// known epoch now answers the requested epoch and the first start.
	if _, err := p.DeleteRecordsBefore(4); err != nil {
		t.Fatal(err)
	}
	if got := p.Epochs(); !slices.Equal(got, []EpochStart{{2, 4}, {4, 5}}) {
		t.Fatalf("trimmed history %v", got)
	}
	if e, off := p.EndOffsetForEpoch(0); e != 0 || off != 4 {
		t.Fatalf("epoch 0 below the history: %d %d, want 0 4", e, off)
	}
}
