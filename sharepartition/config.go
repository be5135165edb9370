package sharepartition

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Sentinel errors. The broker maps each to a Kafka error code in one place;
// this package knows no codes.
var (
	// ErrInvalidRecordState: an acknowledgement names a record that is not
	// ACQUIRED by the acknowledging member at or above the SPSO, or is a
	// RENEW while renewals are disabled (INVALID_RECORD_STATE).
	ErrInvalidRecordState = errors.New("sharepartition: invalid record state")
	// ErrInvalidRequest: malformed input (INVALID_REQUEST).
	ErrInvalidRequest = errors.New("sharepartition: invalid request")
	// ErrNotInitialized: the SPSO has not been chosen yet; call
	// InitializeIfNeeded first.
	ErrNotInitialized = errors.New("sharepartition: start offset not initialised")
)

// Config holds the effective settings of one share partition. Group configs
// can change at runtime; SetConfig swaps them and each takes effect at the
// next point it is read (see the fields).
type Config struct {
	// LockDuration is share.record.lock.duration.ms: the lock armed on each
	// acquisition and on each RENEW. Existing locks keep their deadline.
	LockDuration time.Duration
	// DeliveryCountLimit is the effective delivery count limit. It is read
	// when an attempt ends (release, expiry, session close), so a lowered
	// limit never cuts an attempt short, and by throttling.
	DeliveryCountLimit int16
	// MaxRecordLocks is the in-flight limit (share.partition.max.record.locks).
	MaxRecordLocks int64
	// RenewEnabled is share.renew.acknowledge.enable; when false a RENEW is
	// refused with ErrInvalidRecordState and nothing is applied.
	RenewEnabled bool
	// ReadCommitted is share.isolation.level=read_committed: aborted
	// batches are archived as they are acquired and not returned.
	ReadCommitted bool
	// OnChange, when set, is called without the partition lock held after
	// any change that may let a waiting fetch acquire something: records
	// became AVAILABLE (release, expiry, session close) or the window
	// shrank (acknowledgement, log start move). It must not block for long;
	// it runs on the timer goroutine for expiries.
	OnChange func()
	// OnDeadLetter, when set, is told of records archived by a REJECT or
	// at the delivery count limit (dead_letter.go), without the partition
	// lock held and after the change, once per archived record. Like
	// OnChange it may run on the timer goroutine and must not block long.
	OnDeadLetter func([]DeadLetter)
	// Persist, when set, is given each change of the persisted state
	// (persist.go) in the order of the changes, one at a time, without the
	// partition lock held and before the changing method returns; it must
	// not call back into the partition. Nil (no data directory) costs one
	// branch per change.
	Persist func(Persisted)
	// Counters, when set, is incremented as records move. It may be shared
	// by many partitions (the fields are atomic).
	Counters *Counters
	// StoryEvents is the size of the partition's record-story ring
	// (story.go, sharebroker.record.story.events): the events kept, the
	// oldest dropped first; 0 keeps none. A changed size starts the ring
	// over.
	StoryEvents int
}

// Validate reports the first setting out of range. The broker validates
// group configs against Kafka's bounds; these are only the bounds this
// package needs to work at all.
func (c Config) Validate() error {
	switch {
	case c.LockDuration <= 0:
		return fmt.Errorf("%w: lock duration %v must be positive", ErrInvalidRequest, c.LockDuration)
	case c.DeliveryCountLimit < 1:
		return fmt.Errorf("%w: delivery count limit %d must be at least 1", ErrInvalidRequest, c.DeliveryCountLimit)
	case c.MaxRecordLocks < 1:
		return fmt.Errorf("%w: max record locks %d must be at least 1", ErrInvalidRequest, c.MaxRecordLocks)
	case c.StoryEvents < 0:
		return fmt.Errorf("%w: story events %d must not be negative", ErrInvalidRequest, c.StoryEvents)
	}
	return nil
}

// ArchiveReason says why records were archived, for metrics.
type ArchiveReason int

const (
	ArchivedRejected      ArchiveReason = iota // REJECT or GAP acknowledgement
	ArchivedDeliveryLimit                      // an attempt ended at the delivery count limit
	ArchivedLogStart                           // below the log start offset (row 9, or expiry below SPSO)
	ArchivedCompacted                          // the batch vanished from the log (row 10)
	ArchivedAborted                            // aborted transaction under read_committed (row 11)
	NumArchiveReasons
)

// Counters counts records (not batches) as they move. All fields are
// atomic so metrics can read them while partitions write.
type Counters struct {
	Acquired        atomic.Int64
	Acknowledged    [numAckTypes]atomic.Int64 // by AckType; index AckRenew counts renewed records
	LockExpirations atomic.Int64
	MemberReleased  atomic.Int64 // records released by session close / disconnect
	LeaderMoved     atomic.Int64 // ACQUIRED records freed because their partition's leader moved
	Archived        [NumArchiveReasons]atomic.Int64
}
