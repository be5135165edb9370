package shareserve

import (
	"errors"
	"slices"
	"testing"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// share-groups.md share-fetch-ready-set: a fetch whose look found nothing
// is woken by every change that can alter its answer, made after the look
// and before it parks, and its next attempt sees the change. The events of
// TestParkedFetchOnFullWindow (acknowledgement, release, lock expiry,
// session close) are the share partition's; these are the rest.
func TestReadySetWakesOnEveryChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		// full: the window is at its limit (m1 holds 0-999, m2 accepted
		// 1000-1999, the log holds 0-2999); else the log is empty.
		full  bool
		event func(t *testing.T, f *fixture, edge *fakeEdge)
		// want is what m2's woken attempt acquires, or wantErr its error.
		want    [][3]int64
		wantErr error
	}{
		{"an append", false, func(t *testing.T, f *fixture, _ *fakeEdge) {
			f.produce(t, 0, 2)
		}, [][3]int64{{0, 1, 1}}, nil},
		{"the log start moves past the window's blocker", true, func(t *testing.T, f *fixture, _ *fakeEdge) {
			if _, err := f.topic.Partition(0).DeleteRecordsBefore(1000); err != nil {
				t.Fatal(err)
			}
		}, [][3]int64{{2000, 2999, 1}}, nil},
		{"the group's in-flight limit grows", true, func(t *testing.T, f *fixture, _ *fakeEdge) {
			f.s.groupConfig = func(string) group.ShareGroupConfig {
				cfg := testGroupConfig()
				cfg.PartitionMaxRecordLocks = 4000
				return cfg
			}
			if err := f.s.GroupConfigChanged("g"); err != nil {
				t.Fatal(err)
			}
		}, [][3]int64{{2000, 2999, 1}}, nil},
		{"the topic is deleted", false, func(t *testing.T, f *fixture, _ *fakeEdge) {
			if _, err := f.s.store.DeleteTopic("t"); err != nil {
				t.Fatal(err)
			}
		}, nil, storage.ErrUnknownTopicID},
		{"the leader moves away", false, func(_ *testing.T, f *fixture, edge *fakeEdge) {
			edge.mu.Lock()
			edge.notLed[f.tp(0)] = true
			edge.mu.Unlock()
			f.s.LeaderMoved(f.topic.ID, 0, 0, 1)
		}, nil, errFakeNotLeader},
		{"the group's share state is dropped, then an append", false, func(t *testing.T, f *fixture, _ *fakeEdge) {
			f.s.DropTopic("g", f.topic.ID)
			f.produce(t, 0, 1)
		}, [][3]int64{{0, 0, 1}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, edge := newServeFixture(t, 1, 10)
			if tc.full {
				fillWindow(t, f)
			}
			m2, parts := f.open(t, "m2", 1)
			if tc.full {
				m2 = f.m2AcceptedSecondBatch(t, m2, parts)
				var err error
				if parts, err = f.s.Sessions.advance(m2, 1, nil, nil); err != nil {
					t.Fatal(err)
				}
			}
			parked := f.s.newFetch(m2, testGroupConfig())
			parked.plan(parts, 1, wide)
			wake := make(chan struct{}, 1)
			if attempt(parked, wake) {
				t.Fatalf("m2's first look acquired %v", ranges(parked.Answer(f.tp(0))))
			}
			select {
			case <-wake:
				t.Fatal("woken before anything happened")
			default:
			}
			tc.event(t, f, edge)
			select {
			case <-wake:
			default:
				t.Fatal("the change did not wake the parked fetch")
			}
			done := attempt(parked, wake)
			a := parked.Answer(f.tp(0))
			if tc.wantErr != nil {
				if !done || a == nil || !errors.Is(a.Err, tc.wantErr) {
					t.Fatalf("woken attempt: done %v, answer %+v; want error %v", done, a, tc.wantErr)
				}
				return
			}
			if got := ranges(a); !done || !slices.Equal(got, tc.want) {
				t.Fatalf("woken attempt: done %v, acquired %v; want %v", done, got, tc.want)
			}
		})
	}
}

// fillWindow makes the log 0-2999 (three producer batches of 1000) and has
// m1 hold 0-999, so a second member that accepts 1000-1999 fills the
// window (2000 locks) behind m1's records.
func fillWindow(t *testing.T, f *fixture) {
	t.Helper()
	for range 3 {
		f.produce(t, 0, 1000)
	}
	m1, parts1 := f.open(t, "m1", 1)
	if got := ranges(f.fetchOnce(m1, parts1, 0, wide).Answer(f.tp(0))); !slices.Equal(got, [][3]int64{{0, 999, 1}}) {
		t.Fatalf("m1 acquired %v, want the first producer batch", got)
	}
}

