package storage

import (
	"errors"
	"math"
	"testing"
)

// idem builds an idempotent batch of n records from producer 1.
func idem(t *testing.T, epoch int16, seq int32, n int) []byte {
	stamps := make([]int64, n)
	for i := range stamps {
		stamps[i] = 1000
	}
	return batchSpec{Stamps: stamps, Idempotent: true, ProducerID: 1, Epoch: epoch, BaseSeq: seq}.build(t)
}

func TestIdempotentSequences(t *testing.T) {
	type step struct {
		epoch   int16
		seq     int32
		n       int
		wantErr error
		wantDup bool
		wantOff int64 // base offset answered
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "new producer starts at 0", steps: []step{
			{seq: 0, n: 2, wantOff: 0},
			{seq: 2, n: 1, wantOff: 2},
		}},
		// Kafka accepts any first sequence from a producer the partition
		// holds no state for (its state may have been lost to retention).
		{name: "new producer not at 0", steps: []step{
			{seq: 5, n: 1, wantOff: 0},
			{seq: 7, n: 1, wantErr: ErrOutOfOrderSequence},
			{seq: 6, n: 1, wantOff: 1},
		}},
		{name: "gap", steps: []step{
			{seq: 0, n: 2, wantOff: 0},
			{seq: 3, n: 1, wantErr: ErrOutOfOrderSequence},
			{seq: 2, n: 1, wantOff: 2},
		}},
		{name: "duplicate of the last batch", steps: []step{
			{seq: 0, n: 2, wantOff: 0},
			{seq: 0, n: 2, wantDup: true, wantOff: 0},
			{seq: 2, n: 1, wantOff: 2},
		}},
		{name: "duplicate within the last five", steps: []step{
			{seq: 0, n: 1, wantOff: 0},
			{seq: 1, n: 1, wantOff: 1},
			{seq: 2, n: 1, wantOff: 2},
			{seq: 3, n: 1, wantOff: 3},
			{seq: 4, n: 1, wantOff: 4},
			{seq: 0, n: 1, wantDup: true, wantOff: 0},
			{seq: 2, n: 1, wantDup: true, wantOff: 2},
		}},
		{name: "duplicate older than five is out of order", steps: []step{
			{seq: 0, n: 1, wantOff: 0},
			{seq: 1, n: 1, wantOff: 1},
			{seq: 2, n: 1, wantOff: 2},
			{seq: 3, n: 1, wantOff: 3},
			{seq: 4, n: 1, wantOff: 4},
			{seq: 5, n: 1, wantOff: 5},
			{seq: 0, n: 1, wantErr: ErrOutOfOrderSequence},
		}},
		{name: "retry with a different size is out of order", steps: []step{
			{seq: 0, n: 2, wantOff: 0},
			{seq: 0, n: 3, wantErr: ErrOutOfOrderSequence},
		}},
		{name: "epoch bump restarts at 0", steps: []step{
			{epoch: 0, seq: 0, n: 3, wantOff: 0},
			{epoch: 1, seq: 0, n: 1, wantOff: 3},
			{epoch: 1, seq: 1, n: 1, wantOff: 4},
		}},
		{name: "epoch bump not at 0", steps: []step{
			{epoch: 0, seq: 0, n: 3, wantOff: 0},
			{epoch: 1, seq: 3, n: 1, wantErr: ErrOutOfOrderSequence},
		}},
		{name: "old epoch", steps: []step{
			{epoch: 2, seq: 0, n: 1, wantOff: 0},
			{epoch: 1, seq: 1, n: 1, wantErr: ErrInvalidProducerEpoch},
			{epoch: 1, seq: 0, n: 1, wantErr: ErrInvalidProducerEpoch},
		}},
		{name: "epoch bump forgets old duplicates", steps: []step{
			{epoch: 0, seq: 0, n: 1, wantOff: 0},
			{epoch: 1, seq: 0, n: 1, wantOff: 1},
			{epoch: 1, seq: 0, n: 1, wantDup: true, wantOff: 1},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPartition("t", 0)
			for i, s := range tc.steps {
				res, err := p.Append(idem(t, s.epoch, s.seq, s.n), AppendOptions{})
				if !errors.Is(err, s.wantErr) {
					t.Fatalf("step %d: err = %v, want %v", i, err, s.wantErr)
				}
				if err != nil {
					continue
				}
				if res.Duplicate != s.wantDup || res.BaseOffset != s.wantOff {
					t.Fatalf("step %d: %+v, want offset %d duplicate %v", i, res, s.wantOff, s.wantDup)
				}
			}
		})
	}
}

// TestIdempotentSequenceWrap follows a producer across the int32 sequence
// wrap: after MaxInt32 comes 0, and a batch may straddle the wrap.
func TestIdempotentSequenceWrap(t *testing.T) {
	p := newPartition("t", 0)
	p.producers = map[int64]*producerState{1: {epoch: 0, lastSeq: math.MaxInt32 - 2}}
	steps := []struct {
		seq     int32
		n       int
		wantErr error
		wantDup bool
	}{
		{seq: math.MaxInt32 - 1, n: 3}, // MaxInt32-1, MaxInt32, 0
		{seq: math.MaxInt32 - 1, n: 3, wantDup: true},
		{seq: 0, n: 1, wantErr: ErrOutOfOrderSequence},
		{seq: 1, n: 1},
		{seq: 2, n: 1},
	}
	for i, s := range steps {
		res, err := p.Append(idem(t, 0, s.seq, s.n), AppendOptions{})
		if !errors.Is(err, s.wantErr) || err == nil && res.Duplicate != s.wantDup {
			t.Fatalf("step %d: %+v, %v; want err %v duplicate %v", i, res, err, s.wantErr, s.wantDup)
		}
	}
	if got := p.producers[1].lastSeq; got != 2 {
		t.Fatalf("last sequence %d, want 2", got)
	}
}

// TestNonIdempotentSkipsSequences appends batches without a producer ID in
// any order: there is nothing to check.
func TestNonIdempotentSkipsSequences(t *testing.T) {
	p := newPartition("t", 0)
	for i := range 3 {
		res, err := p.Append(batchSpec{Stamps: []int64{1}}.build(t), AppendOptions{})
		if err != nil || res.BaseOffset != int64(i) || res.Duplicate {
			t.Fatalf("append %d: %+v, %v", i, res, err)
		}
	}
	if len(p.producers) != 0 {
		t.Fatalf("remembered %d producers", len(p.producers))
	}
}
