package broker

import (
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/metrics"
)

// longPoll is the waiting of Fetch and ShareFetch. It calls attempt until
// attempt reports done, the deadline passes on the broker clock, or the
// broker begins to close. attempt must register wake with everything whose
// change could alter its answer before it looks (so a change in between
// still wakes us), and return a function that unregisters it. The last
// attempt's answer is the one the caller sends; after the deadline there is
// always one more attempt, so a waiting request answers with what exists
// at the deadline. waits, when set, counts the request among its node's
// waiting fetches while it is parked, and as expired if it was parked and
// the deadline ended the wait (Kafka's delayed share fetch purgatory: a
// request that completes at once is never in it).
func (b *Broker) longPoll(deadline time.Time, attempt func(wake chan<- struct{}) (done bool, unwatch func()), waits *metrics.ShareWaits) {
	wake := make(chan struct{}, 1)
	var timer locktimer.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
			if waits != nil { // the timer is armed exactly when the request parks
				waits.Unpark(!b.clock.Now().Before(deadline))
			}
		}
	}()
	for {
		done, unwatch := attempt(wake)
		now := b.clock.Now()
		done = done || !now.Before(deadline)
		if !done && timer == nil {
			timer = b.clock.AfterFunc(deadline.Sub(now), func() {
				select {
				case wake <- struct{}{}:
				default:
				}
			})
			if waits != nil {
				waits.Park()
			}
		}
		if !done {
			select {
			case <-wake:
			case <-b.done:
				done = true
			}
		}
		unwatch()
		if done {
			return
		}
	}
}
