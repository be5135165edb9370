package sharepartition

import "fmt"

// State is the delivery state of one record (or of a whole in-flight batch
// that has not been split). The values start at 1 so that the zero entry of
// the transition table means "illegal".
type State uint8

const (
	Available    State = 1 // may be handed to any member
	Acquired     State = 2 // handed to one member under a time-limited lock
	Acknowledged State = 3 // processed (ACCEPT); terminal
	Archived     State = 4 // never delivered again; terminal
	numStates          = 5
)

// Terminal reports whether nothing can move a record out of s (only an
// administrative reset discards it).
func (s State) Terminal() bool { return s == Acknowledged || s == Archived }

// PersistedID is the id Kafka's share-group state records use for s
// (AVAILABLE 0, ACQUIRED 1, ACKNOWLEDGED 2, ARCHIVED 4).
func (s State) PersistedID() int8 {
	switch s {
	case Available:
		return 0
	case Acquired:
		return 1
	case Acknowledged:
		return 2
	case Archived:
		return 4
	}
	return -1
}

// StateForPersistedID is the inverse of PersistedID; ok is false for an
// unknown id.
func StateForPersistedID(id int8) (s State, ok bool) {
	switch id {
	case 0:
		return Available, true
	case 1:
		return Acquired, true
	case 2:
		return Acknowledged, true
	case 4:
		return Archived, true
	}
	return 0, false
}

func (s State) String() string {
	switch s {
	case Available:
		return "AVAILABLE"
	case Acquired:
		return "ACQUIRED"
	case Acknowledged:
		return "ACKNOWLEDGED"
	case Archived:
		return "ARCHIVED"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// event is something that happens to a record; each is one or more rows of
// the transition table in share-groups.md §1.2.
type event uint8

const (
	evAcquire     event = iota // row 1
	evAccept                   // row 2
	evReject                   // row 3
	evGap                      // row 4
	evRelease                  // row 5
	evRenew                    // row 6
	evExpire                   // row 7
	evMemberGone               // row 8: session closed or connection dropped
	evLogStart                 // row 9: log start offset moved past an AVAILABLE record
	evVanish                   // row 10: its producer batch was compacted away
	evAbort                    // row 11: aborted transaction under read_committed
	evLeaderMoved              // row 12: the partition's leadership moved to another node
	numEvents
)

var eventNames = [numEvents]string{"acquire", "accept", "reject", "gap", "release", "renew",
	"expire", "member-gone", "log-start", "vanish", "abort", "leader-moved"}

func (e event) String() string {
	if e < numEvents {
		return eventNames[e]
	}
	return fmt.Sprintf("event(%d)", uint8(e))
}

// next is the whole state machine. A zero entry means the event is illegal
// in that state: a client asking for it gets ErrInvalidRecordState (checked
// before anything is applied), and the code attempting it is a bug (panic).
//
// The guard that is not in the table: an attempt that ends without an
// acknowledgement (release, expiry, member gone) archives instead of making
// the record available when its delivery count reached the limit or it lies
// below the SPSO. See transitionLocked.
var next = [numStates][numEvents]State{
	Available: {
		evAcquire:  Acquired,
		evLogStart: Archived,
		evVanish:   Archived,
	},
	Acquired: {
		evAccept:     Acknowledged,
		evReject:     Archived,
		evGap:        Archived,
		evRelease:    Available,
		evRenew:      Acquired,
		evExpire:     Available,
		evMemberGone: Available,
		evAbort:      Archived,
		// The new leader loads what was last persisted; an acquisition
		// never was (LeaderMoved).
		evLeaderMoved: Available,
	},
}

// AckType is an acknowledgement type as ShareFetch and ShareAcknowledge
// carry it.
type AckType int8

const (
	AckGap      AckType = 0
	AckAccept   AckType = 1
	AckRelease  AckType = 2
	AckReject   AckType = 3
	AckRenew    AckType = 4 // KIP-1222
	numAckTypes         = 5
)

var ackEvents = [numAckTypes]event{AckGap: evGap, AckAccept: evAccept, AckRelease: evRelease,
	AckReject: evReject, AckRenew: evRenew}

func (t AckType) String() string {
	switch t {
	case AckGap:
		return "GAP"
	case AckAccept:
		return "ACCEPT"
	case AckRelease:
		return "RELEASE"
	case AckReject:
		return "REJECT"
	case AckRenew:
		return "RENEW"
	}
	return fmt.Sprintf("AckType(%d)", int8(t))
}
