// Package longpoll is the waiting of Fetch and ShareFetch: the one loop
// that parks a request until something it reads changes or its deadline
// passes on the broker clock. What wakes it is storage.Notifier, the one
// wake set ("records arrived or locks freed") of partition logs and share
// partitions alike. The broker's Fetch and shareserve's ShareFetch both
// use the loop, so neither imports the other and it exists once; it is
// internal because only those two park requests.
package longpoll

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

// Attempt is one look by a parked request. It must register wake with
// everything whose change could alter its answer before it looks (so a
// change in between still wakes it), and return a function that
// unregisters what the attempt registered. A registration may instead
// last the whole poll (a share session's ready set registers wake once,
// at the first attempt); its caller ends it after Poll returns. It is
// done when the request should answer now.
type Attempt func(wake chan<- struct{}) (done bool, unwatch func())

// Poll calls attempt until attempt reports done, the deadline passes on
// clock, or ctx is done (the broker closes). The last attempt's answer is
// the one the caller sends; after the deadline there is always one more
// attempt, so a waiting request answers with what exists at the deadline.
//
// parked, when set, counts the request while it is parked (Kafka's
// delayed share fetch purgatory: a request that completes at once is
// never in it). expired reports that it was parked and the deadline ended
// the wait.
func Poll(ctx context.Context, clock locktimer.Clock, deadline time.Time, attempt Attempt, parked *atomic.Int64) (expired bool) {
	wake := make(chan struct{}, 1)
	var timer locktimer.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
			if parked != nil { // the timer is armed exactly when the request parks
				parked.Add(-1)
			}
			expired = !clock.Now().Before(deadline)
		}
	}()
	for {
		done, unwatch := attempt(wake)
		now := clock.Now()
		done = done || !now.Before(deadline)
		if !done && timer == nil {
			timer = clock.AfterFunc(deadline.Sub(now), func() { send(wake) })
			if parked != nil {
				parked.Add(1)
			}
		}
		if !done {
			select {
			case <-wake:
			case <-ctx.Done():
				done = true
			}
		}
		unwatch()
		if done {
			return
		}
	}
}

// Sleep waits d on clock, or until ctx is done.
func Sleep(ctx context.Context, clock locktimer.Clock, d time.Duration) {
	if d <= 0 {
		return
	}
	fired := make(chan struct{})
	t := clock.AfterFunc(d, func() { close(fired) })
	select {
	case <-fired:
	case <-ctx.Done():
		t.Stop()
	}
}

func send(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
