package sharepartition

import (
	"fmt"
	"time"
)

// Record stories (share-groups.md record-story): what happened to each
// record, in order, on the broker clock — acquired by whom with which
// delivery count, renewed, released, its lock expired, its session closed,
// its leader moved, acknowledged, archived and why, copied to the
// dead-letter topic and where. Kafka keeps no such history (its
// SharePartition holds only the current InFlightState); the story exists so
// a person debugging "why was this record delivered twice" can read it.
//
// Each share partition keeps a ring of the last Config.StoryEvents events.
// One event covers a run of offsets that moved together (an acquisition of
// a 500-record batch is one event), and an event that continues the
// previous one exactly (the next offset, same kind, member, time and
// details — a split batch moving offset by offset) extends it instead of
// taking a slot. The ring is written under the partition's lock with no
// allocation once it has grown to its size: member IDs and dead-letter
// topic names are strings the partition already holds, kept by reference.
// When it is full the oldest event is overwritten, and the offsets it
// covered are remembered as truncated.

// StoryKind is what happened to a run of records.
type StoryKind uint8

const (
	StoryAcquired      StoryKind = iota + 1 // handed to a member under a lock (row 1)
	StoryRenewed                            // its lock renewed by a RENEW acknowledgement (row 6)
	StoryReleased                           // released by its member: a RELEASE acknowledgement (row 5)
	StoryLockExpired                        // its lock expired (row 7)
	StorySessionClosed                      // its member's share session or connection closed (row 8)
	StoryLeaderMoved                        // its partition's leadership moved (row 12)
	StoryAcknowledged                       // acknowledged ACCEPT, REJECT or GAP (rows 2-4)
	StoryArchived                           // archived, for StoryEvent.Reason
	StoryDeadLettered                       // copied to the group's dead-letter topic
	numStoryKinds
)

var storyKindNames = [numStoryKinds]string{"", "acquired", "renewed", "released", "lock_expired",
	"session_closed", "leader_moved", "acknowledged", "archived", "dead_lettered"}

// String is the event's name in the record-story JSON.
func (k StoryKind) String() string {
	if k > 0 && k < numStoryKinds {
		return storyKindNames[k]
	}
	return fmt.Sprintf("StoryKind(%d)", uint8(k))
}

// StoryReason says why records were archived (StoryArchived) or why their
// member's records were let go (StorySessionClosed).
type StoryReason uint8

const (
	ReasonRejected         StoryReason = iota + 1 // a REJECT acknowledgement (row 3)
	ReasonGap                                     // a GAP acknowledgement (row 4)
	ReasonDeliveryLimit                           // an attempt ended at the delivery count limit
	ReasonLogStartMoved                           // below the log start offset (row 9, or an attempt ending below the SPSO)
	ReasonCompacted                               // its batch vanished from the log (row 10)
	ReasonAborted                                 // an aborted transaction under read_committed (row 11)
	ReasonSessionClosed                           // the share session was closed by its client
	ReasonConnectionClosed                        // the connection that opened the share session closed
	numStoryReasons
)

var storyReasonNames = [numStoryReasons]string{"", "rejected", "gap", "delivery_limit", "log_start_moved",
	"compacted", "aborted", "session_closed", "connection_closed"}

// String is the reason's name in the record-story JSON.
func (r StoryReason) String() string {
	if r > 0 && r < numStoryReasons {
		return storyReasonNames[r]
	}
	return fmt.Sprintf("StoryReason(%d)", uint8(r))
}

// StoryEvent is one event of the offsets FirstOffset..LastOffset. Fields
// that do not apply to Kind are zero.
type StoryEvent struct {
	Time                    time.Time // on the broker clock
	FirstOffset, LastOffset int64
	Kind                    StoryKind
	Member                  string      // the member acquiring, or holding the records when the event ended its attempt
	DeliveryCount           int16       // StoryAcquired: the delivery this is
	LockDeadline            time.Time   // StoryAcquired, StoryRenewed
	AckType                 AckType     // StoryAcknowledged, StoryReleased
	Reason                  StoryReason // StoryArchived, StorySessionClosed
	// StoryDeadLettered: the dead-letter topic and partition, and the
	// dead-letter offset of FirstOffset; each later offset's follows it.
	DLQTopic     string
	DLQPartition int32
	DLQOffset    int64
}

// DLQOffsetOf is the dead-letter offset of offset o, inside a
// StoryDeadLettered event.
func (e StoryEvent) DLQOffsetOf(o int64) int64 { return e.DLQOffset + o - e.FirstOffset }

// storyEvent is one slot of the ring: StoryEvent packed small (56 bytes),
// times as Unix nanoseconds.
type storyEvent struct {
	at          int64 // Unix ns
	first, last int64
	aux         int64  // lock deadline (acquired, renewed) or DLQ offset of first (dead_lettered)
	name        string // member, or DLQ topic (dead_lettered)
	part        int32  // DLQ partition
	count       int16
	kind        StoryKind
	detail      uint8 // AckType or StoryReason
}

