package broker

import (
	"time"

	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/txn"
)

// newTxnCoordinator builds the transaction coordinator on the broker clock.
// It shares producer IDs with idempotent producers, and settles a finished
// transaction by appending a marker to each of its partitions, then applying
// or dropping each group's pending offsets (end-txn).
func (b *Broker) newTxnCoordinator() *txn.Coordinator {
	ms := func(name string) time.Duration {
		return time.Duration(b.cfg.props.Int64(name)) * time.Millisecond
	}
	return txn.New(txn.Config{
		Clock:           b.clock,
		MaxTimeout:      ms("transaction.max.timeout.ms"),
		CleanupInterval: ms("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
		IDExpiration:    ms("transactional.id.expiration.ms"),
		NewProducerID:   b.newProducerID,
		Complete:        b.completeTxn,
	})
}

// completeTxn writes c's markers and settles its offsets. A partition
// deleted since it was added gets no marker.
func (b *Broker) completeTxn(c txn.Completion) {
	nowMs := b.clock.Now().UnixMilli()
	for _, tp := range c.Partitions {
		t := b.store.Topic(tp.Topic)
		if t == nil {
			continue
		}
		if p := t.Partition(tp.Partition); p != nil {
			p.AppendMarker(storage.MarkerOptions{
				ProducerID:    c.ProducerID,
				ProducerEpoch: c.Epoch,
				Commit:        c.Commit,
				NowMs:         nowMs,
			})
		}
	}
	for _, g := range c.Groups {
		// The group is of one kind at a time; the other coordinator
		// finds nothing to settle.
		b.classicGroups.CompleteTxn(g, c.ProducerID, c.Commit)
		b.consumerGroups.CompleteTxn(g, c.ProducerID, c.Commit)
	}
	b.log.Debug("transaction completed", "transactional_id", c.TransactionalID,
		"producer_id", c.ProducerID, "commit", c.Commit, "partitions", len(c.Partitions))
}

// txnVersion2 reports whether transaction.version is finalized at 2 now
// (UpdateFeatures may change it), where
// Produce v12+, TxnOffsetCommit v5+ and EndTxn v5 follow KIP-890's rules
// (produce-implicit-add, txn-offset-commit-implicit, end-txn-bump).
func (b *Broker) txnVersion2() bool { return b.features.TransactionsV2() }
