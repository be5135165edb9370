package storage

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/sharebroker/sharebroker/internal/batchtest"
)

// restoreAll restores every batch of from's log into a new partition.
func restoreAll(t *testing.T, from *Partition) *Partition {
	t.Helper()
	res, err := from.Read(0, math.MaxInt32, true)
	if err != nil {
		t.Fatal(err)
	}
	to := newPartition("t", 0)
	b := res.Records.Join()
	for len(b) > 0 {
		h := readBatchHeader(b)
		if err := to.Restore(b[:h.Length]); err != nil {
			t.Fatal(err)
		}
		b = b[h.Length:]
	}
	return to
}

// producer-state-from-log, abort-open-at-recovery: restoring a log redoes
// its transactions (aborted index, open transactions) and producer state.
func TestRestoreRedoesIndexes(t *testing.T) {
	p := newPartition("t", 0)
	mustAppend(t, p, batchtest.Transactional(7, 0, 0, 2).Build()) // 0-1
	p.AppendMarker(MarkerOptions{ProducerID: 7, ProducerEpoch: 0, Commit: false, NowMs: 1})
	mustAppend(t, p, batchtest.Transactional(8, 0, 0, 1).Build()) // 3, left open
	idem := batchtest.Idempotent(9, 2, 0, 1).Build()
	mustAppend(t, p, idem) // 4

	r := restoreAll(t, p)
	if got, want := r.Offsets(), p.Offsets(); got != want {
		t.Errorf("offsets %+v, want %+v", got, want)
	}
	res, _ := r.ReadIsolated(0, math.MaxInt32, true, true)
	if want := []AbortedTxn{{7, 0, 2}}; !slices.Equal(res.Aborted, want) {
		t.Errorf("aborted %v, want %v", res.Aborted, want)
	}
	if open := r.OpenTransactions(); len(open) != 1 || open[8] != 0 {
		t.Errorf("open transactions %v, want producer 8", open)
	}
	dup, err := r.Append(idem, AppendOptions{})
	if err != nil || !dup.Duplicate || dup.BaseOffset != 4 {
		t.Errorf("retry of the idempotent batch: %+v %v", dup, err)
	}
	if got := r.MaxProducerID(); got != 9 {
		t.Errorf("max producer ID %d, want 9", got)
	}
	if err := r.Restore(batchtest.Plain(1).Build()); !errors.Is(err, ErrCorruptMessage) {
		t.Errorf("restoring a batch at offset 0 after offset 5: %v, want ErrCorruptMessage", err)
	}
}

type failingSink struct{ fail bool }

func (s *failingSink) Append([]byte, int64, int32) error {
	if s.fail {
		return errors.New("disk full")
	}
	return nil
}
func (s *failingSink) LogStartMoved(int64) error {
	if s.fail {
		return errors.New("disk full")
	}
	return nil
}

// ack-after-write: a batch the sink refuses is not stored, and the next
// one takes its offset.
func TestSinkRefusal(t *testing.T) {
	p := newPartition("t", 0)
	s := &failingSink{}
	p.sink = s
	mustAppend(t, p, batchtest.Plain(1).Build())
	s.fail = true
	if _, err := p.Append(batchtest.Plain(1).Build(), AppendOptions{}); !errors.Is(err, ErrStorage) {
		t.Fatalf("append with a failing sink: %v, want ErrStorage", err)
	}
	if _, err := p.DeleteRecordsBefore(1); !errors.Is(err, ErrStorage) || p.Offsets().LogStart != 0 {
		t.Fatalf("DeleteRecords with a failing sink: %v, log start %d", err, p.Offsets().LogStart)
	}
	s.fail = false
	if got := mustAppend(t, p, batchtest.Plain(1).Build()); got != 1 {
		t.Fatalf("next append at %d, want 1", got)
	}
	res, _ := p.Read(0, math.MaxInt32, true)
	if got := baseOffsets(t, res.Records.Join()); !slices.Equal(got, []int64{0, 1}) {
		t.Fatalf("batches %v, want [0 1]", got)
	}
}

// RestoreRun adopts a block of batches as a chunk: reads return the same
// bytes, and appends after it go on at the next offset without touching
// the restored ones.
func TestRestoreRun(t *testing.T) {
	p := newPartition("t", 0)
	mustAppend(t, p, batchtest.Plain(2).Build())
	mustAppend(t, p, batchtest.Idempotent(4, 0, 0, 3).Build())
	res, _ := p.Read(0, math.MaxInt32, true)
	want := append([]byte(nil), res.Records.Join()...)

	block := make([]byte, len(want), len(want)+4096) // spare capacity, as a read block has
	copy(block, want)
	r := newPartition("t", 0)
	if err := r.RestoreRun(block); err != nil {
		t.Fatal(err)
	}
	if got := r.Offsets(); got != p.Offsets() {
		t.Fatalf("offsets %+v, want %+v", got, p.Offsets())
	}
	if got := mustAppend(t, r, batchtest.Plain(1).Build()); got != 5 {
		t.Fatalf("append after RestoreRun at %d, want 5", got)
	}
	res, _ = r.Read(0, math.MaxInt32, true)
	if got := res.Records.Join(); !slices.Equal(got[:len(want)], want) {
		t.Fatal("the restored batches changed")
	}
	if err := r.RestoreRun(want[:len(want)-1]); !errors.Is(err, ErrCorruptMessage) {
		t.Fatalf("a run cut short: %v, want ErrCorruptMessage", err)
	}
}