// continues reports whether e is prev carried on to the next offsets: same
// kind, time and details, starting right after prev (and, for dead letters,
// at the next dead-letter offset).
func (e *storyEvent) continues(prev *storyEvent) bool {
	if e.first != prev.last+1 || e.kind != prev.kind || e.at != prev.at || e.detail != prev.detail ||
		e.count != prev.count || e.part != prev.part || e.name != prev.name {
		return false
	}
	if e.kind == StoryDeadLettered {
		return e.aux == prev.aux+prev.last-prev.first+1
	}
	return e.aux == prev.aux
}

func (e *storyEvent) export() StoryEvent {
	out := StoryEvent{Time: time.Unix(0, e.at), FirstOffset: e.first, LastOffset: e.last, Kind: e.kind, Member: e.name}
	switch e.kind {
	case StoryAcquired:
		out.DeliveryCount = e.count
		out.LockDeadline = time.Unix(0, e.aux)
	case StoryRenewed:
		out.LockDeadline = time.Unix(0, e.aux)
	case StoryAcknowledged, StoryReleased:
		out.AckType = AckType(e.detail)
	case StoryArchived, StorySessionClosed:
		out.Reason = StoryReason(e.detail)
	case StoryDeadLettered:
		out.Member = ""
		out.DLQTopic, out.DLQPartition, out.DLQOffset = e.name, e.part, e.aux
	}
	return out
}

// storyRingFirst is the slots a ring takes at its first event. A share
// partition read once tells a handful of events (acquired, acknowledged),
// and a broker with thousands of partitions holds a ring for each, so
// rings start small and double (issue 22: 16 slots per partition were the
// largest pointer-holding part of the heap at 4096 partitions).
const storyRingFirst = 4

// storyRing is a bounded ring of events, oldest overwritten first. It grows
// by doubling up to its size, so a quiet share partition holds little, and
// allocates nothing more once full.
type storyRing struct {
	buf  []storyEvent // len < size: buf[0:len] in order; len == size: oldest at next
	size int          // Config.StoryEvents; 0 keeps nothing
	next int          // once full, the slot written next (holding the oldest event)
	// Offsets some overwritten event covered, for Truncated: the lowest
	// and highest, once anything was overwritten.
	dropped        bool
	dropLo, dropHi int64
}

func (r *storyRing) resize(size int) {
	if size == r.size {
		return
	}
	// A new size starts over: the broker sets it once, at start.
	*r = storyRing{size: size}
}

func (r *storyRing) full() bool { return r.size > 0 && len(r.buf) == r.size }

// newest returns the k-th newest event (0 the newest), nil when there is
// none.
func (r *storyRing) newest(k int) *storyEvent {
	switch {
	case k >= len(r.buf):
		return nil
	case r.full():
		return &r.buf[(r.next+r.size-1-k)%r.size]
	}
	return &r.buf[len(r.buf)-1-k]
}

func (r *storyRing) add(e storyEvent) {
	if r.size == 0 {
		return
	}
	// A split batch moving offset by offset tells one or two events per
	// offset (a REJECT: acknowledged, then archived), so e may continue
	// the newest event or the one before it. The one before is extended
	// only when the newest does not touch e's offsets, so every offset's
	// events keep their order.
	if prev := r.newest(0); prev != nil && e.continues(prev) {
		prev.last = e.last
		return
	}
	if prev := r.newest(1); prev != nil && e.continues(prev) {
		if newest := r.newest(0); newest.last < e.first || newest.first > e.last {
			prev.last = e.last
			return
		}
	}
	if !r.full() {
		if len(r.buf) == cap(r.buf) {
			grown := make([]storyEvent, len(r.buf), min(max(storyRingFirst, 2*cap(r.buf)), r.size))
			copy(grown, r.buf)
			r.buf = grown
		}
		r.buf = append(r.buf, e)
		return
	}
	old := &r.buf[r.next]
	if !r.dropped {
		r.dropped, r.dropLo, r.dropHi = true, old.first, old.last
	} else {
		r.dropLo, r.dropHi = min(r.dropLo, old.first), max(r.dropHi, old.last)
	}
	*old = e
	r.next = (r.next + 1) % r.size
}

// each calls f on every event, oldest first, until f returns false.
func (r *storyRing) each(f func(*storyEvent) bool) {
	start := 0
	if r.full() {
		start = r.next
	}
	for i := range r.buf {
		if !f(&r.buf[(start+i)%len(r.buf)]) {
			return
		}
	}
}

// eachNewest calls f on every event, newest first, until f returns false.
func (r *storyRing) eachNewest(f func(*storyEvent) bool) {
	start := 0
	if r.full() {
		start = r.next
	}
	for i := len(r.buf) - 1; i >= 0; i-- {
		if !f(&r.buf[(start+i)%len(r.buf)]) {
			return
		}
	}
}

// tellLocked adds an event of [first, last] to the story.
func (sp *SharePartition) tellLocked(kind StoryKind, first, last int64, member string, now time.Time, detail uint8, count int16, aux int64) {
	if sp.story.size == 0 {
		return
	}
	sp.story.add(storyEvent{at: now.UnixNano(), first: first, last: last, aux: aux, name: member,
		count: count, kind: kind, detail: detail})
}

