package broker

import (
	"fmt"
	"time"

	"github.com/sharebroker/sharebroker/durable"
	"github.com/sharebroker/sharebroker/txn"
)

// Transaction coordinator state in the data directory (docs/durability.md
// txn-state-kept): restored before the logs' open transactions are looked
// at, so that a transaction the coordinator still has Ongoing stays open
// and is aborted by its timeout, as Kafka's would be.

func txnStateByName(name string) (txn.State, bool) {
	for s := txn.Empty; s <= txn.CompleteAbort; s++ {
		if s.String() == name {
			return s, true
		}
	}
	return 0, false
}

func toDurablePartitions(tps []txn.TopicPartition) []durable.TxnPartition {
	out := make([]durable.TxnPartition, len(tps))
	for i, tp := range tps {
		out[i] = durable.TxnPartition{Topic: tp.Topic, Partition: tp.Partition}
	}
	return out
}

func fromDurablePartitions(tps []durable.TxnPartition) []txn.TopicPartition {
	out := make([]txn.TopicPartition, len(tps))
	for i, tp := range tps {
		out[i] = txn.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}
	}
	return out
}

func unixMilliTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// journalTxn writes one change of a transactional ID. A failed write is
// logged; the change stands in memory.
func (b *Broker) journalTxn(d *durable.Dir, r txn.Record) {
	var err error
	if r.Gone {
		err = d.DeleteTxn(r.TransactionalID)
	} else {
		st := durable.TxnState{TransactionalID: r.TransactionalID, ProducerID: r.ProducerID, PrevProducerID: r.PrevProducerID,
			Epoch: r.Epoch, State: r.State.String(), TimeoutMs: r.Timeout.Milliseconds(), StartedMs: unixMilliOrZero(r.Started),
			UpdatedMs: unixMilliOrZero(r.Updated), TV2: r.TV2, Partitions: toDurablePartitions(r.Partitions), Groups: r.Groups}
		if p := r.Pending; p != nil {
			st.Pending = &durable.TxnCompletion{ProducerID: p.ProducerID, Epoch: p.Epoch, Commit: p.Commit,
				Partitions: toDurablePartitions(p.Partitions), Groups: p.Groups}
		}
		err = d.SetTxn(st)
	}
	if err != nil {
		b.log.Warn("transaction state not recorded", "transactional_id", r.TransactionalID, "err", err)
	}
}

// restoreTxns gives the coordinator what the data directory kept and from
// then on has it write every change there. A prepared transaction is
// completed; the groups' pending commits were restored before, so a
// commit applies them. It returns the producer IDs whose transactions stay
// open.
func (b *Broker) restoreTxns(d *durable.Dir) (map[int64]bool, error) {
	var recs []txn.Record
	for id, st := range d.Txns() {
		s, ok := txnStateByName(st.State)
		if !ok {
			return nil, fmt.Errorf("data directory %s: transactional ID %s: state %q", b.cfg.DataDir, id, st.State)
		}
		r := txn.Record{TransactionalID: id, ProducerID: st.ProducerID, PrevProducerID: st.PrevProducerID, Epoch: st.Epoch,
			State: s, Timeout: time.Duration(st.TimeoutMs) * time.Millisecond, Started: unixMilliTime(st.StartedMs),
			Updated: unixMilliTime(st.UpdatedMs), TV2: st.TV2, Partitions: fromDurablePartitions(st.Partitions), Groups: st.Groups}
		if p := st.Pending; p != nil {
			r.Pending = &txn.Completion{TransactionalID: id, ProducerID: p.ProducerID, Epoch: p.Epoch, Commit: p.Commit,
				Partitions: fromDurablePartitions(p.Partitions), Groups: p.Groups}
		}
		recs = append(recs, r)
	}
	if err := b.txns.Restore(recs); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", b.cfg.DataDir, err)
	}
	b.txns.SetJournal(func(r txn.Record) { b.journalTxn(d, r) })
	b.txns.Resume()
	open := make(map[int64]bool)
	for pid := range b.txns.OngoingTransactions() {
		open[pid] = true
	}
	return open, nil
}
