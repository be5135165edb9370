package txn

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

// State is a transactional ID's transaction state.
type State int8

// States of a transaction (docs/transactions.md "The transaction").
const (
	Empty State = iota + 1
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
)

// String returns Kafka's name for the state, as ListTransactions and
// DescribeTransactions report it.
func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case Ongoing:
		return "Ongoing"
	case PrepareCommit:
		return "PrepareCommit"
	case PrepareAbort:
		return "PrepareAbort"
	case CompleteCommit:
		return "CompleteCommit"
	case CompleteAbort:
		return "CompleteAbort"
	}
	return "Unknown"
}

// maxEpoch: an epoch at or above it is exhausted (epoch-exhausted). Kafka's
// TransactionMetadata.isProducerEpochExhausted keeps one below the int16
// maximum so that a bump on timeout still fits.
const maxEpoch = math.MaxInt16 - 1

// TopicPartition names one partition in a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Completion is one transaction to settle: a marker into every partition,
// pending offsets of every group applied (Commit) or dropped.
type Completion struct {
	TransactionalID string
	ProducerID      int64
	Epoch           int16 // the epoch the markers carry
	Commit          bool
	Partitions      []TopicPartition // sorted
	Groups          []string         // sorted
}

// Config configures a Coordinator.
type Config struct {
	Clock locktimer.Clock
	// MaxTimeout is transaction.max.timeout.ms.
	MaxTimeout time.Duration
	// CleanupInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms: how often
	// timed-out transactions are aborted and idle IDs forgotten.
	CleanupInterval time.Duration
	// IDExpiration is transactional.id.expiration.ms.
	IDExpiration time.Duration
	// NewProducerID hands out a producer ID never used before; the broker
	// shares it with idempotent producers.
	NewProducerID func() int64
	// Complete writes a transaction's markers and settles its offsets. It
	// is called with no coordinator lock held.
	Complete func(Completion)
	// Journal, when set, is given each change of a transactional ID's
	// state with the coordinator lock held (journal.go); nil keeps the
	// state in memory only.
	Journal func(Record)
}

// Coordinator is the transaction coordinator. It is safe for concurrent
// use; mu is never held while Complete runs.
type Coordinator struct {
	cfg Config

	mu      sync.Mutex // guards the fields below
	ids     map[string]*txnState
	byPID   map[int64]*txnState // current producer ID of each ID
	cleanup locktimer.Timer     // armed while any ID exists, so an idle broker has no timer
	closed  bool
}

// txnState is one transactional ID, guarded by Coordinator.mu.
type txnState struct {
	id         string
	producerID int64
	epoch      int16
	// prevProducerID is the producer ID before the last move to a new one
	// (epoch-exhausted), so that a retried EndTxn of the transaction that
	// moved it is recognised (end-txn-bump); -1 before any move.
	prevProducerID int64
	timeout        time.Duration
	state          State
	started        time.Time // when the transaction became Ongoing
	updated        time.Time // last change, for txn-id-expiry
	partitions     map[TopicPartition]struct{}
	groups         map[string]struct{}
	// tv2: the ongoing transaction was joined through transaction version
	// 2's implicit adds, so fencing it raises the epoch twice (fence).
	tv2 bool
	// pending is what a transaction restored in a Prepare state still
	// has to settle (Resume); nil otherwise.
	pending *Completion
}

// New returns a coordinator. Its periodic clean-up runs while it knows any
// transactional ID.
func New(cfg Config) *Coordinator {
	return &Coordinator{cfg: cfg, ids: make(map[string]*txnState), byPID: make(map[int64]*txnState)}
}

// Close stops the periodic clean-up.
func (c *Coordinator) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.cleanup != nil {
		c.cleanup.Stop()
	}
}

func (c *Coordinator) armCleanupLocked() {
	if c.closed || c.cleanup != nil || c.cfg.CleanupInterval <= 0 || len(c.ids) == 0 {
		return
	}
	c.cleanup = c.cfg.Clock.AfterFunc(c.cfg.CleanupInterval, func() {
		c.AbortTimedOut()
		c.mu.Lock()
		c.cleanup = nil
		c.armCleanupLocked()
		c.mu.Unlock()
	})
}

