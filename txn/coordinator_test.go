package txn

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

type fixture struct {
	c     *Coordinator
	clock *locktimer.ManualClock
	mu    sync.Mutex
	done  []Completion
	next  int64
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{clock: locktimer.NewManualClock(time.Unix(1_700_000_000, 0)), next: 1000}
	f.c = New(Config{
		Clock:           f.clock,
		MaxTimeout:      15 * time.Minute,
		CleanupInterval: 10 * time.Second,
		IDExpiration:    7 * 24 * time.Hour,
		NewProducerID: func() int64 {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.next++
			return f.next - 1
		},
		Complete: func(c Completion) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.done = append(f.done, c)
		},
	})
	t.Cleanup(f.c.Close)
	return f
}

func (f *fixture) completions() []Completion {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Completion(nil), f.done...)
}

func mustInit(t *testing.T, c *Coordinator, id string) (int64, int16) {
	t.Helper()
	pid, epoch, err := c.InitProducerID(id, time.Minute, -1, -1)
	if err != nil {
		t.Fatalf("InitProducerID(%s): %v", id, err)
	}
	return pid, epoch
}

var tp0 = TopicPartition{"a", 0}

// init-transactional, fenced
func TestInitBumpsEpochAndFences(t *testing.T) {
	f := newFixture(t)
	pid, epoch := mustInit(t, f.c, "t1")
	if epoch != 0 {
		t.Fatalf("first epoch = %d, want 0", epoch)
	}
	pid2, epoch2 := mustInit(t, f.c, "t1")
	if pid2 != pid || epoch2 != 1 {
		t.Fatalf("second init = %d/%d, want %d/1", pid2, epoch2, pid)
	}
	if err := f.c.AddPartitions("t1", pid, 0, []TopicPartition{tp0}); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("old epoch AddPartitions: %v, want ErrProducerFenced", err)
	}
	if err := f.c.AddPartitions("t1", pid+7, 1, []TopicPartition{tp0}); !errors.Is(err, ErrInvalidProducerIDMapping) {
		t.Fatalf("wrong producer ID: %v, want ErrInvalidProducerIDMapping", err)
	}
	if err := f.c.CheckProduce(pid, 0, tp0, false); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("old epoch produce: %v", err)
	}
}

// init-transactional: an open transaction is aborted before the answer.
func TestInitAbortsOpenTransaction(t *testing.T) {
	f := newFixture(t)
	pid, epoch := mustInit(t, f.c, "t1")
	if err := f.c.AddPartitions("t1", pid, epoch, []TopicPartition{tp0}); err != nil {
		t.Fatal(err)
	}
	_, epoch2 := mustInit(t, f.c, "t1")
	done := f.completions()
	if len(done) != 1 || done[0].Commit || done[0].Epoch != epoch2 || len(done[0].Partitions) != 1 {
		t.Fatalf("completions = %+v, want one abort at epoch %d", done, epoch2)
	}
	if d, _ := f.c.Describe("t1"); d.State != Empty {
		t.Fatalf("state = %v, want Empty", d.State)
	}
}

// init-timeout
func TestInitTimeout(t *testing.T) {
	f := newFixture(t)
	if _, _, err := f.c.InitProducerID("t1", 16*time.Minute, -1, -1); !errors.Is(err, ErrInvalidTimeout) {
		t.Fatalf("err = %v, want ErrInvalidTimeout", err)
	}
}

// init-concurrent: InitProducerId while markers are written.
func TestInitConcurrent(t *testing.T) {
	f := newFixture(t)
	var inner error
	f.c.cfg.Complete = func(Completion) {
		_, _, inner = f.c.InitProducerID("t1", time.Minute, -1, -1)
	}
	pid, epoch := mustInit(t, f.c, "t1")
	if err := f.c.AddPartitions("t1", pid, epoch, []TopicPartition{tp0}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.c.EndTxn("t1", pid, epoch, true, false); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(inner, ErrConcurrentTransactions) {
		t.Fatalf("init during completion: %v, want ErrConcurrentTransactions", inner)
	}
}

// epoch-exhausted
func TestEpochExhausted(t *testing.T) {
	f := newFixture(t)
	pid, _ := mustInit(t, f.c, "t1")
	f.c.mu.Lock()
	f.c.ids["t1"].epoch = maxEpoch
	f.c.mu.Unlock()
	pid2, epoch2 := mustInit(t, f.c, "t1")
	if pid2 == pid || epoch2 != 0 {
		t.Fatalf("after exhaustion: %d/%d, want a new ID at epoch 0", pid2, epoch2)
	}
	if err := f.c.CheckProduce(pid, maxEpoch, tp0, false); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("old producer ID produce: %v", err)
	}
}

