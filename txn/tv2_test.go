package txn

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

// end-txn-bump and produce-implicit-add: a transaction started by a
// produce, ended with the epoch raised; the retry of that EndTxn succeeds
// with the raised epoch, everything at the old epoch is fenced, and the
// next EndTxn at the raised epoch belongs to the next transaction.
func TestEndTxnBump(t *testing.T) {
	f := newFixture(t)
	pid, e0 := mustInit(t, f.c, "t1")

	if err := f.c.CheckProduce(pid, e0, tp0, false); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("produce without add, nothing added: %v, want ErrInvalidTxnState", err)
	}
	if err := f.c.CheckProduce(pid, e0, tp0, true); err != nil {
		t.Fatalf("produce with add: %v", err)
	}
	if d, _ := f.c.Describe("t1"); d.State != Ongoing || !slices.Equal(d.Partitions, []TopicPartition{tp0}) {
		t.Fatalf("after an implicit add: %+v, want Ongoing with %v", d, tp0)
	}

	gotPID, e1, err := f.c.EndTxn("t1", pid, e0, true, true)
	if err != nil || gotPID != pid || e1 != e0+1 {
		t.Fatalf("EndTxn commit: %d/%d, %v; want %d/%d", gotPID, e1, err, pid, e0+1)
	}
	done := f.completions()
	if len(done) != 1 || !done[0].Commit || done[0].Epoch != e1 || !slices.Equal(done[0].Partitions, []TopicPartition{tp0}) {
		t.Fatalf("completions %+v, want one commit marked at epoch %d", done, e1)
	}

	// The retry (old epoch) answers as the first did and writes nothing.
	if p, e, err := f.c.EndTxn("t1", pid, e0, true, true); err != nil || p != pid || e != e1 {
		t.Fatalf("retried commit: %d/%d, %v; want %d/%d", p, e, err, pid, e1)
	}
	if _, _, err := f.c.EndTxn("t1", pid, e0, false, true); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("abort at the old epoch after a commit: %v, want ErrInvalidTxnState", err)
	}
	if len(f.completions()) != 1 {
		t.Fatal("a retried EndTxn wrote markers again")
	}
	if err := f.c.CheckProduce(pid, e0, tp0, true); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("produce at the old epoch: %v, want ErrProducerFenced", err)
	}

	// At the new epoch: nothing is ongoing, so commit is refused, and an
	// abort is allowed, marks nothing and raises the epoch again.
	if _, _, err := f.c.EndTxn("t1", pid, e1, true, true); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("commit with nothing ongoing: %v, want ErrInvalidTxnState", err)
	}
	if p, e2, err := f.c.EndTxn("t1", pid, e1, false, true); err != nil || p != pid || e2 != e1+1 {
		t.Fatalf("abort with nothing ongoing: %d/%d, %v; want %d/%d", p, e2, err, pid, e1+1)
	}
	if done := f.completions(); len(done) != 2 || done[1].Commit || len(done[1].Partitions) != 0 {
		t.Fatalf("completions %+v, want an empty abort second", done)
	}
	// Two epochs back is no retry.
	if _, _, err := f.c.EndTxn("t1", pid, e0, false, true); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("EndTxn two epochs back: %v, want ErrProducerFenced", err)
	}
}

// epoch-exhausted under end-txn-bump: the EndTxn that raises the epoch to
// the int16 maximum marks the partitions there and moves the ID to a new
// producer at epoch 0, which the answer and its retry both hand out.
func TestEndTxnBumpExhaustsEpoch(t *testing.T) {
	f := newFixture(t)
	pid, _ := mustInit(t, f.c, "t1")
	f.c.mu.Lock()
	f.c.ids["t1"].epoch = maxEpoch
	f.c.mu.Unlock()
	if err := f.c.CheckProduce(pid, maxEpoch, tp0, true); err != nil {
		t.Fatal(err)
	}
	newPID, e, err := f.c.EndTxn("t1", pid, maxEpoch, true, true)
	if err != nil || newPID == pid || e != 0 {
		t.Fatalf("EndTxn at the last epoch: %d/%d, %v; want a new producer ID at epoch 0", newPID, e, err)
	}
	if done := f.completions(); len(done) != 1 || done[0].ProducerID != pid || done[0].Epoch != math.MaxInt16 {
		t.Fatalf("completions %+v, want markers for producer %d at epoch %d", done, pid, math.MaxInt16)
	}
	if p, e, err := f.c.EndTxn("t1", pid, maxEpoch, true, true); err != nil || p != newPID || e != 0 {
		t.Fatalf("retry after the move: %d/%d, %v; want %d/0", p, e, err, newPID)
	}
	if err := f.c.CheckProduce(newPID, 0, tp0, true); err != nil {
		t.Fatalf("produce as the new producer: %v", err)
	}
	if err := f.c.CheckProduce(pid, maxEpoch, tp0, true); err == nil {
		t.Fatal("the old producer ID still produces")
	}
}