// InitProducerID handles InitProducerId for a transactional ID
// (init-transactional, init-timeout, init-concurrent, epoch-exhausted).
// producerID and epoch are what a v3+ client sends, -1 otherwise. A
// transaction left open is aborted, its markers written, before it returns.
func (c *Coordinator) InitProducerID(id string, timeout time.Duration, producerID int64, epoch int16) (int64, int16, error) {
	if timeout <= 0 || timeout > c.cfg.MaxTimeout {
		return -1, -1, fmt.Errorf("%w: %v, transaction.max.timeout.ms is %v", ErrInvalidTimeout, timeout, c.cfg.MaxTimeout)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return -1, -1, ErrCoordinatorClosed
	}
	now := c.cfg.Clock.Now()
	t := c.ids[id]
	if t == nil {
		t = &txnState{id: id, producerID: c.cfg.NewProducerID(), prevProducerID: -1, epoch: 0, state: Empty, timeout: timeout, updated: now}
		c.ids[id] = t
		c.byPID[t.producerID] = t
		c.armCleanupLocked()
		c.journalLocked(t, nil)
		c.mu.Unlock()
		return t.producerID, t.epoch, nil
	}
	switch {
	case t.state == PrepareCommit || t.state == PrepareAbort:
		c.mu.Unlock()
		return -1, -1, fmt.Errorf("%w: transaction of %s is completing", ErrConcurrentTransactions, id)
	case producerID >= 0 && (producerID != t.producerID || epoch != t.epoch):
		// KIP-360: a client that names its ID and epoch must hold the
		// current ones, else an newer producer took over.
		c.mu.Unlock()
		return -1, -1, fmt.Errorf("%w: %s is producer %d epoch %d, not %d epoch %d", ErrProducerFenced, id, t.producerID, t.epoch, producerID, epoch)
	}
	t.timeout = timeout
	t.updated = now
	if t.state != Ongoing {
		c.bumpLocked(t)
		t.state = Empty
		c.journalLocked(t, nil)
		c.mu.Unlock()
		return t.producerID, t.epoch, nil
	}
	comp := c.fenceLocked(t)
	pid, epoch := t.producerID, t.epoch
	c.mu.Unlock()
	c.complete(t, comp)
	c.mu.Lock()
	t.state = Empty
	c.journalLocked(t, nil)
	c.mu.Unlock()
	return pid, epoch, nil
}

// fenceLocked aborts t's ongoing transaction and raises its epoch. The
// markers go to the producer ID the partitions know, at the raised epoch
// so the old producer is fenced there too; when the epoch is exhausted they
// keep the last epoch and t moves to a new producer ID.
//
// A transaction of transaction version 2 has its epoch raised twice, as
// Kafka's fence followed by its abort does there: raised once, the fenced
// producer's own EndTxn, one epoch back, would pass for the retry of an
// EndTxn that raised it (end-txn-bump) instead of being fenced.
func (c *Coordinator) fenceLocked(t *txnState) Completion {
	raises := 1
	if t.tv2 {
		raises = 2
	}
	comp := c.prepareLocked(t, false)
	for range raises {
		if t.producerID != comp.ProducerID {
			break // moved to a new producer ID: the old one is fenced for good
		}
		if t.epoch < maxEpoch {
			comp.Epoch = t.epoch + 1
		}
		c.bumpLocked(t)
	}
	c.journalLocked(t, &comp)
	return comp
}

// bumpLocked raises t's epoch, or moves it to a new producer ID at epoch 0
// when the epoch is exhausted (epoch-exhausted).
func (c *Coordinator) bumpLocked(t *txnState) {
	if t.epoch < maxEpoch {
		t.epoch++
		return
	}
	delete(c.byPID, t.producerID)
	t.prevProducerID = t.producerID
	t.producerID, t.epoch = c.cfg.NewProducerID(), 0
	c.byPID[t.producerID] = t
}

// prepareLocked moves an Ongoing transaction to PrepareCommit or
// PrepareAbort and returns what Complete must settle.
func (c *Coordinator) prepareLocked(t *txnState, commit bool) Completion {
	t.state = PrepareAbort
	if commit {
		t.state = PrepareCommit
	}
	comp := Completion{
		TransactionalID: t.id,
		ProducerID:      t.producerID,
		Epoch:           t.epoch,
		Commit:          commit,
		Partitions:      sortedPartitions(t.partitions),
		Groups:          slices.Sorted(maps.Keys(t.groups)),
	}
	t.partitions, t.groups = nil, nil
	return comp
}