// m2AcceptedSecondBatch has m2 acquire and accept 1000-1999; then its
// session's partition is idle (the window is full).
func (f *fixture) m2AcceptedSecondBatch(t *testing.T, m2 SessionKey, parts []SessionPartition) SessionKey {
	t.Helper()
	if got := ranges(f.fetchOnce(m2, parts, 0, wide).Answer(f.tp(0))); !slices.Equal(got, [][3]int64{{1000, 1999, 1}}) {
		t.Fatalf("m2 acquired %v, want the second producer batch", got)
	}
	if err := f.s.acknowledgePartition(m2, f.tp(0), 1, false, accept(1000, 1999), f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	return m2
}

// share-fetch-ready-set: a look clears a partition's mark before it looks,
// so records appended right after the look (before the request parks)
// leave it marked, and the next attempt acquires them. Clearing after the
// look would lose them until the partition's next change.
func TestReadySetChangeRightAfterLookIsKept(t *testing.T) {
	f := newFixture(t, 1)
	key, parts := f.open(t, "m1", 1)
	fetch := f.s.newFetch(key, testGroupConfig())
	fetch.plan(parts, 0, wide)
	fetch.afterLook = func(TopicPartition) {
		fetch.afterLook = nil
		f.produce(t, 0, 3)
	}
	wake := make(chan struct{}, 1)
	if attempt(fetch, wake) {
		t.Fatal("the look before the append acquired something")
	}
	select {
	case <-wake:
	default:
		t.Fatal("the append right after the look did not wake the fetch")
	}
	if !attempt(fetch, wake) || !slices.Equal(ranges(fetch.Answer(f.tp(0))), [][3]int64{{0, 2, 1}}) {
		t.Fatalf("the next attempt acquired %v, want 0-2", ranges(fetch.Answer(f.tp(0))))
	}
}

// share-fetch-ready-set: an attempt looks only at the partitions marked
// ready; the session's idle partitions cost it no look (no fetch pass, no
// resolution). 64 partitions: the first fetch looks at each once (they are
// new), the next only at the one appended to, and the one after only at
// that one again (it gave records, so it may have more), then at none.
func TestReadySetAttemptSkipsIdlePartitions(t *testing.T) {
	const n = 64
	f := newFixture(t, n)
	key, parts := f.open(t, "m1", n)
	passes := func() uint64 {
		var sum uint64
		for _, kp := range f.s.OfGroup("g") {
			sum += kp.Part.FetchLock.Snapshot().Passes
		}
		return sum
	}
	fetch := func(epoch int32) *fetchWork {
		t.Helper()
		if epoch > 0 {
			var err error
			if parts, err = f.s.Sessions.advance(key, epoch, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		return f.fetchOnce(key, parts, epoch, wide)
	}
	fetch(0)
	if got := passes(); got != n {
		t.Fatalf("the first fetch made %d passes, want one per new partition (%d)", got, n)
	}
	rs := f.s.Sessions.readyOf(key)
	f.produce(t, 7, 3)
	rs.mu.Lock()
	checking := len(rs.check)
	rs.mu.Unlock()
	if checking != 1 {
		t.Fatalf("%d partitions to check after one append, want 1", checking)
	}
	before := passes()
	if got := ranges(fetch(1).Answer(f.tp(7))); !slices.Equal(got, [][3]int64{{0, 2, 1}}) {
		t.Fatalf("acquired %v from partition 7, want 0-2", got)
	}
	for epoch, want := range []uint64{1, 1, 0} {
		if epoch > 0 {
			fetch(int32(epoch + 1))
		}
		if got := passes() - before; got != want {
			t.Fatalf("fetch %d made %d passes, want %d", epoch+1, got, want)
		}
		before = passes()
	}
}

// share-fetch-ready-set: a session whose partitions come and go (each
// rebalance forgets some and adds others) keeps its ready set in
// proportion to what it holds, and a partition marked ready before the
// partitions were renumbered is still looked at after.
func TestReadySetStaysInProportionToTheSession(t *testing.T) {
	f := newFixture(t, 8)
	key, parts := f.open(t, "m1", 8)
	f.fetchOnce(key, parts, 0, wide) // every partition looked at: none ready
	epoch := int32(1)
	for range 100 {
		var err error
		// Forget 0-3 and add them back: four new seqs each time.
		if _, err = f.s.Sessions.advance(key, epoch, nil, []TopicPartition{f.tp(0), f.tp(1), f.tp(2), f.tp(3)}); err != nil {
			t.Fatal(err)
		}
		epoch++
		if parts, err = f.s.Sessions.advance(key, epoch, []TopicPartition{f.tp(0), f.tp(1), f.tp(2), f.tp(3)}, nil); err != nil {
			t.Fatal(err)
		}
		epoch++
		f.fetchOnce(key, parts, epoch-1, wide)
	}
	rs := f.s.Sessions.readyOf(key)
	rs.mu.Lock()
	size := len(rs.bySeq)
	rs.mu.Unlock()
	if size > 2*8+64+4 {
		t.Fatalf("the ready set indexes %d seqs for 8 partitions after 400 additions", size)
	}
	f.produce(t, 6, 2) // partition 6 never left: marked ready now
	if _, err := f.s.Sessions.advance(key, epoch, nil, []TopicPartition{f.tp(0)}); err != nil {
		t.Fatal(err)
	}
	epoch++
	parts, err := f.s.Sessions.advance(key, epoch, []TopicPartition{f.tp(0)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ranges(f.fetchOnce(key, parts, epoch, wide).Answer(f.tp(6))); !slices.Equal(got, [][3]int64{{0, 1, 1}}) {
		t.Fatalf("partition 6 acquired %v after the churn, want 0-1", got)
	}
}

// share-fetch-ready-set: a session keeps the share partition it resolved
// and looks it up again only when the registry dropped it; after its
// group's or topic's share state is dropped, the session's next fetch
// works on state made anew (the records its member held are acquirable
// again at delivery 1), not on the share partition it resolved before.
func TestReadySetResolvesDroppedStateAnew(t *testing.T) {
	for name, drop := range map[string]func(f *fixture){
		"group": func(f *fixture) { f.s.DropGroup("g") },
		"topic": func(f *fixture) { f.s.DropTopic("g", f.topic.ID) },
	} {
		t.Run(name, func(t *testing.T) {
			f, _ := newServeFixture(t, 1, 10)
			f.produce(t, 0, 2)
			key, parts := f.open(t, "m1", 1)
			if got := ranges(f.fetchOnce(key, parts, 0, wide).Answer(f.tp(0))); !slices.Equal(got, [][3]int64{{0, 1, 1}}) {
				t.Fatalf("first fetch acquired %v, want 0-1 at delivery 1", got)
			}
			before := f.s.Lookup(Key{Group: "g", TopicPartition: f.tp(0)})
			drop(f)
			if got := ranges(f.fetchOnce(key, parts, 1, wide).Answer(f.tp(0))); !slices.Equal(got, [][3]int64{{0, 1, 1}}) {
				t.Fatalf("fetch after the drop acquired %v, want 0-1 at delivery 1 from new state", got)
			}
			if after := f.s.Lookup(Key{Group: "g", TopicPartition: f.tp(0)}); after == nil || after == before {
				t.Fatalf("the registry holds %p after the drop (%p before); want a new share partition", after, before)
			}
		})
	}
}

// share-fetch-ready-set: an acknowledgement uses the share partition its
// session subscribed to only while the registry holds it. Once the group's
// share state is dropped, it is answered as for a partition without share
// state (UNKNOWN_TOPIC_OR_PARTITION), as the registry answers it, not
// applied to the dropped state; once a fetch made the state anew, it goes
// to the new state.
func TestSessionAcknowledgementFollowsTheRegistry(t *testing.T) {
	f, _ := newServeFixture(t, 1, 10)
	f.produce(t, 0, 2)
	key, parts := f.open(t, "m1", 1)
	if got := ranges(f.fetchOnce(key, parts, 0, wide).Answer(f.tp(0))); !slices.Equal(got, [][3]int64{{0, 1, 1}}) {
		t.Fatalf("first fetch acquired %v, want 0-1 at delivery 1", got)
	}
	dropped := f.s.Lookup(Key{Group: "g", TopicPartition: f.tp(0)})
	f.s.DropGroup("g")
	ack := func(epoch int32) error {
		t.Helper()
		res := f.s.Acknowledge(AckRequest{Key: key, Epoch: epoch, Version: 1, Topics: []AckTopic{{TopicID: f.topic.ID,
			Partitions: []AckPartition{{Partition: 0, Acks: accept(0, 1)}}}}})
		if res.Err != nil || len(res.Errs) != 1 {
			t.Fatalf("ShareAcknowledge at epoch %d: %v, %d partition results", epoch, res.Err, len(res.Errs))
		}
		return res.Errs[0]
	}
	if err := ack(1); !errors.Is(err, storage.ErrUnknownTopic) {
		t.Fatalf("acknowledgement after the drop: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	if st := dropped.Share.Story(0); st.Record == nil || st.Record.State != sharepartition.Acquired {
		t.Fatalf("offset 0 in the dropped share state: %+v, want still ACQUIRED", st.Record)
	}
	if got := ranges(f.fetchOnce(key, parts, 1, wide).Answer(f.tp(0))); !slices.Equal(got, [][3]int64{{0, 1, 1}}) {
		t.Fatalf("fetch after the drop acquired %v, want 0-1 at delivery 1 from new state", got)
	}
	if err := ack(2); err != nil {
		t.Fatalf("acknowledgement of the new state's records: %v", err)
	}
}
