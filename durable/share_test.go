package durable

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// share-state-as-kafka: snapshots and updates replay as the share
// coordinator combines them, a later write winning per offset, nothing
// below the start offset kept; a deleted share partition and the state of
// a deleted topic are gone; compact-on-start leaves one snapshot each.
func TestShareStateReplay(t *testing.T) {
	dir := t.TempDir()
	d, store, _ := open(t, dir, Options{})
	tp, _ := store.CreateTopic("t", 2, nil)
	gone, _ := store.CreateTopic("gone", 1, nil)
	k := ShareKey{Group: "g", TopicID: tp.ID, Partition: 1}
	k2 := ShareKey{Group: "g2", TopicID: tp.ID, Partition: 0}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(d.WriteShareState(k, true, ShareState{StartOffset: 0, StateEpoch: 3}))
	must(d.WriteShareState(k, false, ShareState{StartOffset: 0, Batches: []ShareBatch{{0, 9, 0, 1}}}))                    // released
	must(d.WriteShareState(k, false, ShareState{StartOffset: 0, Batches: []ShareBatch{{4, 5, 4, 1}}}))                    // rejected
	must(d.WriteShareState(k, false, ShareState{StartOffset: 2, Batches: []ShareBatch{{0, 1, 2, 2}}}))                    // accepted, SPSO 2
	must(d.WriteShareState(k, false, ShareState{StartOffset: 2, Batches: []ShareBatch{{12, 12, 0, 1}}}))                  // released; 10-11 acquired
	must(d.WriteShareState(k, false, ShareState{StartOffset: 2, Batches: []ShareBatch{{6, 6, 2, 2}}}))                    // accepted
	must(d.WriteShareState(k, false, ShareState{StartOffset: 1, Batches: []ShareBatch{{7, 7, 0, 2}}}))                    // an SPSO never moves back
	must(d.WriteShareState(k2, true, ShareState{StartOffset: 5}))                                                         // deleted below
	must(d.DeleteShareState(k2))                                                                                          //
	must(d.WriteShareState(ShareKey{Group: "g", TopicID: gone.ID}, true, ShareState{StartOffset: 0}))                     // its topic goes
	must(d.WriteShareState(ShareKey{Group: "x", TopicID: tp.ID}, false, ShareState{Batches: []ShareBatch{{0, 0, 2, 1}}})) // no snapshot: ignored
	if _, err := store.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	d.Close()

	want := map[ShareKey]ShareState{k: {StartOffset: 2, StateEpoch: 3, Batches: []ShareBatch{
		{2, 3, 0, 1}, {4, 5, 4, 1}, {6, 6, 2, 2}, {7, 7, 0, 2}, {8, 9, 0, 1}, {12, 12, 0, 1}}}}
	for range 2 { // the second start reads the compacted log
		d2, _, _ := open(t, dir, Options{})
		if got := d2.ShareStates(); !reflect.DeepEqual(got, want) {
			t.Fatalf("replayed %+v\nwant %+v", got, want)
		}
		d2.Close()
	}
	b, _ := os.ReadFile(filepath.Join(dir, metaFile))
	recs, _, err := readMetaLog(b)
	if err != nil {
		t.Fatal(err)
	}
	shares := 0
	for _, r := range recs {
		if r.Op == opShareSnapshot || r.Op == opShareUpdate || r.Op == opShareDelete {
			shares++
		}
	}
	if shares != 1 {
		t.Errorf("%d share records after compaction; want 1 snapshot", shares)
	}
}

// A batch no share partition could have written is corruption, not a
// state to load (no-silent-loss).
func TestShareStateBadBatch(t *testing.T) {
	dir := t.TempDir()
	d, store, _ := open(t, dir, Options{})
	tp, _ := store.CreateTopic("t", 1, nil)
	k := ShareKey{Group: "g", TopicID: tp.ID}
	d.WriteShareState(k, true, ShareState{})
	d.WriteShareState(k, false, ShareState{Batches: []ShareBatch{{0, 3, 1, 1}}}) // ACQUIRED is never written
	d.Close()
	if _, _, _, err := tryOpen(dir, Options{}); err == nil {
		t.Fatal("a persisted ACQUIRED batch was accepted")
	}
}

// mergeShareBatches is the per-offset "later write wins, nothing below the
// start" rule, with runs joined: checked against a map of offsets over
// random writes.
func TestMergeShareBatchesPerOffset(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 932))
	for range 500 {
		var kept []ShareBatch
		byOffset := map[int64]ShareBatch{}
		start := int64(0)
		for range 1 + r.IntN(12) {
			var upd []ShareBatch
			for range r.IntN(4) {
				first := start + int64(r.IntN(40))
				b := ShareBatch{First: first, Last: first + int64(r.IntN(6)), State: []int8{0, 2, 4}[r.IntN(3)], Count: int16(r.IntN(3))}
				upd = append(upd, b)
				for o := b.First; o <= b.Last; o++ {
					byOffset[o] = b
				}
			}
			start += int64(r.IntN(5))
			kept = mergeShareBatches(kept, upd, start)
		}
		var want []ShareBatch
		for o := start; o < start+60; o++ {
			b, ok := byOffset[o]
			if !ok {
				continue
			}
			if n := len(want); n > 0 && want[n-1].Last+1 == o && want[n-1].State == b.State && want[n-1].Count == b.Count {
				want[n-1].Last = o
				continue
			}
			want = append(want, ShareBatch{First: o, Last: o, State: b.State, Count: b.Count})
		}
		if !reflect.DeepEqual(kept, want) && (len(kept) != 0 || len(want) != 0) {
			t.Fatalf("merged %+v\nwant %+v", kept, want)
		}
	}
}
