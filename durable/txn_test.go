package durable

import (
	"reflect"
	"testing"
)

// txn-state-kept: the last record of each transactional ID is its state;
// an expired ID is gone; compaction keeps one record each.
func TestTxnReplay(t *testing.T) {
	dir := t.TempDir()
	d, _, _ := open(t, dir, Options{})
	ongoing := TxnState{TransactionalID: "a", ProducerID: 7, PrevProducerID: -1, Epoch: 2, State: "Ongoing", TimeoutMs: 60000,
		StartedMs: 5, UpdatedMs: 6, Partitions: []TxnPartition{{"t", 0}}, Groups: []string{"g"}}
	prepared := TxnState{TransactionalID: "b", ProducerID: 8, PrevProducerID: -1, Epoch: 1, State: "PrepareCommit", TimeoutMs: 60000,
		UpdatedMs: 9, Pending: &TxnCompletion{ProducerID: 8, Epoch: 1, Commit: true, Partitions: []TxnPartition{{"t", 1}}}}
	for _, err := range []error{
		d.SetTxn(TxnState{TransactionalID: "a", ProducerID: 7, PrevProducerID: -1, Epoch: 2, State: "Empty", TimeoutMs: 60000}),
		d.SetTxn(ongoing), d.SetTxn(prepared),
		d.SetTxn(TxnState{TransactionalID: "c", ProducerID: 9, State: "Empty"}), d.DeleteTxn("c"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	want := map[string]TxnState{"a": ongoing, "b": prepared}
	for range 2 {
		d2, _, _ := open(t, dir, Options{})
		if got := d2.Txns(); !reflect.DeepEqual(got, want) {
			t.Fatalf("replayed %+v\nwant %+v", got, want)
		}
		d2.Close()
	}
}

// Pending transactional commits replay per group and producer; settled
// ones and those of a deleted group are gone.
func TestPendingOffsetsReplay(t *testing.T) {
	dir := t.TempDir()
	d, _, _ := open(t, dir, Options{})
	offs := []GroupOffset{{Topic: "t", Partition: 0, Offset: 5, CommitTimeMs: 1}}
	kept := PendingOffsets{Group: "g", Kind: "classic", ProducerID: 7, Offsets: offs}
	for _, err := range []error{
		d.SetPendingOffsets(kept),
		d.SetPendingOffsets(PendingOffsets{Group: "g", Kind: "classic", ProducerID: 8, Offsets: offs}),
		d.SetPendingOffsets(PendingOffsets{Group: "g", Kind: "classic", ProducerID: 8}), // settled
		d.SetPendingOffsets(PendingOffsets{Group: "h", Kind: "consumer", ProducerID: 9, Offsets: offs}),
		d.SetGroupOffsets(GroupOffsets{Group: "h", Kind: "consumer", Offsets: offs}),
		d.SetGroupOffsets(GroupOffsets{Group: "h", Kind: "consumer"}), // h deleted
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	for range 2 {
		d2, _, _ := open(t, dir, Options{})
		if got := d2.PendingOffsets(); !reflect.DeepEqual(got, []PendingOffsets{kept}) {
			t.Fatalf("replayed %+v; want %+v", got, kept)
		}
		d2.Close()
	}
}
