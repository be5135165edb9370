package locktimer

import (
	"sync"
	"time"
)

// OffsetClock is real time plus an offset that only grows. Time passes on
// its own, as with RealClock, and Advance jumps it forward: a test of a
// running broker can say "30 s pass now" while everything else keeps real
// time. Advance runs every callback that became due, on the calling
// goroutine, before it returns; callbacks that fall due as real time passes
// run on a timer goroutine. A callback never runs before Now() reaches its
// deadline. It is safe for concurrent use.
//
// Callbacks run one at a time (real-time and Advance firings are
// serialised), so a callback must not call Advance.
type OffsetClock struct {
	// fireMu serialises firing: Advance returns only once every callback
	// due by its new time has returned, even one that real time made due
	// just before.
	fireMu sync.Mutex

	mu      sync.Mutex // guards the fields below
	offset  time.Duration
	pending callbackQueue
	real    *time.Timer // wakes the firing goroutine for the earliest callback
}

// NewOffsetClock returns a clock that reads real time until advanced.
func NewOffsetClock() *OffsetClock { return &OffsetClock{} }

// Now returns real time plus the offset. It keeps the monotonic reading,
// so deadlines compare on the monotonic clock.
func (c *OffsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked()
}

func (c *OffsetClock) nowLocked() time.Time { return time.Now().Add(c.offset) }

// Offset returns how far Advance has moved the clock ahead of real time.
func (c *OffsetClock) Offset() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset
}

// AfterFunc runs f once Now() has reached the current time plus d, either
// because real time passed or because Advance moved the clock.
func (c *OffsetClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	cb := c.pending.push(&c.mu, c.nowLocked().Add(d), f)
	if cb.index == 0 {
		c.armLocked()
	}
	return cb
}

// Advance moves the clock forward by d (a negative d counts as zero) and
// runs every callback now due, in deadline order, before it returns.
// Callbacks scheduled by callbacks run too if they fall due. An advance
// that would pass MaxTime is refused with an error wrapping
// ErrPastMaxTime (the offset would otherwise overflow and the clock run
// backwards), and the clock keeps its offset.
func (c *OffsetClock) Advance(d time.Duration) error {
	c.fireMu.Lock()
	defer c.fireMu.Unlock()
	d = max(d, 0)
	c.mu.Lock()
	if err := checkAdvance(c.nowLocked(), d); err != nil {
		c.mu.Unlock()
		return err
	}
	c.offset += d
	c.mu.Unlock()
	c.fireDue()
	return nil
}

// Pending reports how many callbacks are scheduled and not yet run.
func (c *OffsetClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending.len()
}

// fireDue runs the due callbacks one by one, then arms the real timer for
// the next. The caller holds fireMu.
func (c *OffsetClock) fireDue() {
	for {
		c.mu.Lock()
		cb := c.pending.popDue(c.nowLocked())
		if cb == nil {
			c.armLocked()
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		cb.fn() // outside the lock: it may read the clock or schedule
	}
}

// armLocked sets the real timer to wake when pending[0] falls due, given
// the offset now in force.
func (c *OffsetClock) armLocked() {
	next, ok := c.pending.next()
	if !ok {
		if c.real != nil {
			c.real.Stop()
		}
		return
	}
	wait := next.Sub(c.nowLocked())
	if c.real == nil {
		c.real = time.AfterFunc(wait, c.realFire)
		return
	}
	c.real.Reset(wait)
}

func (c *OffsetClock) realFire() {
	c.fireMu.Lock()
	defer c.fireMu.Unlock()
	c.fireDue()
}