// complete runs the Complete callback and marks the transaction complete.
func (c *Coordinator) complete(t *txnState, comp Completion) {
	if c.cfg.Complete != nil {
		c.cfg.Complete(comp)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t.state = CompleteAbort
	if comp.Commit {
		t.state = CompleteCommit
	}
	t.updated = c.cfg.Clock.Now()
	t.pending = nil
	c.journalLocked(t, nil)
}

// checkLocked finds id and checks that producerID and epoch are its
// current ones (fenced) and that no transaction is completing.
func (c *Coordinator) checkLocked(id string, producerID int64, epoch int16) (*txnState, error) {
	if c.closed {
		return nil, ErrCoordinatorClosed
	}
	t := c.ids[id]
	switch {
	case t == nil || t.producerID != producerID:
		return nil, fmt.Errorf("%w: transactional ID %s is not producer %d", ErrInvalidProducerIDMapping, id, producerID)
	case epoch < t.epoch:
		return nil, fmt.Errorf("%w: %s is at epoch %d, request has %d", ErrProducerFenced, id, t.epoch, epoch)
	case epoch != t.epoch:
		// A newer epoch than we ever gave out: Kafka answers this as
		// fenced too (TransactionCoordinator checks for equality).
		return nil, fmt.Errorf("%w: %s is at epoch %d, request has %d", ErrProducerFenced, id, t.epoch, epoch)
	case t.state == PrepareCommit || t.state == PrepareAbort:
		return nil, fmt.Errorf("%w: transaction of %s is completing", ErrConcurrentTransactions, id)
	}
	return t, nil
}

// beginLocked starts a transaction if none is ongoing, for a request that
// adds to it; tv2 tells whether that request is one of transaction version
// 2's implicit adds, which makes the transaction one of version 2. An add
// of what the transaction holds already changes nothing, not even that.
func (c *Coordinator) beginLocked(t *txnState, tv2 bool) {
	if tv2 {
		t.tv2 = true
	}
	if t.state == Ongoing {
		return
	}
	t.state = Ongoing
	t.tv2 = tv2
	t.started = c.cfg.Clock.Now()
	t.partitions = make(map[TopicPartition]struct{})
	t.groups = make(map[string]struct{})
}

// AddPartitions adds partitions to id's transaction, starting it if needed
// (add-partitions). The caller has checked that they exist.
func (c *Coordinator) AddPartitions(id string, producerID int64, epoch int16, parts []TopicPartition) error {
	return c.add(id, producerID, epoch, func(t *txnState) {
		for _, tp := range parts {
			t.partitions[tp] = struct{}{}
		}
	})
}

// AddGroup adds a group's offsets to id's transaction (add-offsets).
func (c *Coordinator) AddGroup(id string, producerID int64, epoch int16, group string) error {
	return c.add(id, producerID, epoch, func(t *txnState) { t.groups[group] = struct{}{} })
}

// add is what adding anything to a transaction does: check the producer,
// begin the transaction if it is not running, hand it to into to add what
// joins it, and journal the result.
func (c *Coordinator) add(id string, producerID int64, epoch int16, into func(*txnState)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.checkLocked(id, producerID, epoch)
	if err != nil {
		return err
	}
	c.beginLocked(t, false)
	into(t)
	t.updated = c.cfg.Clock.Now()
	c.journalLocked(t, nil)
	return nil
}

// CheckOffsetCommit checks a TxnOffsetCommit against id's transaction: the
// producer must be current and the group added (txn-offset-commit). With
// add (transaction version 2, TxnOffsetCommit v5+) the commit adds the
// group itself, starting the transaction if none is ongoing
// (txn-offset-commit-implicit).
func (c *Coordinator) CheckOffsetCommit(id string, producerID int64, epoch int16, group string, add bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.checkLocked(id, producerID, epoch)
	if err != nil {
		return err
	}
	if _, ok := t.groups[group]; add && (t.state != Ongoing || !ok) {
		c.beginLocked(t, true)
		t.groups[group] = struct{}{}
		t.updated = c.cfg.Clock.Now()
		c.journalLocked(t, nil)
	}
	if _, ok := t.groups[group]; t.state != Ongoing || !ok {
		return fmt.Errorf("%w: group %s was not added to the transaction of %s", ErrInvalidTxnState, group, id)
	}
	return nil
}

// CheckProduce checks a transactional batch from producerID at epoch for
// tp: the producer must be a transactional ID's current one and tp in its
// ongoing transaction (add-partitions). An old epoch is ErrProducerFenced,
// a transaction completing ErrConcurrentTransactions. With add
// (transaction version 2, Produce v12+) tp is added if it is not in the
// transaction yet, which starts one if none is ongoing (produce-implicit-add).
func (c *Coordinator) CheckProduce(producerID int64, epoch int16, tp TopicPartition, add bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.byPID[producerID]
	switch {
	case t == nil:
		return fmt.Errorf("%w: producer %d has no transactional ID", ErrInvalidTxnState, producerID)
	case epoch != t.epoch:
		return fmt.Errorf("%w: producer %d is at epoch %d, batch has %d", ErrProducerFenced, producerID, t.epoch, epoch)
	case t.state == PrepareCommit || t.state == PrepareAbort:
		return fmt.Errorf("%w: transaction of %s is completing", ErrConcurrentTransactions, t.id)
	}
	if _, ok := t.partitions[tp]; add && (t.state != Ongoing || !ok) {
		c.beginLocked(t, true)
		t.partitions[tp] = struct{}{}
		t.updated = c.cfg.Clock.Now()
		c.journalLocked(t, nil)
	}
	if _, ok := t.partitions[tp]; t.state != Ongoing || !ok {
		return fmt.Errorf("%w: %s-%d was not added to the transaction of %s", ErrInvalidTxnState, tp.Topic, tp.Partition, t.id)
	}
	return nil
}

// EndTxn commits or aborts id's transaction (end-txn): the markers are
// written and the offsets settled before it returns. A repeat of the
// decision just completed succeeds. With bump (transaction version 2,
// EndTxn v5) the epoch rises with every transaction instead
// (end-txn-bump). It returns the producer ID and epoch the producer goes
// on with.
func (c *Coordinator) EndTxn(id string, producerID int64, epoch int16, commit, bump bool) (int64, int16, error) {
	if bump {
		return c.endTxnBumping(id, producerID, epoch, commit)
	}
	c.mu.Lock()
	t, err := c.checkLocked(id, producerID, epoch)
	if err != nil {
		c.mu.Unlock()
		return -1, -1, err
	}
	switch {
	case t.state == CompleteCommit && commit, t.state == CompleteAbort && !commit:
		c.mu.Unlock()
		return producerID, epoch, nil
	case t.state != Ongoing:
		c.mu.Unlock()
		return -1, -1, fmt.Errorf("%w: %s has no transaction ongoing (state %s)", ErrInvalidTxnState, id, t.state)
	}
	comp := c.prepareLocked(t, commit)
	c.journalLocked(t, &comp)
	c.mu.Unlock()
	c.complete(t, comp)
	return producerID, epoch, nil
}

// endTxnBumping is EndTxn under transaction version 2 (end-txn-bump): every
// commit or abort raises the epoch, the markers carry the raised one, and
// the answer hands it to the producer. So a request at the epoch below the
// current one is the retry of the EndTxn that raised it, and one at the
// current epoch in a completed state is the next transaction's. An abort
// with no transaction ongoing is allowed: the producer may not know whether
// its produces started one, since they add partitions themselves.
func (c *Coordinator) endTxnBumping(id string, producerID int64, epoch int16, commit bool) (int64, int16, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return -1, -1, ErrCoordinatorClosed
	}
	t := c.ids[id]
	if t == nil {
		c.mu.Unlock()
		return -1, -1, fmt.Errorf("%w: transactional ID %s is not producer %d", ErrInvalidProducerIDMapping, id, producerID)
	}
	// The EndTxn that exhausted the epoch moved the ID to a new producer
	// at epoch 0; its retry still names the old producer at the last epoch.
	retryAfterMove := t.prevProducerID == producerID && producerID != t.producerID && epoch == maxEpoch && t.epoch == 0
	retry := retryAfterMove || producerID == t.producerID && int(t.epoch) == int(epoch)+1
	if producerID != t.producerID && !retryAfterMove {
		c.mu.Unlock()
		return -1, -1, fmt.Errorf("%w: transactional ID %s is not producer %d", ErrInvalidProducerIDMapping, id, producerID)
	}
	current := epoch == t.epoch && producerID == t.producerID
	completing := t.state == PrepareCommit || t.state == PrepareAbort
	completed := t.state == CompleteCommit || t.state == CompleteAbort
	if !(current && !completing || retry && (completing || completed)) {
		c.mu.Unlock()
		return -1, -1, fmt.Errorf("%w: %s is producer %d at epoch %d, request has %d at %d", ErrProducerFenced, id, t.producerID, t.epoch, producerID, epoch)
	}
	sameDecision := commit == (t.state == PrepareCommit || t.state == CompleteCommit)
	var comp Completion
	switch {
	case completing && sameDecision:
		c.mu.Unlock()
		return -1, -1, fmt.Errorf("%w: transaction of %s is completing", ErrConcurrentTransactions, id)
	case t.state == Ongoing:
		comp = c.prepareLocked(t, commit)
	case retry && completed && sameDecision:
		pid, e := t.producerID, t.epoch
		c.mu.Unlock()
		return pid, e, nil
	case commit || retry || completing:
		c.mu.Unlock()
		return -1, -1, fmt.Errorf("%w: %s cannot %s in state %s", ErrInvalidTxnState, id, decision(commit), t.state)
	default: // an abort with nothing ongoing: nothing to mark, the epoch still rises
		comp = c.prepareLocked(t, false)
	}
	// The markers carry the raised epoch under the producer ID the
	// partitions know, even when raising it exhausts the epoch and the ID
	// moves to a new producer.
	comp.Epoch = t.epoch + 1 // fits: epochs stop at maxEpoch, one below the int16 maximum
	c.bumpLocked(t)
	c.journalLocked(t, &comp)
	pid, e := t.producerID, t.epoch
	c.mu.Unlock()
	c.complete(t, comp)
	return pid, e, nil
}

