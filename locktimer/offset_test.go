package locktimer

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestOffsetClockAdvanceFiresDueTimersBeforeReturning(t *testing.T) {
	c := NewOffsetClock()
	start := c.Now()
	var mu sync.Mutex
	var order []string
	var sawLate bool
	at := func(name string, d time.Duration) {
		deadline := c.Now().Add(d)
		c.AfterFunc(d, func() {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, name)
			if c.Now().Before(deadline) {
				sawLate = true // ran before its deadline
			}
		})
	}
	at("b", 2*time.Hour)
	at("a", time.Hour)
	at("c", 3*time.Hour)

	c.Advance(90 * time.Minute)
	mu.Lock()
	if len(order) != 1 || order[0] != "a" {
		t.Fatalf("after 90m ran %v, want [a]", order)
	}
	mu.Unlock()

	// A callback scheduled by a callback runs in the same Advance when it
	// falls due within it.
	c.AfterFunc(time.Hour, func() { at("d", 10*time.Minute) })
	c.Advance(2 * time.Hour)
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"a", "b", "c"}; len(order) != 3 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
		t.Fatalf("after 3.5h ran %v, want %v", order, want)
	}
	if sawLate {
		t.Fatal("a callback ran before its deadline")
	}
	if got := c.Now().Sub(start); got < 210*time.Minute {
		t.Fatalf("clock moved %v, want at least 3.5h", got)
	}
	if c.Offset() != 210*time.Minute {
		t.Fatalf("offset %v", c.Offset())
	}
	// "d" was scheduled at 2.5h for 2h40m, so it is still pending.
	if c.Pending() != 1 {
		t.Fatalf("pending %d, want 1 (d)", c.Pending())
	}
}

// Real time still passes: a short timer fires without Advance, never
// before its deadline.
func TestOffsetClockRealTimeFiresNeverEarly(t *testing.T) {
	c := NewOffsetClock()
	c.Advance(time.Hour) // deadlines are in the advanced time
	const n = 20
	early := make(chan time.Duration, n)
	done := make(chan struct{}, n)
	for i := range n {
		d := time.Duration(i) * time.Millisecond
		deadline := c.Now().Add(d)
		c.AfterFunc(d, func() {
			if now := c.Now(); now.Before(deadline) {
				early <- deadline.Sub(now)
			}
			done <- struct{}{}
		})
	}
	timeout := time.After(10 * time.Second)
	for range n {
		select {
		case <-done:
		case <-timeout:
			t.Fatalf("timers did not fire on real time within 10 s; %d pending", c.Pending())
		}
	}
	select {
	case d := <-early:
		t.Fatalf("a timer fired %v early", d)
	default:
	}
}

func TestOffsetClockStop(t *testing.T) {
	c := NewOffsetClock()
	var ran atomic.Bool
	tm := c.AfterFunc(time.Minute, func() { ran.Store(true) })
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	c.Advance(time.Hour)
	if ran.Load() {
		t.Fatal("stopped timer ran")
	}
	fired := c.AfterFunc(time.Second, func() {})
	c.Advance(time.Second)
	if fired.Stop() {
		t.Fatal("Stop after firing reported true")
	}
	if c.Pending() != 0 {
		t.Fatalf("pending %d", c.Pending())
	}
}

// The acquisition-lock Service on an OffsetClock: Advance past a deadline
// fires the lock's callback before Advance returns.
func TestOffsetClockDrivesService(t *testing.T) {
	c := NewOffsetClock()
	s := NewService(c, nil)
	defer s.Close()
	var fired atomic.Bool
	s.Schedule(c.Now().Add(time.Hour), func() { fired.Store(true) })
	c.Advance(59 * time.Minute)
	if fired.Load() {
		t.Fatal("fired early")
	}
	c.Advance(time.Minute)
	if !fired.Load() {
		t.Fatal("not fired when Advance returned")
	}
}

func TestOffsetClockNegativeAdvance(t *testing.T) {
	c := NewOffsetClock()
	c.Advance(-time.Hour)
	if c.Offset() != 0 {
		t.Fatalf("offset %v after a negative advance", c.Offset())
	}
}
