package broker

import (
	"context"
	"time"
)

// Fetch and ShareFetch wait in internal/longpoll's loop (shareserve runs
// it for ShareFetch); what the broker adds is when a wait must end early:
// when the broker closes.

// closing is the broker's closing as a context: done when b.done is
// closed. Fetch's and ShareFetch's long polls end early on it; it is a
// conversion, so a request pays nothing for it.
type closing chan struct{}

func (c closing) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c closing) Done() <-chan struct{}       { return c }
func (c closing) Value(any) any               { return nil }

func (c closing) Err() error {
	select {
	case <-c:
		return context.Canceled
	default:
		return nil
	}
}

// closingCtx is the context of a request's wait: cancelled when the
// broker closes.
func (b *Broker) closingCtx() context.Context { return closing(b.done) }
