package txn

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// journalLog keeps the last record of each ID, as a compacted log would,
// and every record in order.
type journalLog struct {
	mu   sync.Mutex
	all  []Record
	last map[string]Record
}

func (j *journalLog) add(r Record) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.last == nil {
		j.last = make(map[string]Record)
	}
	j.all = append(j.all, r)
	j.last[r.TransactionalID] = r
}

func (j *journalLog) records() []Record {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []Record
	for _, r := range j.last {
		out = append(out, r)
	}
	return out
}

// txn-state-kept: a restored coordinator has each ID's producer ID, epoch,
// state and partitions; an Ongoing transaction is aborted by its timeout
// after the restart, with the epoch raised; one caught in PrepareCommit is
// committed by Resume.
func TestJournalRestore(t *testing.T) {
	f := newFixture(t)
	var j journalLog
	f.c.cfg.Journal = j.add
	pid, epoch := mustInit(t, f.c, "open")
	if err := f.c.AddPartitions("open", pid, epoch, []TopicPartition{tp0}); err != nil {
		t.Fatal(err)
	}
	ppid, pepoch := mustInit(t, f.c, "prep")
	tp1 := TopicPartition{"b", 1}
	if err := f.c.AddPartitions("prep", ppid, pepoch, []TopicPartition{tp1}); err != nil {
		t.Fatal(err)
	}
	if err := f.c.AddGroup("prep", ppid, pepoch, "g"); err != nil {
		t.Fatal(err)
	}
	// The crash comes between PrepareCommit and the markers.
	f.c.cfg.Complete = func(Completion) { panic("the process died") }
	func() {
		defer func() { _ = recover() }()
		f.c.EndTxn("prep", ppid, pepoch, true, false)
	}()
	open, _ := f.c.Describe("open")

	f2 := newFixture(t)
	f2.clock.Advance(30 * time.Second)
	if err := f2.c.Restore(j.records()); err != nil {
		t.Fatal(err)
	}
	if got, _ := f2.c.Describe("open"); got.State != Ongoing || got.ProducerID != pid || got.Epoch != epoch ||
		!slices.Equal(got.Partitions, open.Partitions) || !got.Started.Equal(open.Started) {
		t.Fatalf("restored %+v; was %+v", got, open)
	}
	if got := f2.c.OngoingTransactions(); len(got) != 1 || got[pid].TransactionalID != "open" {
		t.Fatalf("ongoing after restore %+v", got)
	}
	f2.c.Resume()
	done := f2.completions()
	if len(done) != 1 || !done[0].Commit || done[0].ProducerID != ppid || !slices.Equal(done[0].Partitions, []TopicPartition{tp1}) ||
		!slices.Equal(done[0].Groups, []string{"g"}) {
		t.Fatalf("resumed %+v; want prep's commit of b-1 and g", done)
	}
	if got, _ := f2.c.Describe("prep"); got.State != CompleteCommit {
		t.Fatalf("prep after Resume: %v", got.State)
	}
	// "open" started 30 s before the restart; its minute runs out 30 s
	// later, and the next clean-up aborts it.
	f2.clock.Advance(40 * time.Second)
	done = f2.completions()
	if len(done) != 2 || done[1].Commit || done[1].ProducerID != pid || done[1].Epoch != epoch+1 {
		t.Fatalf("after the timeout %+v; want open aborted at epoch %d", done, epoch+1)
	}
	if err := f2.c.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// A record no coordinator writes is refused.
func TestRestoreRefusesPrepareWithoutCompletion(t *testing.T) {
	f := newFixture(t)
	if err := f.c.Restore([]Record{{TransactionalID: "x", State: PrepareAbort}}); err == nil {
		t.Fatal("accepted")
	}
}
