package storage

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Notifier tells those waiting on something that it changed: the one wake
// set of parked fetches ("records arrived or locks freed"), for a
// partition log's appends here and for a share partition's freed records
// in shareserve. It holds two kinds of registration: a channel registered
// with Watch gets one non-blocking send at the next Notify and is then
// forgotten (a Fetch's long poll, registered per attempt); a Subscriber
// stays until it unsubscribes and is told of every Notify (a share
// session, which keeps its own set of partitions to look at:
// docs/share-groups.md share-fetch-ready-set). The zero value is ready to
// use.
type Notifier struct {
	mu      sync.Mutex
	waiters map[chan<- struct{}]struct{}
	// subs is copied on every Subscribe and Unsubscribe and never changed
	// in place, so Notify reads it without the lock: an append on a
	// partition many sessions subscribe to makes one pass over a slice.
	subs atomic.Pointer[[]Subscriber]
	// n is len(waiters) plus len(*subs), so Notify with nobody registered
	// (every append on a log nobody reads) costs one atomic load, not a
	// lock.
	n atomic.Int32
	// nWaiters is len(waiters): a Notify with only subscribers takes no
	// lock.
	nWaiters atomic.Int32
}

// Subscriber is told of every Notify of the Notifiers it subscribed to.
// Changed runs on the notifying goroutine with no Notifier lock held; it
// must not block.
type Subscriber interface {
	Changed()
}

// Watch registers ch for a non-blocking send at the next Notify; the
// registration is consumed by it, and Unwatch removes it early.
func (n *Notifier) Watch(ch chan<- struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.waiters == nil {
		n.waiters = make(map[chan<- struct{}]struct{})
	}
	n.waiters[ch] = struct{}{}
	n.countLocked()
}

// Unwatch removes a registration made by Watch.
func (n *Notifier) Unwatch(ch chan<- struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.waiters, ch)
	n.countLocked()
}

// Subscribe tells s of every Notify from now on, until Unsubscribe(s).
// Subscribing twice tells s twice.
func (n *Notifier) Subscribe(s Subscriber) {
	n.mu.Lock()
	defer n.mu.Unlock()
	old := n.subs.Load()
	if old == nil {
		n.subs.Store(oneSubscriber(s))
	} else {
		subs := make([]Subscriber, len(*old), len(*old)+1)
		copy(subs, *old)
		subs = append(subs, s)
		n.subs.Store(&subs)
	}
	n.countLocked()
}

// soleSubscriber is a list of one subscriber with its slice header, in
// one allocation: most partitions have one subscriber (the share session
// of the member the assignor gave them), and a broker serving thousands
// of partitions held two objects per subscription, each one more for the
// GC to mark on every cycle (issue 22).
type soleSubscriber struct {
	list []Subscriber // one[:]
	one  [1]Subscriber
}

// oneSubscriber returns a list holding just s.
func oneSubscriber(s Subscriber) *[]Subscriber {
	l := &soleSubscriber{one: [1]Subscriber{s}}
	l.list = l.one[:]
	return &l.list
}

// Unsubscribe ends one subscription of s; without one it does nothing.
func (n *Notifier) Unsubscribe(s Subscriber) {
	n.mu.Lock()
	defer n.mu.Unlock()
	old := n.subs.Load()
	if old == nil {
		return
	}
	i := slices.Index(*old, s)
	if i < 0 {
		return
	}
	switch len(*old) {
	case 1: // the last one: nothing to copy
		n.subs.Store(nil)
	case 2:
		n.subs.Store(oneSubscriber((*old)[1-i]))
	default:
		subs := slices.Delete(slices.Clone(*old), i, i+1)
		n.subs.Store(&subs)
	}
	n.countLocked()
}

func (n *Notifier) countLocked() {
	subs := 0
	if s := n.subs.Load(); s != nil {
		subs = len(*s)
	}
	n.nWaiters.Store(int32(len(n.waiters)))
	n.n.Store(int32(len(n.waiters) + subs))
}

// Notify wakes every registered channel without blocking and forgets
// them, and tells every subscriber. The caller calls it after the change
// is visible to a reader (its lock released): a request that registers
// after the load of n below then sees the change when it looks, and a
// subscriber told here looks after the change.
func (n *Notifier) Notify() {
	if n.n.Load() == 0 {
		return
	}
	n.notifySubscribers()
	if n.nWaiters.Load() == 0 {
		return
	}
	n.mu.Lock()
	waiters := n.waiters
	n.waiters = nil
	n.countLocked()
	n.mu.Unlock()
	for ch := range waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// notifySubscribers tells the subscribers only: for changes a subscriber
// must look at again but a parked Fetch has no answer to give for (the
// log start moved, the topic was deleted).
func (n *Notifier) notifySubscribers() {
	if subs := n.subs.Load(); subs != nil {
		for _, s := range *subs {
			s.Changed()
		}
	}
}
