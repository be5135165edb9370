package txn

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Persistence of the coordinator (docs/durability.md txn-state-kept): as
// Kafka's transaction coordinator writes a TransactionLogValue to
// __transaction_state on every change of a transactional ID — its
// producer ID and epoch, state, timeout, start time and partitions — this
// one hands a Record to Config.Journal, with its lock held so the records
// arrive in the order of the changes. A restarted coordinator is rebuilt
// from the last Record of each ID (Restore); a transaction caught in
// PrepareCommit or PrepareAbort is completed again (Resume), as Kafka's
// coordinator resends the markers of a prepared transaction when it loads
// one, and an Ongoing one is left to its timeout.

// Record is one transactional ID's state as persisted.
type Record struct {
	TransactionalID string
	ProducerID      int64
	PrevProducerID  int64 // -1 before any move to a new producer ID
	Epoch           int16
	State           State
	Timeout         time.Duration
	Started         time.Time // when the transaction became Ongoing
	Updated         time.Time
	TV2             bool
	Partitions      []TopicPartition // an Ongoing transaction's
	Groups          []string         // an Ongoing transaction's
	// Pending is what a PrepareCommit or PrepareAbort transaction must
	// still settle: its markers' producer ID and epoch, partitions and
	// groups.
	Pending *Completion
	// Gone: the ID expired (txn-id-expiry) and is forgotten.
	Gone bool
}

func sortedPartitions(m map[TopicPartition]struct{}) []TopicPartition {
	return slices.SortedFunc(maps.Keys(m), func(a, b TopicPartition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
}

// SetJournal makes every later change go to j (see Config.Journal). The
// broker calls it at start, after Restore and before it serves.
func (c *Coordinator) SetJournal(j func(Record)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg.Journal = j
}

// journalLocked hands t's state to the journal, if any; pending is the
// completion a Prepare state still owes.
func (c *Coordinator) journalLocked(t *txnState, pending *Completion) {
	if c.cfg.Journal == nil {
		return
	}
	r := Record{TransactionalID: t.id, ProducerID: t.producerID, PrevProducerID: t.prevProducerID, Epoch: t.epoch,
		State: t.state, Timeout: t.timeout, Started: t.started, Updated: t.updated, TV2: t.tv2}
	if t.state == Ongoing {
		r.Partitions = sortedPartitions(t.partitions)
		r.Groups = slices.Sorted(maps.Keys(t.groups))
	}
	if pending != nil {
		p := *pending
		r.Pending = &p
	}
	c.cfg.Journal(r)
}

// journalGoneLocked records that id is forgotten.
func (c *Coordinator) journalGoneLocked(id string) {
	if c.cfg.Journal != nil {
		c.cfg.Journal(Record{TransactionalID: id, Gone: true})
	}
}

// Restore rebuilds the coordinator from persisted records, one per ID,
// before it serves. It returns an error for a record no coordinator could
// have written.
func (c *Coordinator) Restore(recs []Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range recs {
		if r.Gone {
			continue
		}
		if r.State < Empty || r.State > CompleteAbort || (r.State == PrepareCommit || r.State == PrepareAbort) != (r.Pending != nil) {
			return fmt.Errorf("transactional ID %s: state %v with pending completion %v", r.TransactionalID, r.State, r.Pending != nil)
		}
		t := &txnState{id: r.TransactionalID, producerID: r.ProducerID, prevProducerID: r.PrevProducerID, epoch: r.Epoch,
			state: r.State, timeout: r.Timeout, started: r.Started, updated: r.Updated, tv2: r.TV2}
		if r.State == Ongoing {
			t.partitions = make(map[TopicPartition]struct{}, len(r.Partitions))
			for _, tp := range r.Partitions {
				t.partitions[tp] = struct{}{}
			}
			t.groups = make(map[string]struct{}, len(r.Groups))
			for _, g := range r.Groups {
				t.groups[g] = struct{}{}
			}
		}
		if r.Pending != nil {
			p := *r.Pending
			t.pending = &p
		}
		c.ids[t.id] = t
		c.byPID[t.producerID] = t
	}
	c.armCleanupLocked()
	return nil
}

// Resume completes every transaction restored in PrepareCommit or
// PrepareAbort: its markers and offsets are settled through Complete and
// it moves to CompleteCommit or CompleteAbort. Markers a partition already
// has are written again, as Kafka's coordinator does on load.
func (c *Coordinator) Resume() {
	c.mu.Lock()
	var todo []*txnState
	for _, id := range slices.Sorted(maps.Keys(c.ids)) {
		if t := c.ids[id]; t.pending != nil {
			todo = append(todo, t)
		}
	}
	c.mu.Unlock()
	for _, t := range todo {
		c.complete(t, *t.pending)
	}
}

// OngoingTxn is a restored Ongoing transaction, as the broker needs to
// know it at start.
type OngoingTxn struct {
	TransactionalID string
	Epoch           int16
}

// OngoingTransactions returns the Ongoing transactions by producer ID.
func (c *Coordinator) OngoingTransactions() map[int64]OngoingTxn {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[int64]OngoingTxn)
	for _, t := range c.ids {
		if t.state == Ongoing {
			out[t.producerID] = OngoingTxn{TransactionalID: t.id, Epoch: t.epoch}
		}
	}
	return out
}
