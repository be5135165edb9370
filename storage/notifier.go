package storage

import (
	"sync"
	"sync/atomic"
)

// Notifier wakes the channels registered with it, each once, when what
// they wait for changes: the one wake set of parked fetches ("records
// arrived or locks freed"), for a partition log's appends here and for a
// share partition's freed records in shareserve. The zero value is ready
// to use.
type Notifier struct {
	mu      sync.Mutex
	waiters map[chan<- struct{}]struct{}
	// n is len(waiters), so Notify with nobody waiting (every append on
	// a log no fetch is parked on) costs one atomic load, not a lock.
	n atomic.Int32
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
	n.n.Store(int32(len(n.waiters)))
}

// Unwatch removes a registration made by Watch.
func (n *Notifier) Unwatch(ch chan<- struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.waiters, ch)
	n.n.Store(int32(len(n.waiters)))
}

// Notify wakes every registered channel without blocking and forgets
// them. The caller calls it after the change is visible to a reader (its
// lock released): a request that registers after the load of n below
// then sees the change when it looks.
func (n *Notifier) Notify() {
	if n.n.Load() == 0 {
		return
	}
	n.mu.Lock()
	waiters := n.waiters
	n.waiters = nil
	n.n.Store(0)
	n.mu.Unlock()
	for ch := range waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
