// Package locktimer owns time for the broker: the Clock that every timeout
// reads (acquisition locks, member and session timeouts, transaction timeouts,
// long-poll waits) and Service, the timer service acquisition locks and group
// timeouts are scheduled on (service.go).
//
// Production uses RealClock. Tests use ManualClock, whose Advance runs every
// callback that became due before it returns, so a test can say "30 s pass
// now" and observe the consequences without sleeping. OffsetClock (offset.go)
// is real time plus an offset that only grows, for a broker whose HTTP test
// API moves its clock.
package locktimer

import (
	"container/heap"
	"errors"
	"fmt"
	"sync"
	"time"
)

// MaxTime is the latest time a clock a test moves may reach: ManualClock's
// Advance and Set and OffsetClock's Advance refuse to go past it
// (clock-bounded in docs/share-groups.md). Deadlines are kept as Unix
// nanoseconds (the timer service, lock deadlines), which overflow in April
// 2262; stopping at 2200 leaves 62 years for any timeout scheduled from the
// latest reachable time. Without the bound, an advance near
// math.MaxInt64 nanoseconds wrapped the offset clock backwards.
var MaxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)

// ErrPastMaxTime is why an advance was refused: it would take the clock
// past MaxTime. The clock did not move.
var ErrPastMaxTime = errors.New("the clock may not pass " + MaxTime.Format(time.RFC3339))

// checkAdvance reports whether moving a clock that reads now forward by d
// stays within MaxTime, comparing durations so that no sum can overflow.
func checkAdvance(now time.Time, d time.Duration) error {
	if room := MaxTime.Sub(now); d > room {
		return fmt.Errorf("advance by %v from %s: %w", d, now.UTC().Format(time.RFC3339Nano), ErrPastMaxTime)
	}
	return nil
}

// Clock is the one source of time and of delayed callbacks.
type Clock interface {
	// Now returns the current time of this clock.
	Now() time.Time
	// AfterFunc calls f in its own goroutine (RealClock) or on the goroutine
	// that advances the clock (ManualClock) once d has passed. A d <= 0
	// fires as soon as possible.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc callback.
type Timer interface {
	// Stop prevents the callback from running. It reports whether it did
	// so: false means the callback already ran or is running.
	Stop() bool
}

// RealClock reads the wall clock. The zero value is ready to use.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// ManualClock is a Clock that moves only when Advance or Set is called.
// It is safe for concurrent use.
type ManualClock struct {
	// advanceMu serialises Advance and Set so that callbacks fire in
	// deadline order even when two goroutines advance at once.
	advanceMu sync.Mutex

	mu      sync.Mutex // guards the fields below
	now     time.Time
	pending callbackQueue
}

// NewManualClock returns a manual clock that reads start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start}
}

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f to run when the clock has been advanced by d.
func (c *ManualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending.push(&c.mu, c.now.Add(d), f)
}

// Advance moves the clock forward by d. Every callback due at or before the
// new time runs, in deadline order, on the calling goroutine, and Now reads
// each callback's deadline while it runs. Advance returns after the last of
// them has returned; callbacks scheduled by callbacks run too if they fall
// due within the window. An advance that would pass MaxTime is refused
// with an error wrapping ErrPastMaxTime, and the clock stays where it was.
func (c *ManualClock) Advance(d time.Duration) error {
	if d < 0 {
		d = 0
	}
	c.advanceMu.Lock()
	defer c.advanceMu.Unlock()
	c.mu.Lock()
	now := c.now
	c.mu.Unlock()
	if err := checkAdvance(now, d); err != nil {
		return err
	}
	c.fireUntil(now.Add(d))
	return nil
}

// Set moves the clock to t (never backwards) with Advance's semantics; a t
// past MaxTime is refused as Advance refuses it.
func (c *ManualClock) Set(t time.Time) error {
	if t.After(MaxTime) {
		return fmt.Errorf("set to %s: %w", t.UTC().Format(time.RFC3339Nano), ErrPastMaxTime)
	}
	c.advanceMu.Lock()
	defer c.advanceMu.Unlock()
	c.fireUntil(t)
	return nil
}

// Pending reports how many callbacks are scheduled and not yet run.
func (c *ManualClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending.len()
}

func (c *ManualClock) fireUntil(target time.Time) {
	for {
		c.mu.Lock()
		cb := c.pending.popDue(target)
		if cb == nil {
			if target.After(c.now) {
				c.now = target
			}
			c.mu.Unlock()
			return
		}
		if cb.deadline.After(c.now) {
			c.now = cb.deadline
		}
		c.mu.Unlock()
		// Outside the lock: the callback may read the clock or schedule.
		cb.fn()
	}
}

// callbackQueue holds the AfterFunc callbacks of a virtual clock in
// deadline order (scheduling order on ties). ManualClock and OffsetClock
// each keep one, guarded by their own mutex: every method needs it held,
// and each callback remembers it so that Stop can take it.
type callbackQueue struct {
	seq  uint64 // breaks deadline ties in scheduling order
	heap callbackHeap
}

// queuedCallback is one pending callback; it is the Timer AfterFunc returns.
type queuedCallback struct {
	mu       *sync.Mutex // the owning clock's lock, which guards index
	q        *callbackQueue
	deadline time.Time
	seq      uint64
	fn       func()
	index    int // position in q.heap, -1 once fired or stopped
}

func (q *callbackQueue) push(mu *sync.Mutex, deadline time.Time, fn func()) *queuedCallback {
	q.seq++
	cb := &queuedCallback{mu: mu, q: q, deadline: deadline, seq: q.seq, fn: fn, index: -1}
	heap.Push(&q.heap, cb)
	return cb
}

// popDue removes and returns the earliest callback due at now, or nil.
func (q *callbackQueue) popDue(now time.Time) *queuedCallback {
	if len(q.heap) == 0 || q.heap[0].deadline.After(now) {
		return nil
	}
	return heap.Pop(&q.heap).(*queuedCallback)
}

// next returns the earliest deadline, if any.
func (q *callbackQueue) next() (time.Time, bool) {
	if len(q.heap) == 0 {
		return time.Time{}, false
	}
	return q.heap[0].deadline, true
}

func (q *callbackQueue) len() int { return len(q.heap) }

// Stop removes the callback if it has not run.
func (cb *queuedCallback) Stop() bool {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.index < 0 {
		return false
	}
	heap.Remove(&cb.q.heap, cb.index)
	return true
}

type callbackHeap []*queuedCallback

func (h callbackHeap) Len() int { return len(h) }
func (h callbackHeap) Less(i, j int) bool {
	if h[i].deadline.Equal(h[j].deadline) {
		return h[i].seq < h[j].seq
	}
	return h[i].deadline.Before(h[j].deadline)
}
func (h callbackHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *callbackHeap) Push(x any) {
	cb := x.(*queuedCallback)
	cb.index = len(*h)
	*h = append(*h, cb)
}
func (h *callbackHeap) Pop() any {
	old := *h
	cb := old[len(old)-1]
	old[len(old)-1] = nil
	cb.index = -1
	*h = old[:len(old)-1]
	return cb
}
