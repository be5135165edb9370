package auth

import (
	"context"
	"time"
)

// DelayFailure holds the answer to a failed authentication for d
// (connection.failed.authentication.delay.ms; failed-authentication-delay
// in docs/security.md), or until ctx ends. Kafka delays the same moment:
// its KafkaChannel stops writing on an authentication failure and its
// Selector (completeDelayedChannelClose) sends the error response and
// closes the channel once the delay has passed, so a client guessing
// passwords waits at least d per guess.
//
// The delay runs in real time, not on the broker clock: it slows
// attackers, who live in real time, and on a test's manual clock every
// refused login would otherwise wait until the test moved the clock. The
// caller is the connection's own goroutine, which has nothing else to do
// until the answer is sent; it blocks on one timer, so other connections
// go on and nothing spins.
func DelayFailure(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
