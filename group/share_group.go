package group

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

// ShareGroupState is a share group's state as ShareGroupDescribe and
// ListGroups show it.
type ShareGroupState string

// Share group states (share-groups.md §4.3). Dead exists only as the
// DescribeGroups placeholder, which the broker writes itself.
const (
	ShareEmpty  ShareGroupState = "Empty"
	ShareStable ShareGroupState = "Stable"
)

// shareGroup is one share group. Every field is guarded by mu, which is
// taken after ShareGroups.mu when both are needed.
type shareGroup struct {
	groupBase // its ID, and mu

	deleted         bool // set by Delete; a holder of a stale pointer looks again
	groupEpoch      int32
	assignmentEpoch int32
	members         map[string]*shareMember
	order           []string // member IDs in join order: the assignor's member order
	// metadata is the subscribed topics as last resolved; a difference
	// bumps the group epoch.
	metadata map[string]TopicInfo
	// target is the target assignment computed at assignmentEpoch.
	target map[string]map[topicPartition]bool
	// rebalances is ShareGroups.rebalances, shared by every group.
	rebalances *atomic.Int64
}

// bumpEpochLocked starts a rebalance: Kafka counts one each time a share
// group's epoch moves (share-group-rebalance-count).
func (g *shareGroup) bumpEpochLocked() {
	g.groupEpoch++
	g.rebalances.Add(1)
}

// shareMember is one member of a share group, guarded by its group's mu.
type shareMember struct {
	id         string
	epoch      int32
	prevEpoch  int32
	clientID   string
	clientHost string
	rackID     *string
	topics     []string // subscribed, sorted, deduplicated
	assigned   map[topicPartition]bool

	// deadline is when the session times out; timer fires then. A fire
	// that finds deadline later than now is stale (a heartbeat moved the
	// deadline after the timer service had already taken the timer).
	deadline time.Time
	timer    *locktimer.Handle
}

func (g *shareGroup) stateLocked() ShareGroupState {
	if len(g.members) == 0 {
		return ShareEmpty
	}
	return ShareStable
}

// refreshMetadataLocked resolves the topics the members subscribe to, as
// refreshMetadata says.
func (g *shareGroup) refreshMetadataLocked(resolve TopicResolver) bool {
	subscriptions := func(yield func([]string) bool) {
		for _, m := range g.members {
			if !yield(m.topics) {
				return
			}
		}
	}
	return refreshMetadata(&g.metadata, subscriptions, resolve)
}

// removeMemberLocked drops m, bumps the group epoch and stops m's session
// timer. The target assignment is recomputed by the next heartbeat, as in
// Kafka, so AssignmentEpoch lags GroupEpoch until then.
func (g *shareGroup) removeMemberLocked(m *shareMember, timers *locktimer.Service) {
	delete(g.members, m.id)
	g.order = slices.DeleteFunc(g.order, func(id string) bool { return id == m.id })
	delete(g.target, m.id)
	if m.timer != nil {
		timers.Cancel(m.timer)
	}
	g.bumpEpochLocked()
}

// computeAssignmentLocked runs the assignor when the group epoch has moved
// past the assignment epoch.
func (g *shareGroup) computeAssignmentLocked() {
	if g.assignmentEpoch >= g.groupEpoch {
		return
	}
	g.target = assignSimple(g.assignMembersLocked(), g.metadata, g.target)
	g.assignmentEpoch = g.groupEpoch
}

// assignMembersLocked is the members as the assignor sees them, in join
// order.
func (g *shareGroup) assignMembersLocked() []assignMember {
	members := make([]assignMember, 0, len(g.order))
	for _, id := range g.order {
		members = append(members, assignMember{id: id, topics: g.members[id].topics})
	}
	return members
}
