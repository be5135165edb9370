package persist

import (
	"time"

	"github.com/sharebroker/sharebroker/durable"
	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/txn"
)

// Transaction coordinator state in the data directory (docs/durability.md
// txn-state-kept): restored before the logs' open transactions are looked
// at, so that a transaction the coordinator still has Ongoing stays open
// and is aborted by its timeout, as Kafka's would be.

// restoreTxns gives the coordinator what the data directory kept and from
// then on has it write every change there. A prepared transaction is
// completed; the groups' pending commits were restored before, so a
// commit applies them. It returns the producer IDs whose transactions stay
// open.
func (b *Binding) restoreTxns(d *durable.Dir) (map[int64]bool, error) {
	var recs []txn.Record
	for id, st := range d.Txns() {
		r, ok := fromDurableTxn(id, st)
		if !ok {
			return nil, b.errorf("transactional ID %s: state %q", id, st.State)
		}
		recs = append(recs, r)
	}
	if err := b.st.Txns.Restore(recs); err != nil {
		return nil, b.errorf("%w", err)
	}
	b.st.Txns.SetJournal(func(r txn.Record) { b.journalTxn(d, r) })
	b.st.Txns.Resume()
	open := make(map[int64]bool)
	for pid := range b.st.Txns.OngoingTransactions() {
		open[pid] = true
	}
	return open, nil
}

// journalTxn writes one change of a transactional ID. A failed write is
// logged; the change stands in memory.
func (b *Binding) journalTxn(d *durable.Dir, r txn.Record) {
	var err error
	if r.Gone {
		err = d.DeleteTxn(r.TransactionalID)
	} else {
		err = d.SetTxn(toDurableTxn(r))
	}
	if err != nil {
		b.cfg.Log.Warn("transaction state not recorded", "transactional_id", r.TransactionalID, "err", err)
	}
}

// abortOpenTxns ends with an ABORT marker every transaction left open in a
// restored log whose producer ID the coordinator does not hold open (keep;
// abort-open-at-recovery).
func (b *Binding) abortOpenTxns(keep map[int64]bool) {
	nowMs := b.cfg.Clock.Now().UnixMilli()
	for _, t := range b.st.Store.Topics() {
		for _, p := range t.Partitions() {
			for pid, epoch := range p.OpenTransactions() {
				if keep[pid] {
					continue
				}
				off := p.AppendMarker(storage.MarkerOptions{ProducerID: pid, ProducerEpoch: epoch, NowMs: nowMs})
				b.cfg.Log.Info("transaction open at recovery aborted", attrTopic, t.Name, attrPartition, p.Index,
					"producer_id", pid, "marker_offset", off)
			}
		}
	}
}

func toDurableTxn(r txn.Record) durable.TxnState {
	st := durable.TxnState{TransactionalID: r.TransactionalID, ProducerID: r.ProducerID, PrevProducerID: r.PrevProducerID,
		Epoch: r.Epoch, State: r.State.String(), TimeoutMs: r.Timeout.Milliseconds(), StartedMs: unixMilliOrZero(r.Started),
		UpdatedMs: unixMilliOrZero(r.Updated), TV2: r.TV2, Partitions: toDurablePartitions(r.Partitions), Groups: r.Groups}
	if p := r.Pending; p != nil {
		st.Pending = &durable.TxnCompletion{ProducerID: p.ProducerID, Epoch: p.Epoch, Commit: p.Commit,
			Partitions: toDurablePartitions(p.Partitions), Groups: p.Groups}
	}
	return st
}

// fromDurableTxn is the record of transactional ID id that st kept; false
// for a state this broker does not know by name.
func fromDurableTxn(id string, st durable.TxnState) (txn.Record, bool) {
	s, ok := txnStateByName(st.State)
	if !ok {
		return txn.Record{}, false
	}
	r := txn.Record{TransactionalID: id, ProducerID: st.ProducerID, PrevProducerID: st.PrevProducerID, Epoch: st.Epoch,
		State: s, Timeout: time.Duration(st.TimeoutMs) * time.Millisecond, Started: unixMilliTime(st.StartedMs),
		Updated: unixMilliTime(st.UpdatedMs), TV2: st.TV2, Partitions: fromDurablePartitions(st.Partitions), Groups: st.Groups}
	if p := st.Pending; p != nil {
		r.Pending = &txn.Completion{TransactionalID: id, ProducerID: p.ProducerID, Epoch: p.Epoch, Commit: p.Commit,
			Partitions: fromDurablePartitions(p.Partitions), Groups: p.Groups}
	}
	return r, true
}

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
