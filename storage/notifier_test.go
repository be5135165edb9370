package storage

import "testing"

// A Notify with nobody watching costs no lock and allocates nothing: every
// append calls it.
func TestNotifyIdleDoesNotAllocate(t *testing.T) {
	var n Notifier
	if a := testing.AllocsPerRun(100, n.Notify); a != 0 {
		t.Errorf("idle Notify allocates %v", a)
	}
}

// A registration is woken once by the next Notify, and not after Unwatch.
func TestNotifierWakesOnce(t *testing.T) {
	var n Notifier
	ch := make(chan struct{}, 1)
	n.Watch(ch)
	n.Notify()
	n.Notify()
	if len(ch) != 1 {
		t.Fatal("the watcher was not woken")
	}
	<-ch
	n.Notify()
	if len(ch) != 0 {
		t.Fatal("a consumed registration woke again")
	}
	n.Watch(ch)
	n.Unwatch(ch)
	n.Notify()
	if len(ch) != 0 {
		t.Fatal("an unwatched channel was woken")
	}
}

type countingSubscriber struct{ n int }

func (c *countingSubscriber) Changed() { c.n++ }

// share-fetch-ready-set (docs/share-groups.md): a subscriber is told of
// every Notify until it unsubscribes, and a Notify that tells only
// subscribers allocates nothing.
func TestNotifierSubscribers(t *testing.T) {
	var n Notifier
	a, b := &countingSubscriber{}, &countingSubscriber{}
	n.Subscribe(a)
	n.Subscribe(b)
	n.Notify()
	n.Notify()
	if a.n != 2 || b.n != 2 {
		t.Fatalf("told %d and %d times of 2 Notifies", a.n, b.n)
	}
	n.Unsubscribe(a)
	n.Notify()
	if a.n != 2 || b.n != 3 {
		t.Fatalf("after Unsubscribe(a): told %d and %d times, want 2 and 3", a.n, b.n)
	}
	if allocs := testing.AllocsPerRun(100, n.Notify); allocs != 0 {
		t.Errorf("Notify with a subscriber allocates %v", allocs)
	}
	n.Unsubscribe(b)
	n.Unsubscribe(b) // twice: nothing
	if n.n.Load() != 0 {
		t.Fatalf("%d registrations left after every Unsubscribe", n.n.Load())
	}
}

// share-fetch-ready-set: a log start move and the topic's deletion tell
// the partition's subscribers (share sessions look again) but wake no
// parked Fetch, whose answer they do not change.
func TestLogStartAndDeletionTellSubscribersOnly(t *testing.T) {
	s := NewStore()
	topic, err := s.CreateTopic("t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := topic.Partition(0)
	if _, err := p.Append(batchSpec{Stamps: []int64{1, 2, 3}}.build(t), AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	sub := &countingSubscriber{}
	p.Subscribe(sub)
	ch := make(chan struct{}, 1)
	p.Watch(ch)
	if _, err := p.DeleteRecordsBefore(2); err != nil {
		t.Fatal(err)
	}
	if _, err := p.DeleteRecordsBefore(2); err != nil { // no move: no news
		t.Fatal(err)
	}
	if _, err := s.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if sub.n != 2 {
		t.Fatalf("subscriber told %d times, want 2 (the move, the deletion)", sub.n)
	}
	if len(ch) != 0 {
		t.Fatal("a parked Fetch was woken")
	}
}

// share-fetch-ready-set at thousands of partitions (issue 22): most
// partitions have one subscriber, and its list is one allocation; the last
// Unsubscribe allocates nothing. Removing either of two keeps the other.
func TestNotifierSoleSubscriberCosts(t *testing.T) {
	var n Notifier
	a, b := &countingSubscriber{}, &countingSubscriber{}
	if allocs := testing.AllocsPerRun(100, func() { n.Subscribe(a); n.Unsubscribe(a) }); allocs != 1 {
		t.Errorf("Subscribe and Unsubscribe of a sole subscriber: %v allocations, want 1", allocs)
	}
	for _, gone := range []*countingSubscriber{a, b} {
		a.n, b.n = 0, 0
		n.Subscribe(a)
		n.Subscribe(b)
		n.Unsubscribe(gone)
		n.Notify()
		if gone.n != 0 || a.n+b.n != 1 {
			t.Fatalf("after Unsubscribe of one of two: told %d and %d times, want the other once", a.n, b.n)
		}
		n.Unsubscribe(a)
		n.Unsubscribe(b)
		if n.n.Load() != 0 {
			t.Fatalf("%d registrations left after every Unsubscribe", n.n.Load())
		}
	}
}