// tellTransitionLocked tells what one transition did to [first, last]:
// the event ev names, then, when it archived the records, the archive and
// its reason. owner is the member that held the records before ev.
func (sp *SharePartition) tellTransitionLocked(ev event, r *rec, first, last int64, owner string, to State, why StoryReason, now time.Time) {
	switch ev {
	case evAcquire:
		sp.tellLocked(StoryAcquired, first, last, r.owner, now, 0, r.count, r.deadline)
	case evRenew:
		sp.tellLocked(StoryRenewed, first, last, owner, now, 0, 0, r.deadline)
	case evAccept:
		sp.tellLocked(StoryAcknowledged, first, last, owner, now, uint8(AckAccept), 0, 0)
	case evReject:
		sp.tellLocked(StoryAcknowledged, first, last, owner, now, uint8(AckReject), 0, 0)
		why = ReasonRejected
	case evGap:
		sp.tellLocked(StoryAcknowledged, first, last, owner, now, uint8(AckGap), 0, 0)
		why = ReasonGap
	case evRelease:
		sp.tellLocked(StoryReleased, first, last, owner, now, uint8(AckRelease), 0, 0)
	case evExpire:
		sp.tellLocked(StoryLockExpired, first, last, owner, now, 0, 0, 0)
	case evMemberGone:
		sp.tellLocked(StorySessionClosed, first, last, owner, now, uint8(sp.releaseReason), 0, 0)
	case evLeaderMoved:
		sp.tellLocked(StoryLeaderMoved, first, last, owner, now, 0, 0, 0)
	case evLogStart:
		why = ReasonLogStartMoved
	case evVanish:
		why = ReasonCompacted
	case evAbort:
		why = ReasonAborted
	}
	if to == Archived {
		sp.tellLocked(StoryArchived, first, last, "", now, uint8(why), 0, 0)
	}
}

// DeadLettered adds to the story that the dead letters of offsets
// first..last were written to partition of the dead-letter topic topic at
// dlqOffset onwards, one record per offset in order. The dead-letter
// writer calls it once the append succeeded.
func (sp *SharePartition) DeadLettered(first, last int64, topic string, partition int32, dlqOffset int64, now time.Time) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.story.size == 0 {
		return
	}
	sp.story.add(storyEvent{at: now.UnixNano(), first: first, last: last, aux: dlqOffset, name: topic,
		part: partition, kind: StoryDeadLettered})
}

// Story is the story of one offset.
type Story struct {
	// Record is the offset's state now, nil when it is not in the
	// in-flight window (below the SPSO and not ACQUIRED, or never
	// fetched).
	Record *RangeState
	// Events are the events whose range contains the offset, oldest
	// first.
	Events []StoryEvent
	// Truncated: the ring overwrote events that covered the offset.
	Truncated bool
}

// Story returns the story of offset o.
func (sp *SharePartition) Story(o int64) Story {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	var st Story
	sp.story.each(func(e *storyEvent) bool {
		if e.first <= o && o <= e.last {
			st.Events = append(st.Events, e.export())
		}
		return true
	})
	st.Truncated = sp.story.dropped && sp.story.dropLo <= o && o <= sp.story.dropHi
	if i := sp.searchLocked(o); i < len(sp.batches) && sp.batches[i].first <= o {
		b := sp.batches[i]
		r := &b.rec
		if b.offs != nil {
			r = &b.offs[o-b.first]
		}
		if o >= sp.spso || r.state == Acquired {
			rs := RangeState{FirstOffset: o, LastOffset: o, State: r.state, Owner: r.owner,
				DeliveryCount: r.count, Split: b.offs != nil}
			if r.h != nil {
				rs.LockDeadline = time.Unix(0, r.deadline)
			}
			st.Record = &rs
		}
	}
	return st
}

// StoryKinds returns the newest events of kind, at most n, oldest first;
// for StoryDeadLettered the events are cut so that together they cover at
// most n offsets (the newest).
func (sp *SharePartition) StoryKinds(kind StoryKind, n int) []StoryEvent {
	if n <= 0 {
		return nil
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	var out []StoryEvent
	left := int64(n)
	sp.story.eachNewest(func(e *storyEvent) bool {
		if e.kind != kind {
			return true
		}
		ev := e.export()
		if kind == StoryDeadLettered {
			if size := ev.LastOffset - ev.FirstOffset + 1; size > left {
				ev.DLQOffset = ev.DLQOffsetOf(ev.LastOffset - left + 1)
				ev.FirstOffset = ev.LastOffset - left + 1
			}
			left -= ev.LastOffset - ev.FirstOffset + 1
		} else {
			left--
		}
		out = append(out, ev)
		return left > 0
	})
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// RecentOffsets returns the first offsets of the newest events' ranges,
// distinct, newest first, at most n: the records whose stories changed
// last.
func (sp *SharePartition) RecentOffsets(n int) []int64 {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	var out []int64
	sp.story.eachNewest(func(e *storyEvent) bool {
		for _, o := range out {
			if o == e.first {
				return true
			}
		}
		out = append(out, e.first)
		return len(out) < n
	})
	return out
}
