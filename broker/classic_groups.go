package broker

import (
	"fmt"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/storage"
)

// awaitGroup waits for a JoinGroup or SyncGroup answer. The group package
// answers every waiter by the end of its round (bounded by the rebalance
// timeout on the broker clock) or when the member is removed; a broker that
// begins to close stops the wait, and the connection is closed.
func awaitGroup[T any](b *Broker, ch <-chan T) (T, error) {
	if b.awaitHook != nil {
		select {
		case v := <-ch:
			return v, nil
		default:
			b.awaitHook(func() bool { return len(ch) > 0 })
		}
	}
	select {
	case v := <-ch:
		return v, nil
	case <-b.serveCtx.Done():
		var zero T
		return zero, fmt.Errorf("%w: the broker is shutting down", group.ErrCoordinatorNotAvailable)
	}
}

// commitTopicName is the topic an offset commit names: name, or, at the
// versions that name topics by ID (OffsetCommit v10+, TxnOffsetCommit v6+),
// the topic whose ID is id; an unknown ID is ErrUnknownTopicID.
func (b *Broker) commitTopicName(byID bool, name string, id [16]byte) (string, error) {
	if !byID {
		return name, nil
	}
	if n, ok := b.store.TopicName(id); ok {
		return n, nil
	}
	return "", storage.ErrUnknownTopicID
}