// add-partitions, end-txn
func TestEndTxn(t *testing.T) {
	f := newFixture(t)
	pid, epoch := mustInit(t, f.c, "t1")
	if _, _, err := f.c.EndTxn("t1", pid, epoch, true, false); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("EndTxn without transaction: %v", err)
	}
	if err := f.c.CheckProduce(pid, epoch, tp0, false); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("produce to a partition not added: %v", err)
	}
	if err := f.c.AddPartitions("t1", pid, epoch, []TopicPartition{tp0, {"b", 2}}); err != nil {
		t.Fatal(err)
	}
	if err := f.c.AddGroup("t1", pid, epoch, "g"); err != nil {
		t.Fatal(err)
	}
	if err := f.c.CheckProduce(pid, epoch, tp0, false); err != nil {
		t.Fatalf("produce to an added partition: %v", err)
	}
	if err := f.c.CheckOffsetCommit("t1", pid, epoch, "g", false); err != nil {
		t.Fatal(err)
	}
	if err := f.c.CheckOffsetCommit("t1", pid, epoch, "other", false); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("commit for a group not added: %v", err)
	}
	if _, _, err := f.c.EndTxn("t1", pid, epoch, true, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.c.EndTxn("t1", pid, epoch, true, false); err != nil {
		t.Fatalf("retried commit: %v", err)
	}
	if _, _, err := f.c.EndTxn("t1", pid, epoch, false, false); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("abort after commit: %v", err)
	}
	done := f.completions()
	if len(done) != 1 || !done[0].Commit || len(done[0].Partitions) != 2 || len(done[0].Groups) != 1 {
		t.Fatalf("completions = %+v", done)
	}
	if d, _ := f.c.Describe("t1"); d.State != CompleteCommit {
		t.Fatalf("state = %v", d.State)
	}
}

// txn-timeout, txn-id-expiry
func TestTimeoutAbortsWithEpochBump(t *testing.T) {
	f := newFixture(t)
	pid, epoch := mustInit(t, f.c, "t1")
	if err := f.c.AddPartitions("t1", pid, epoch, []TopicPartition{tp0}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	if n := len(f.completions()); n != 0 {
		t.Fatalf("%d completions at exactly the timeout", n)
	}
	f.clock.Advance(10 * time.Second)
	done := f.completions()
	if len(done) != 1 || done[0].Commit || done[0].Epoch != epoch+1 {
		t.Fatalf("completions = %+v, want one abort at epoch %d", done, epoch+1)
	}
	if _, _, err := f.c.EndTxn("t1", pid, epoch, true, false); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("EndTxn after timeout: %v, want ErrProducerFenced", err)
	}
	f.clock.Advance(7 * 24 * time.Hour)
	if _, err := f.c.Describe("t1"); !errors.Is(err, ErrTransactionalIDNotFound) {
		t.Fatalf("after expiry: %v", err)
	}
	if n := f.clock.Pending(); n != 0 {
		t.Fatalf("%d timers pending with no ID left", n)
	}
}

// epoch-exhausted with a transaction open: its ABORT markers go to the old
// producer ID, which the partitions know.
func TestEpochExhaustedAbortsUnderOldProducerID(t *testing.T) {
	f := newFixture(t)
	pid, _ := mustInit(t, f.c, "t1")
	f.c.mu.Lock()
	f.c.ids["t1"].epoch = maxEpoch
	f.c.mu.Unlock()
	if err := f.c.AddPartitions("t1", pid, maxEpoch, []TopicPartition{tp0}); err != nil {
		t.Fatal(err)
	}
	pid2, epoch2 := mustInit(t, f.c, "t1")
	done := f.completions()
	if pid2 == pid || epoch2 != 0 {
		t.Fatalf("after exhaustion: %d/%d, want a new ID at epoch 0", pid2, epoch2)
	}
	if len(done) != 1 || done[0].ProducerID != pid || done[0].Epoch != maxEpoch || done[0].Commit {
		t.Fatalf("completions = %+v, want an abort for producer %d at epoch %d", done, pid, maxEpoch)
	}
}

// CheckInvariants holds through a transaction and catches IDs and producer
// IDs that disagree.
func TestCheckInvariants(t *testing.T) {
	f := newFixture(t)
	pid, epoch, err := f.c.InitProducerID("tx", time.Minute, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.AddPartitions("tx", pid, epoch, []TopicPartition{{"t", 0}}); err != nil {
		t.Fatal(err)
	}
	if err := f.c.CheckInvariants(); err != nil {
		t.Fatalf("ongoing: %v", err)
	}
	if _, _, err := f.c.EndTxn("tx", pid, epoch, true, false); err != nil {
		t.Fatal(err)
	}
	if err := f.c.CheckInvariants(); err != nil {
		t.Fatalf("committed: %v", err)
	}
	f.c.mu.Lock()
	f.c.byPID[pid+100] = f.c.byPID[pid]
	delete(f.c.byPID, pid)
	f.c.mu.Unlock()
	if err := f.c.CheckInvariants(); err == nil {
		t.Fatal("a producer ID map that lost the ID passed")
	}
}
