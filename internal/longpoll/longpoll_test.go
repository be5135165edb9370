package longpoll

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/storage"
)

// share-groups.md §2.8: a parked request is woken by a Notify of what it
// watches, counted as parked meanwhile, and not expired.
func TestPollWokenByNotify(t *testing.T) {
	clock := locktimer.NewManualClock(time.Unix(1_700_000_000, 0))
	var n storage.Notifier
	var ready atomic.Bool
	var parked atomic.Int64
	attempt := func(wake chan<- struct{}) (bool, func()) {
		n.Watch(wake)
		return ready.Load(), func() { n.Unwatch(wake) }
	}
	done := make(chan bool)
	go func() { done <- Poll(context.Background(), clock, clock.Now().Add(time.Hour), attempt, &parked) }()
	for parked.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ready.Store(true)
	n.Notify()
	if expired := <-done; expired || parked.Load() != 0 {
		t.Errorf("expired %v, parked %d after a wake-up", expired, parked.Load())
	}
}

// share-groups.md §2.8: at the deadline on the clock the request makes one
// last attempt and reports that the deadline ended its wait.
func TestPollExpiresOnTheClock(t *testing.T) {
	clock := locktimer.NewManualClock(time.Unix(1_700_000_000, 0))
	var parked atomic.Int64
	attempts := 0
	attempt := func(chan<- struct{}) (bool, func()) { attempts++; return false, func() {} }
	done := make(chan bool)
	go func() { done <- Poll(context.Background(), clock, clock.Now().Add(time.Second), attempt, &parked) }()
	for parked.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	clock.Advance(time.Second)
	if expired := <-done; !expired || attempts != 2 {
		t.Errorf("expired %v after %d attempts; want expired after a last attempt", expired, attempts)
	}
}
