package durable

import (
	"maps"
	"slices"
)

// Transaction coordinator state in the metadata log, one record per change
// of a transactional ID as Kafka's TransactionLogValue in
// __transaction_state: the last record of an ID is its state
// (docs/durability.md txn-state-kept).

// TxnPartition is a partition in a transaction.
type TxnPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// TxnCompletion is what a prepared transaction still has to settle: the
// markers' producer ID and epoch, the decision, partitions and groups.
type TxnCompletion struct {
	ProducerID int64          `json:"producer_id"`
	Epoch      int16          `json:"epoch"`
	Commit     bool           `json:"commit,omitempty"`
	Partitions []TxnPartition `json:"partitions,omitempty"`
	Groups     []string       `json:"groups,omitempty"`
}

// TxnState is one transactional ID's persisted state. State is Kafka's
// name for it (Empty, Ongoing, PrepareCommit, …).
type TxnState struct {
	TransactionalID string         `json:"transactional_id"`
	ProducerID      int64          `json:"producer_id"`
	PrevProducerID  int64          `json:"prev_producer_id"`
	Epoch           int16          `json:"epoch"`
	State           string         `json:"state"`
	TimeoutMs       int64          `json:"timeout_ms"`
	StartedMs       int64          `json:"started_ms,omitempty"`
	UpdatedMs       int64          `json:"updated_ms"`
	TV2             bool           `json:"tv2,omitempty"`
	Partitions      []TxnPartition `json:"partitions,omitempty"`
	Groups          []string       `json:"groups,omitempty"`
	Pending         *TxnCompletion `json:"pending,omitempty"`
}

// SetTxn records a transactional ID's state.
func (d *Dir) SetTxn(st TxnState) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.meta.append(metaRecord{Op: opTxn, Txn: &st})
}

// DeleteTxn records that a transactional ID expired.
func (d *Dir) DeleteTxn(id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.meta.append(metaRecord{Op: opTxnDelete, Name: id})
}

// Txns returns the transactional IDs recovered, by ID.
func (d *Dir) Txns() map[string]TxnState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.txns)
}

func replayTxn(m map[string]TxnState, r metaRecord) {
	switch {
	case r.Op == opTxnDelete:
		delete(m, r.Name)
	case r.Txn != nil:
		m[r.Txn.TransactionalID] = *r.Txn
	}
}

func appendTxns(b []byte, m map[string]TxnState) []byte {
	for _, id := range slices.Sorted(maps.Keys(m)) {
		st := m[id]
		b = appendMetaRecord(b, metaRecord{Op: opTxn, Txn: &st})
	}
	return b
}
