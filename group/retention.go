package group

import (
	"sync"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

// retentionLoop runs a coordinator's offset-retention check (docs/groups.md
// retention) every interval on its timer service while the coordinator
// holds any group, so an idle broker keeps no timer for it. Its field is
// guarded by the coordinator's mutex.
type retentionLoop struct {
	armed bool
}

// armLocked schedules the next check unless one is pending; the caller
// holds mu. check runs without mu; then, with mu held, the loop arms again
// if keep still says so.
func (r *retentionLoop) armLocked(timers *locktimer.Service, clock locktimer.Clock, interval time.Duration,
	mu *sync.Mutex, check func(now time.Time), keep func() bool,
) {
	if r.armed {
		return
	}
	r.armed = true
	timers.Schedule(clock.Now().Add(interval), func() {
		check(clock.Now())
		mu.Lock()
		defer mu.Unlock()
		r.armed = false
		if keep() {
			r.armLocked(timers, clock, interval, mu, check, keep)
		}
	})
}
