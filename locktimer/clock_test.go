package locktimer

import (
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestManualClockFiresDueCallbacksInDeadlineOrder(t *testing.T) {
	c := NewManualClock(epoch)
	var fired []string
	var seen []time.Time
	record := func(name string) func() {
		return func() {
			fired = append(fired, name)
			seen = append(seen, c.Now())
		}
	}
	c.AfterFunc(30*time.Millisecond, record("c"))
	c.AfterFunc(10*time.Millisecond, record("a"))
	c.AfterFunc(20*time.Millisecond, record("b1"))
	c.AfterFunc(20*time.Millisecond, record("b2")) // same deadline: scheduling order
	c.AfterFunc(time.Second, record("late"))

	c.Advance(30 * time.Millisecond)
	if want := []string{"a", "b1", "b2", "c"}; !slices.Equal(fired, want) {
		t.Fatalf("fired %v, want %v", fired, want)
	}
	// Each callback reads its own deadline as now.
	wantSeen := []time.Time{epoch.Add(10 * time.Millisecond), epoch.Add(20 * time.Millisecond), epoch.Add(20 * time.Millisecond), epoch.Add(30 * time.Millisecond)}
	if !slices.EqualFunc(seen, wantSeen, time.Time.Equal) {
		t.Fatalf("callbacks saw %v, want %v", seen, wantSeen)
	}
	if got := c.Now(); !got.Equal(epoch.Add(30 * time.Millisecond)) {
		t.Fatalf("now = %v after advance", got)
	}
	if c.Pending() != 1 {
		t.Fatalf("pending = %d, want 1 (the late timer)", c.Pending())
	}
}

func TestManualClockNeverFiresEarly(t *testing.T) {
	c := NewManualClock(epoch)
	fired := false
	c.AfterFunc(100*time.Millisecond, func() { fired = true })
	c.Advance(99 * time.Millisecond)
	if fired {
		t.Fatal("fired 1 ms before its deadline")
	}
	c.Advance(time.Millisecond)
	if !fired {
		t.Fatal("did not fire at its deadline")
	}
}

func TestManualClockStop(t *testing.T) {
	c := NewManualClock(epoch)
	fired := false
	tm := c.AfterFunc(time.Millisecond, func() { fired = true })
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	if tm.Stop() {
		t.Fatal("second Stop reported true")
	}
	c.Advance(time.Second)
	if fired {
		t.Fatal("stopped timer fired")
	}
	ran := c.AfterFunc(time.Millisecond, func() {})
	c.Advance(time.Millisecond)
	if ran.Stop() {
		t.Fatal("Stop after firing reported true")
	}
}

func TestManualClockCallbackSchedulesWithinWindow(t *testing.T) {
	c := NewManualClock(epoch)
	var order []int
	c.AfterFunc(10*time.Millisecond, func() {
		order = append(order, 1)
		// Due at 15 ms, inside the window being advanced: must also fire.
		c.AfterFunc(5*time.Millisecond, func() { order = append(order, 2) })
		// Due at 60 ms, outside: must wait.
		c.AfterFunc(50*time.Millisecond, func() { order = append(order, 3) })
	})
	c.Advance(20 * time.Millisecond)
	if !slices.Equal(order, []int{1, 2}) {
		t.Fatalf("order %v, want [1 2]", order)
	}
	c.Advance(40 * time.Millisecond)
	if !slices.Equal(order, []int{1, 2, 3}) {
		t.Fatalf("order %v, want [1 2 3]", order)
	}
}

func TestManualClockSetNeverMovesBack(t *testing.T) {
	c := NewManualClock(epoch)
	c.Set(epoch.Add(-time.Hour))
	if !c.Now().Equal(epoch) {
		t.Fatalf("Set moved the clock back to %v", c.Now())
	}
	c.Advance(-time.Second)
	if !c.Now().Equal(epoch) {
		t.Fatalf("negative Advance moved the clock to %v", c.Now())
	}
}

func TestManualClockConcurrentUse(t *testing.T) {
	c := NewManualClock(epoch)
	var mu sync.Mutex
	count := 0
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				c.AfterFunc(time.Duration(g*100+i)*time.Millisecond, func() {
					mu.Lock()
					count++
					mu.Unlock()
				})
				c.Advance(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	c.Advance(time.Hour)
	if count != 400 {
		t.Fatalf("%d callbacks ran, want 400", count)
	}
}

func TestRealClockAfterFunc(t *testing.T) {
	var c Clock = RealClock{}
	done := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("real AfterFunc did not fire within 10 s")
	}
}

// Rule: clock-bounded. An advance that would take a clock past MaxTime is
// refused and moves nothing, on both clocks a test moves; one that lands
// on MaxTime is allowed. The largest Go duration, 2562047h47m16.854775807s,
// wrapped the offset clock backwards before the bound.
func TestClockAdvanceBoundedByMaxTime(t *testing.T) {
	manual := NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	offset := NewOffsetClock()
	for name, c := range map[string]interface {
		Clock
		Advance(time.Duration) error
	}{"manual": manual, "offset": offset} {
		before := c.Now()
		for _, d := range []time.Duration{math.MaxInt64, 2562047*time.Hour + 47*time.Minute, MaxTime.Sub(before) + time.Hour} {
			if err := c.Advance(d); !errors.Is(err, ErrPastMaxTime) {
				t.Errorf("%s: Advance(%v) = %v, want ErrPastMaxTime", name, d, err)
			}
		}
		if now := c.Now(); now.Before(before) || now.Sub(before) > time.Minute {
			t.Errorf("%s: a refused advance moved the clock from %v to %v", name, before, now)
		}
	}
	if err := manual.Advance(MaxTime.Sub(manual.Now())); err != nil || !manual.Now().Equal(MaxTime) {
		t.Fatalf("advance to MaxTime: %v, clock %v", err, manual.Now())
	}
	if err := manual.Advance(time.Nanosecond); !errors.Is(err, ErrPastMaxTime) {
		t.Fatalf("one nanosecond past MaxTime: %v", err)
	}
	if err := NewManualClock(time.Now()).Set(MaxTime.Add(time.Nanosecond)); !errors.Is(err, ErrPastMaxTime) {
		t.Fatalf("Set past MaxTime: %v", err)
	}
}
