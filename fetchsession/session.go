// Package fetchsession keeps the broker's incremental fetch sessions
// (KIP-227), as Kafka's FetchManager, FetchSessionCache and FetchContext
// classes do (server/src/main/java/org/apache/kafka/server/FetchSession.java
// and FetchContext.java, core's FetchSession.scala before them): which
// partitions a consumer's session holds with the parameters it last sent,
// what the session last answered for each, the session epochs, and the
// bounded cache of sessions with its eviction rules. It sees no wire types:
// the broker turns a Fetch request into a Request, reads the partitions the
// Context names, and hands the answers back to Finish, which says which of
// them the answer carries (docs/log.md, fetch sessions).
package fetchsession

import (
	"errors"
	"math"
)

// The session IDs and epochs of Kafka's FetchMetadata.
const (
	// NoSession is the session ID of a fetch outside any session
	// (INVALID_SESSION_ID), and of an answer that created none.
	NoSession int32 = 0
	// InitialEpoch asks for a full fetch that creates a session.
	InitialEpoch int32 = 0
	// FinalEpoch asks for a full fetch without a session (and closes the
	// named one).
	FinalEpoch int32 = -1
)

// NextEpoch is the epoch the next request of a session must carry after
// one with epoch e (FetchMetadata.nextEpoch): a negative epoch stays
// final, and the epoch wraps from the largest int32 to 1, never back to
// the initial 0.
func NextEpoch(e int32) int32 {
	switch {
	case e < 0:
		return FinalEpoch
	case e == math.MaxInt32:
		return 1
	default:
		return e + 1
	}
}

// The session errors a request can get, each answered in place of every
// partition (Kafka's SessionErrorContext). The broker maps them to codes.
var (
	// ErrSessionNotFound: an incremental fetch names a session the cache
	// does not hold (FETCH_SESSION_ID_NOT_FOUND).
	ErrSessionNotFound = errors.New("fetch session not found")
	// ErrInvalidEpoch: an incremental fetch carries another epoch than
	// the session expects, or a second request of the session finished
	// first (INVALID_FETCH_SESSION_EPOCH).
	ErrInvalidEpoch = errors.New("invalid fetch session epoch")
	// ErrTopicIDMismatch: a session made with topic IDs (Fetch v13+) is
	// continued by a request with names, or the other way round
	// (FETCH_SESSION_TOPIC_ID_ERROR).
	ErrTopicIDMismatch = errors.New("fetch session topic ID mismatch")
)

// Key names a partition within a session: by topic ID in a session made
// with IDs (Name empty), by topic name otherwise (ID zero), as Kafka's
// CachedPartition compares them.
type Key struct {
	ID        [16]byte
	Name      string
	Partition int32
}

// Params are what a request says of one partition, kept by the session
// for the requests that leave the partition out.
type Params struct {
	FetchOffset        int64
	LogStartOffset     int64 // the fetcher's; -1 for a consumer
	MaxBytes           int32
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32
}

// Requested is one partition of a request, or of a session.
type Requested struct {
	Key
	Params
}

// Answer is what the broker read for one partition, as much as the
// session compares with what it answered before
// (CachedPartition.maybeUpdateResponseData).
type Answer struct {
	// Records is whether the answer carries record bytes.
	Records bool
	// Failed is whether it carries an error code.
	Failed bool
	// PreferredReplica is whether it names a preferred read replica.
	PreferredReplica bool
	// DivergingEpoch is whether it names a diverging epoch.
	DivergingEpoch bool
	HighWatermark  int64
	LogStartOffset int64
}

// cached is one partition of a session: the request parameters last sent
// and the high watermark and log start last answered, in the session's
// order (a doubly linked list, so moving one to the back is O(1)).
type cached struct {
	Requested
	lastAnswer
	prev, next *cached
}

// lastAnswer is what the session last answered for a partition.
type lastAnswer struct {
	highWatermark int64
	logStart      int64
}

// mustAnswer reports whether an incremental answer must carry the
// partition, and with update records what it carries as answered: records,
// an error, a preferred replica or a diverging epoch always; otherwise a
// high watermark or log start offset other than the last answered. An
// error sets the remembered high watermark to -1, so the partition is
// answered again once the error is gone (Kafka's
// CachedPartition.maybeUpdateResponseData; rule fetch-session-incremental).
func (c *lastAnswer) mustAnswer(a *Answer, update bool) bool {
	must := a.Records || a.PreferredReplica || a.DivergingEpoch
	if c.highWatermark != a.HighWatermark {
		must = true
		if update {
			c.highWatermark = a.HighWatermark
		}
	}
	if c.logStart != a.LogStartOffset {
		must = true
		if update {
			c.logStart = a.LogStartOffset
		}
	}
	if a.Failed {
		must = true
		if update {
			c.highWatermark = -1
		}
	}
	return must
}
