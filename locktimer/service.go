package locktimer

import (
	"sync"
	"time"
)

// Service is the acquisition-lock timer service: many timers, one clock
// callback. Schedule, Reset and Cancel are O(log n) on an indexed 4-ary heap
// (a timer knows its heap slot, so it is removed or moved in place, never
// searched for); Reset and Cancel allocate nothing. There is no goroutine
// per timer: the service keeps one callback armed on its Clock for the
// earliest deadline, and when it fires, every timer due by then is taken
// off the heap under the service lock and run after the lock is released.
//
// With a ManualClock, Advance(d) returns only after every timer due by the
// new time has fired, because the armed callback runs on the advancing
// goroutine and re-arms itself within the window.
//
// A timer is never fired early: it runs only once Clock.Now() >= deadline.
//
// Callbacks may call Schedule, Reset and Cancel, including on their own
// timer. A callback can lose a race with Cancel (the timer was taken off the
// heap just before Cancel ran): Cancel then reports false, and the owner
// must recognise the stale fire itself, as sharepartition does with a lock
// generation.
type Service struct {
	clock Clock
	// onFire, when set, is told each fired timer's lateness (how long after
	// its deadline it ran); the broker exports it as a histogram.
	onFire func(late time.Duration)

	mu      sync.Mutex // guards everything below
	heap    []*Handle
	armed   Timer // the clock callback for heap[0], nil when none
	armedAt int64 // deadline the armed callback was set for, in Unix ns
	closed  bool
	due     []dueTimer // reused buffer of timers popped by a fire; nil while one runs
}

// Handle is one scheduled callback of a Service. Its zero value is
// unusable; get one from Schedule. A Handle may be Reset after it fired or
// was cancelled, which schedules it again.
type Handle struct {
	deadline int64 // Unix ns; guarded by Service.mu
	index    int32 // slot in Service.heap, -1 when not scheduled; guarded by Service.mu
	fn       func()
}

// NewService returns a timer service on clock. onFire may be nil.
func NewService(clock Clock, onFire func(late time.Duration)) *Service {
	return &Service{clock: clock, onFire: onFire}
}

// Schedule arranges for fn to run once the clock reaches deadline, and
// returns the timer that Reset and Cancel take.
func (s *Service) Schedule(deadline time.Time, fn func()) *Handle {
	t := &Handle{fn: fn, index: -1}
	s.Reset(t, deadline)
	return t
}

// Reset moves t to a new deadline, scheduling it again if it already fired
// or was cancelled. It allocates nothing once the heap has room.
func (s *Service) Reset(t *Handle, deadline time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	t.deadline = deadline.UnixNano()
	if t.index < 0 {
		t.index = int32(len(s.heap))
		s.heap = append(s.heap, t)
		s.up(int(t.index))
	} else {
		s.fix(int(t.index))
	}
	s.armLocked()
}

// Cancel stops t. It reports whether t was pending; false means it already
// fired (or is about to run), or was cancelled before.
func (s *Service) Cancel(t *Handle) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.index < 0 {
		return false
	}
	s.removeLocked(int(t.index))
	// The armed callback may now be early for the new heap[0]; it is
	// harmless (it fires nothing and re-arms), so it is left alone.
	return true
}

// Len returns the number of pending timers.
func (s *Service) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.heap)
}

// Close cancels every timer and the armed clock callback. Schedule and
// Reset do nothing afterwards.
func (s *Service) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, t := range s.heap {
		t.index = -1
	}
	s.heap = nil
	if s.armed != nil {
		s.armed.Stop()
		s.armed = nil
	}
}

// armLocked makes sure a clock callback is set for no later than heap[0].
func (s *Service) armLocked() {
	if len(s.heap) == 0 {
		return
	}
	next := s.heap[0].deadline
	if s.armed != nil && s.armedAt <= next {
		return
	}
	if s.armed != nil {
		s.armed.Stop()
	}
	s.armedAt = next
	d := time.Duration(next - s.clock.Now().UnixNano())
	s.armed = s.clock.AfterFunc(d, s.fire)
}

// fire runs every timer due now, outside the lock, then re-arms. With the
// real clock a Reset may arm a second callback while this one still runs
// callbacks, so the buffer of due timers is owned by one fire at a time.
func (s *Service) fire() {
	s.mu.Lock()
	s.armed = nil
	now := s.clock.Now().UnixNano()
	due := s.due
	s.due = nil
	for len(s.heap) > 0 && s.heap[0].deadline <= now {
		t := s.heap[0]
		s.removeLocked(0)
		due = append(due, dueTimer{fn: t.fn, deadline: t.deadline})
	}
	s.mu.Unlock()

	for _, d := range due {
		if s.onFire != nil {
			s.onFire(time.Duration(now - d.deadline))
		}
		d.fn()
	}

	clear(due)
	s.mu.Lock()
	if s.due == nil && cap(due) <= 1024 {
		s.due = due[:0]
	}
	if !s.closed {
		s.armLocked()
	}
	s.mu.Unlock()
}

// dueTimer is a fired timer's callback and deadline, copied out of the heap
// so the Handle itself may be Reset by its own callback.
type dueTimer struct {
	fn       func()
	deadline int64
}

// The heap is 4-ary: shallower than a binary heap, so sift-up (the common
// case: most timers are scheduled later than the others) touches fewer
// cache lines, as Go's runtime timer heap does.

func (s *Service) less(i, j int) bool { return s.heap[i].deadline < s.heap[j].deadline }

func (s *Service) swap(i, j int) {
	s.heap[i], s.heap[j] = s.heap[j], s.heap[i]
	s.heap[i].index = int32(i)
	s.heap[j].index = int32(j)
}

func (s *Service) up(i int) {
	for i > 0 {
		parent := (i - 1) / 4
		if !s.less(i, parent) {
			return
		}
		s.swap(i, parent)
		i = parent
	}
}

func (s *Service) down(i int) {
	n := len(s.heap)
	for {
		first := 4*i + 1
		if first >= n {
			return
		}
		smallest := first
		for c := first + 1; c < first+4 && c < n; c++ {
			if s.less(c, smallest) {
				smallest = c
			}
		}
		if !s.less(smallest, i) {
			return
		}
		s.swap(i, smallest)
		i = smallest
	}
}

func (s *Service) fix(i int) {
	t := s.heap[i]
	s.up(i)
	s.down(int(t.index))
}

func (s *Service) removeLocked(i int) {
	last := len(s.heap) - 1
	t := s.heap[i]
	if i != last {
		s.swap(i, last)
	}
	s.heap[last] = nil
	s.heap = s.heap[:last]
	t.index = -1
	if i != last {
		s.fix(i)
	}
}