// txn-offset-commit-implicit: TxnOffsetCommit with add starts the
// transaction and adds the group, so EndTxn settles its offsets.
func TestOffsetCommitAddsGroup(t *testing.T) {
	f := newFixture(t)
	pid, e0 := mustInit(t, f.c, "t1")
	if err := f.c.CheckOffsetCommit("t1", pid, e0, "g", false); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("commit without add, group not added: %v, want ErrInvalidTxnState", err)
	}
	if err := f.c.CheckOffsetCommit("t1", pid, e0, "g", true); err != nil {
		t.Fatalf("commit with add: %v", err)
	}
	if _, _, err := f.c.EndTxn("t1", pid, e0, true, true); err != nil {
		t.Fatal(err)
	}
	if done := f.completions(); len(done) != 1 || !slices.Equal(done[0].Groups, []string{"g"}) {
		t.Fatalf("completions %+v, want group g settled", done)
	}
}

// While markers are being written, produces (with or without add) and a
// retried EndTxn of the same decision answer ErrConcurrentTransactions, so
// clients retry; the other decision is ErrInvalidTxnState.
func TestBumpWhileCompleting(t *testing.T) {
	f := newFixture(t)
	release := make(chan struct{})
	entered := make(chan struct{})
	f.c.cfg.Complete = func(Completion) {
		close(entered)
		<-release
	}
	pid, e0 := mustInit(t, f.c, "t1")
	if err := f.c.CheckProduce(pid, e0, tp0, true); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		_, _, err := f.c.EndTxn("t1", pid, e0, true, true)
		ended <- err
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("EndTxn never started completing")
	}
	if err := f.c.CheckProduce(pid, e0+1, tp0, true); !errors.Is(err, ErrConcurrentTransactions) {
		t.Fatalf("produce at the new epoch while completing: %v, want ErrConcurrentTransactions", err)
	}
	if _, _, err := f.c.EndTxn("t1", pid, e0, true, true); !errors.Is(err, ErrConcurrentTransactions) {
		t.Fatalf("retried commit while completing: %v, want ErrConcurrentTransactions", err)
	}
	if _, _, err := f.c.EndTxn("t1", pid, e0, false, true); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("abort while a commit completes: %v, want ErrInvalidTxnState", err)
	}
	close(release)
	select {
	case err := <-ended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("EndTxn did not return")
	}
}

// fence under transaction version 2: a timed-out transaction joined
// through implicit adds is aborted with the epoch raised twice, so the
// producer's own EndTxn, one epoch behind the first raise, is fenced
// rather than taken for a retry.
func TestTimeoutFencesTV2Transaction(t *testing.T) {
	f := newFixture(t)
	pid, e0 := mustInit(t, f.c, "t1")
	if err := f.c.CheckProduce(pid, e0, tp0, true); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Minute) // past mustInit's one-minute timeout
	f.c.AbortTimedOut()
	done := f.completions()
	if len(done) != 1 || done[0].Commit || done[0].Epoch != e0+2 {
		t.Fatalf("completions %+v, want one abort marked at epoch %d", done, e0+2)
	}
	for _, commit := range []bool{true, false} {
		if _, _, err := f.c.EndTxn("t1", pid, e0, commit, true); !errors.Is(err, ErrProducerFenced) {
			t.Fatalf("EndTxn(commit=%v) after the timeout: %v, want ErrProducerFenced", commit, err)
		}
	}
	if d, _ := f.c.Describe("t1"); d.Epoch != e0+2 {
		t.Fatalf("epoch after the timeout %d, want %d", d.Epoch, e0+2)
	}
}