func decision(commit bool) string {
	if commit {
		return "commit"
	}
	return "abort"
}

// AbortTimedOut aborts every transaction Ongoing for longer than its
// timeout, raising its epoch so the producer is fenced (txn-timeout), and
// forgets IDs idle for longer than IDExpiration (txn-id-expiry). The clean-up
// timer calls it every CleanupInterval.
func (c *Coordinator) AbortTimedOut() {
	c.mu.Lock()
	now := c.cfg.Clock.Now()
	type abort struct {
		t    *txnState
		comp Completion
	}
	var aborts []abort
	for _, id := range slices.Sorted(maps.Keys(c.ids)) {
		t := c.ids[id]
		switch t.state {
		case Ongoing:
			if now.Sub(t.started) > t.timeout {
				aborts = append(aborts, abort{t, c.fenceLocked(t)})
			}
		case Empty, CompleteCommit, CompleteAbort:
			if c.cfg.IDExpiration > 0 && now.Sub(t.updated) >= c.cfg.IDExpiration {
				delete(c.ids, id)
				delete(c.byPID, t.producerID)
				c.journalGoneLocked(id)
			}
		}
	}
	c.mu.Unlock()
	for _, a := range aborts {
		c.complete(a.t, a.comp)
	}
}

// Description is one transactional ID as DescribeTransactions and
// ListTransactions report it.
type Description struct {
	TransactionalID string
	State           State
	ProducerID      int64
	Epoch           int16
	Timeout         time.Duration
	// Started is when the ongoing transaction began; zero if none.
	Started    time.Time
	Partitions []TopicPartition
}

// Describe reports one ID (describe-transactions).
func (c *Coordinator) Describe(id string) (Description, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.ids[id]
	if t == nil {
		return Description{}, fmt.Errorf("%w: %s", ErrTransactionalIDNotFound, id)
	}
	return t.describeLocked(), nil
}

// List reports every ID, sorted (list-transactions).
func (c *Coordinator) List() []Description {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Description, 0, len(c.ids))
	for _, id := range slices.Sorted(maps.Keys(c.ids)) {
		out = append(out, c.ids[id].describeLocked())
	}
	return out
}

func (t *txnState) describeLocked() Description {
	d := Description{TransactionalID: t.id, State: t.state, ProducerID: t.producerID, Epoch: t.epoch, Timeout: t.timeout}
	if t.state == Ongoing {
		d.Started = t.started
	}
	for tp := range t.partitions {
		d.Partitions = append(d.Partitions, tp)
	}
	sort.Slice(d.Partitions, func(i, j int) bool {
		a, b := d.Partitions[i], d.Partitions[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	return d
}
