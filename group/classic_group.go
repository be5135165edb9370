package group

import (
	"bytes"
	"encoding/binary"
	"slices"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

// ClassicGroupState is a classic group's state as DescribeGroups and ListGroups
// show it (groups.md "States").
type ClassicGroupState string

// Classic group states.
const (
	ClassicEmpty               ClassicGroupState = "Empty"
	ClassicPreparingRebalance  ClassicGroupState = "PreparingRebalance"
	ClassicCompletingRebalance ClassicGroupState = "CompletingRebalance"
	ClassicStable              ClassicGroupState = "Stable"
	ClassicDead                ClassicGroupState = "Dead"
)

// ClassicProtocol is one assignment protocol a member supports, with the
// member's metadata for it (for consumers, the subscription).
type ClassicProtocol struct {
	Name     string
	Metadata []byte
}

// classicGroup is one classic group and its committed offsets. Every field
// is guarded by mu, taken after ClassicGroups.mu when both are needed.
//
// The state moves as groups.md describes:
//
//	Empty ──join──► PreparingRebalance ──round completes──► CompletingRebalance
//	  ▲                 ▲      │ (no member left)                 │ leader's SyncGroup
//	  └─────────────────┼──────┘                                  ▼
//	                    └──────── join, leave, expiry ──────── Stable
//
// Dead is set once the group is removed from ClassicGroups; a holder of a
// stale pointer looks the group up again.
type classicGroup struct {
	groupBase // its ID, and mu

	state        ClassicGroupState
	stateSince   time.Time // when state last changed: the retention base once Empty
	protocolType string    // fixed by the first member; "" for a group that never had one
	protocol     string    // chosen at the end of each round; "" while Empty
	generation   int32
	leader       string
	members      map[string]*classicMember
	order        []string          // member IDs in join order
	static       map[string]string // group instance ID → member ID
	// pending holds member IDs handed out with MEMBER_ID_REQUIRED that have
	// not joined yet, each with its session-timeout expiry; a round waits
	// for them as Kafka's does.
	pending map[string]*locktimer.Handle
	// pendingSync holds the members of the current generation that have
	// not sent SyncGroup; the sync timeout removes them.
	pendingSync map[string]bool

	// initialDelay is set while the first round after Empty waits out
	// group.initial.rebalance.delay.ms; newMemberAdded extends it.
	initialDelay   bool
	newMemberAdded bool
	// roundTimer is the group's one pending round timer (initial delay,
	// rebalance timeout or sync timeout); timerSeq tells a stale fire.
	roundTimer *locktimer.Handle
	timerSeq   uint64

	// subscribed is the topics the members consume, parsed from their
	// consumer-protocol metadata at the end of a round; nil when unknown
	// (another protocol type, or unreadable metadata).
	subscribed map[string]bool

	offsets offsetStore

	// stored is the group as its coordinator last wrote it; nil before
	// the first write (classic-reload-stored).
	stored *classicStored
}

// classicMember is one member of a classic group, guarded by its group's mu.
type classicMember struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocols        []ClassicProtocol
	assignment       []byte
	// join is set while the member awaits the end of the round, sync while
	// it awaits the leader's assignment. Each is a channel of capacity one
	// that receives exactly one answer, so sending never blocks.
	join chan ClassicJoinOutcome
	sync chan ClassicSyncOutcome
	// deadline is when the session times out; timer fires then. A fire that
	// finds deadline later than now is stale.
	deadline time.Time
	timer    *locktimer.Handle
}

// answerOnce sends out on *ch, if a request awaits one there, and forgets
// the channel: each JoinGroup or SyncGroup gets exactly one answer (its
// channel has room for it, so the send never blocks under the lock).
func answerOnce[T any](ch *chan T, out T) {
	if *ch != nil {
		*ch <- out
		*ch = nil
	}
}

func (m *classicMember) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// sameProtocols reports whether ps equals the member's protocols, names and
// metadata, in order.
func (m *classicMember) sameProtocols(ps []ClassicProtocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b ClassicProtocol) bool {
		return a.Name == b.Name && bytes.Equal(a.Metadata, b.Metadata)
	})
}

