package storage

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/internal/batchtest"
)

func mustAppend(t *testing.T, p *Partition, raw []byte) int64 {
	t.Helper()
	res, err := p.Append(raw, AppendOptions{})
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return res.BaseOffset
}

// lso, read-committed-fetch
func TestLastStableOffsetAndAbortedIndex(t *testing.T) {
	p := newPartition("t", 0)
	mustAppend(t, p, batchtest.Plain(2).Build())                           // 0-1
	first := mustAppend(t, p, batchtest.Transactional(7, 0, 0, 2).Build()) // 2-3
	mustAppend(t, p, batchtest.Plain(1).Build())                           // 4
	if got := p.Offsets(); got.LastStable != first || got.HighWatermark != 5 {
		t.Fatalf("offsets = %+v, want LSO %d HW 5", got, first)
	}
	res, err := p.ReadIsolated(0, math.MaxInt32, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := baseOffsets(t, res.Records.Join()); !slices.Equal(got, []int64{0}) {
		t.Fatalf("read_committed batches = %v, want [0]", got)
	}
	if res, _ := p.ReadIsolated(first, math.MaxInt32, true, true); res.Records.Len() != 0 {
		t.Fatalf("read_committed at the LSO returned %d bytes", res.Records.Len())
	}
	marker := p.AppendMarker(MarkerOptions{ProducerID: 7, ProducerEpoch: 0, Commit: false, NowMs: 1})
	if marker != 5 {
		t.Fatalf("marker at %d, want 5", marker)
	}
	if got := p.Offsets(); got.LastStable != 6 || got.HighWatermark != 6 {
		t.Fatalf("after abort offsets = %+v", got)
	}
	res, _ = p.ReadIsolated(0, math.MaxInt32, true, true)
	if got := baseOffsets(t, res.Records.Join()); !slices.Equal(got, []int64{0, 2, 4, 5}) {
		t.Fatalf("batches = %v", got)
	}
	if want := []AbortedTxn{{7, 2, 5}}; !slices.Equal(res.Aborted, want) {
		t.Fatalf("aborted = %v, want %v", res.Aborted, want)
	}
	infos, _, _ := p.Batches(0, math.MaxInt64, math.MaxInt32)
	var flags []bool
	for _, b := range infos {
		flags = append(flags, b.Aborted)
	}
	if want := []bool{false, true, false, false}; !slices.Equal(flags, want) {
		t.Fatalf("Batches aborted flags = %v, want %v", flags, want)
	}
	if res, _ := p.ReadIsolated(6, math.MaxInt32, true, true); len(res.Aborted) != 0 {
		t.Fatalf("aborted past the marker = %v", res.Aborted)
	}
	if res, _ := p.Read(0, math.MaxInt32, true); res.Aborted != nil {
		t.Fatalf("read_uncommitted lists aborted %v", res.Aborted)
	}

	// A committed transaction leaves no aborted entry.
	mustAppend(t, p, batchtest.Transactional(7, 0, 2, 1).Build())
	p.AppendMarker(MarkerOptions{ProducerID: 7, ProducerEpoch: 0, Commit: true, NowMs: 1})
	res, _ = p.ReadIsolated(6, math.MaxInt32, true, true)
	if len(res.Aborted) != 0 || p.Offsets().LastStable != 8 {
		t.Fatalf("after commit aborted %v, offsets %+v", res.Aborted, p.Offsets())
	}

	// Deleting records past the aborted transaction forgets it.
	if _, err := p.DeleteRecordsBefore(6); err != nil {
		t.Fatal(err)
	}
	if len(p.aborted) != 0 {
		t.Fatalf("aborted index after delete = %v", p.aborted)
	}
}

// The marker is a control batch Kafka clients can decode: magic 2,
// control and transactional bits, one record with the marker key and value.
func TestMarkerEncoding(t *testing.T) {
	p := newPartition("t", 0)
	mustAppend(t, p, batchtest.Transactional(3, 4, 0, 1).Build())
	p.AppendMarker(MarkerOptions{ProducerID: 3, ProducerEpoch: 5, Commit: true, CoordinatorEpoch: 9, NowMs: 1234})
	res, _ := p.Read(1, math.MaxInt32, true)
	if _, err := ParseBatch(res.Records.Join()); err != nil {
		t.Fatalf("marker does not parse: %v", err)
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(res.Records.Join()); err != nil {
		t.Fatal(err)
	}
	if rb.Attributes != 0x30 || rb.ProducerID != 3 || rb.ProducerEpoch != 5 || rb.NumRecords != 1 || rb.FirstOffset != 1 {
		t.Fatalf("batch = %+v", rb)
	}
	var rec kmsg.Record
	if err := rec.ReadFrom(rb.Records); err != nil {
		t.Fatal(err)
	}
	if want := []byte{0, 0, 0, 1}; !slices.Equal(rec.Key, want) {
		t.Fatalf("key = %x, want %x", rec.Key, want)
	}
	if want := []byte{0, 0, 0, 0, 0, 9}; !slices.Equal(rec.Value, want) {
		t.Fatalf("value = %x, want %x", rec.Value, want)
	}
	// The marker raised the producer's epoch here.
	if _, err := p.Append(batchtest.Transactional(3, 4, 1, 1).Build(), AppendOptions{}); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch after marker: %v", err)
	}
	if _, err := p.Append(batchtest.Transactional(3, 5, 0, 1).Build(), AppendOptions{}); err != nil {
		t.Fatalf("new epoch after marker: %v", err)
	}
}

// marker-last: a guard goes stale when a marker for its producer lands
// here, whichever transaction the marker ends; other producers' markers
// leave it alone, and a stale guard stores nothing.
func TestTxnGuard(t *testing.T) {
	p := newPartition("t", 0)
	guarded := func(g TxnGuard, raw []byte) error {
		_, err := p.Append(raw, AppendOptions{TxnGuard: g})
		return err
	}
	g := p.TxnGuard(7)
	if err := guarded(g, batchtest.Transactional(7, 0, 0, 2).Build()); err != nil {
		t.Fatalf("fresh guard: %v", err)
	}
	g = p.TxnGuard(7)
	p.AppendMarker(MarkerOptions{ProducerID: 8, ProducerEpoch: 0, Commit: true, NowMs: 1})
	if err := guarded(g, batchtest.Transactional(7, 0, 2, 1).Build()); err != nil {
		t.Fatalf("guard after another producer's marker: %v", err)
	}

	stale := p.TxnGuard(7)
	p.AppendMarker(MarkerOptions{ProducerID: 7, ProducerEpoch: 0, Commit: true, NowMs: 1}) // 3 (8's marker is at 2)
	hw := p.Offsets().HighWatermark
	if err := guarded(stale, batchtest.Transactional(7, 0, 3, 1).Build()); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("stale guard: err %v, want ErrInvalidTxnState", err)
	}
	if got := p.Offsets(); got.HighWatermark != hw || got.LastStable != hw {
		t.Fatalf("after the refused batch offsets = %+v, want HW and LSO %d", got, hw)
	}
	// A retry takes a new guard: the next transaction may start.
	if err := guarded(p.TxnGuard(7), batchtest.Transactional(7, 0, 3, 1).Build()); err != nil {
		t.Fatalf("new guard: %v", err)
	}
	// The zero guard checks nothing (a partition written without a
	// coordinator, as in these tests).
	p.AppendMarker(MarkerOptions{ProducerID: 7, ProducerEpoch: 0, Commit: false, NowMs: 1})
	if err := guarded(TxnGuard{}, batchtest.Transactional(7, 0, 4, 1).Build()); err != nil {
		t.Fatalf("zero guard: %v", err)
	}
}