func (g *classicGroup) setStateLocked(s ClassicGroupState, now time.Time) {
	if g.state != s {
		g.state, g.stateSince = s, now
	}
}

// rebalanceTimeoutLocked is the longest rebalance timeout of the members:
// how long a round waits.
func (g *classicGroup) rebalanceTimeoutLocked() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// supportsLocked reports whether a member with protocolType and protocols
// may join: any pair while the group has no members, else the group's
// protocol type and one protocol every member supports (protocol-type).
// A rejoining member's old protocols count, as in Kafka.
func (g *classicGroup) supportsLocked(protocolType string, protocols []ClassicProtocol) bool {
	if len(g.members) == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	return slices.ContainsFunc(protocols, func(p ClassicProtocol) bool { return g.supportedByAllLocked(p.Name) })
}

func (g *classicGroup) supportedByAllLocked(name string) bool {
	for _, m := range g.members {
		if !slices.ContainsFunc(m.protocols, func(p ClassicProtocol) bool { return p.Name == name }) {
			return false
		}
	}
	return true
}

// selectProtocolLocked applies protocol-choice: among the protocols every
// member supports, each member votes for the first in its own preference
// order; most votes wins, ties going to the earlier joiner's preference.
func (g *classicGroup) selectProtocolLocked() string {
	votes := make(map[string]int)
	for _, id := range g.order {
		for _, p := range g.members[id].protocols {
			if g.supportedByAllLocked(p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", 0
	for _, id := range g.order {
		for _, p := range g.members[id].protocols {
			if v := votes[p.Name]; v > bestVotes {
				best, bestVotes = p.Name, v
			}
		}
	}
	return best
}

// allJoinedLocked reports whether every member awaits the round's end and
// no handed-out member ID is still to join.
func (g *classicGroup) allJoinedLocked() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.join == nil {
			return false
		}
	}
	return true
}

// validateMemberLocked is Kafka's member check of Sync, Heartbeat, Leave
// and OffsetCommit: static-fenced first, then unknown member.
func (g *classicGroup) validateMemberLocked(memberID string, instanceID *string) error {
	if instanceID != nil {
		owner, ok := g.static[*instanceID]
		if !ok {
			return errUnknownMember(g.id, memberID)
		}
		if owner != memberID {
			return errFenced(*instanceID, memberID)
		}
	}
	if g.members[memberID] == nil {
		return errUnknownMember(g.id, memberID)
	}
	return nil
}

// refreshSubscribedLocked parses the members' subscriptions for the chosen
// protocol, for OffsetDelete (offset-delete). Kafka does the same for
// protocol type "consumer" only.
func (g *classicGroup) refreshSubscribedLocked() {
	g.subscribed = nil
	if g.protocolType != "consumer" {
		return
	}
	set := make(map[string]bool)
	for _, m := range g.members {
		topics, ok := consumerSubscriptionTopics(m.metadataFor(g.protocol))
		if !ok {
			return
		}
		for _, t := range topics {
			set[t] = true
		}
	}
	g.subscribed = set
}

// consumerSubscriptionTopics reads the topics of a consumer protocol
// subscription (Kafka's ConsumerProtocolSubscription: int16 version, then
// an array of int16-length strings; later versions only append fields).
func consumerSubscriptionTopics(b []byte) ([]string, bool) {
	if len(b) < 6 {
		return nil, false
	}
	if int16(binary.BigEndian.Uint16(b)) < 0 {
		return nil, false
	}
	n := int32(binary.BigEndian.Uint32(b[2:]))
	b = b[6:]
	if n < 0 || int(n) > len(b)/2 {
		return nil, false
	}
	topics := make([]string, 0, n)
	for range n {
		if len(b) < 2 {
			return nil, false
		}
		l := int16(binary.BigEndian.Uint16(b))
		b = b[2:]
		if l < 0 || int(l) > len(b) {
			return nil, false
		}
		topics = append(topics, string(b[:l]))
		b = b[l:]
	}
	return topics, true
}
