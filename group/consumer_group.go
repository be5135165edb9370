package group

import (
	"regexp"
	"slices"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

// ConsumerGroupState is a KIP-848 consumer group's state as
// ConsumerGroupDescribe and ListGroups show it.
type ConsumerGroupState string

// Consumer group states, as Kafka's ConsumerGroup.ConsumerGroupState.
const (
	ConsumerEmpty       ConsumerGroupState = "Empty"
	ConsumerAssigning   ConsumerGroupState = "Assigning"   // group epoch ahead of the target assignment
	ConsumerReconciling ConsumerGroupState = "Reconciling" // some member has not reached the target
	ConsumerStable      ConsumerGroupState = "Stable"
)

// consumerGroup is one KIP-848 consumer group. Every field is guarded by
// mu, which is taken after ConsumerGroups.mu when both are needed.
type consumerGroup struct {
	groupBase // its ID, and mu

	deleted         bool // set by Delete; a holder of a stale pointer looks again
	groupEpoch      int32
	assignmentEpoch int32
	members         map[string]*consumerMember
	order           []string // member IDs in join order
	metadata        map[string]TopicInfo
	assignor        string // the assignor of the last target assignment
	// target is the target assignment computed at assignmentEpoch.
	target map[string]map[topicPartition]bool
	// owner says which member holds each partition: from the heartbeat
	// that gives the member the partition until the heartbeat that shows
	// it gave the partition up (848-revoke-first), or its removal.
	owner   map[topicPartition]string
	offsets offsetStore
	// emptySince is when the last member left: the base of offset
	// retention (groups.md retention).
	emptySince time.Time
}

// consumerMember is one member, guarded by its group's mu.
type consumerMember struct {
	id               string
	instanceID       *string
	rackID           *string
	epoch            int32
	prevEpoch        int32
	left             bool // a static member that left with epoch -2
	clientID         string
	clientHost       string
	topics           []string // subscribed by name, sorted, deduplicated
	regex            string   // SubscribedTopicRegex as sent; "" for none
	re               *regexp.Regexp
	assignor         string // ServerAssignor as last sent; "" for none
	rebalanceTimeout time.Duration
	// assigned is what the member may own now; revoking what it must give
	// up before its epoch advances. Both are in g.owner under its ID.
	assigned map[topicPartition]bool
	revoking map[topicPartition]bool

	// deadline is when the session times out; a session timer fire that
	// finds it later than now is stale.
	deadline time.Time
	timer    *locktimer.Handle
	// revokeDeadline is when a member still holding revoking is fenced;
	// zero when nothing is being revoked.
	revokeDeadline time.Time
	revokeTimer    *locktimer.Handle
}

func (g *consumerGroup) stateLocked() ConsumerGroupState {
	switch {
	case len(g.members) == 0:
		return ConsumerEmpty
	case g.assignmentEpoch < g.groupEpoch:
		return ConsumerAssigning
	}
	for _, m := range g.members {
		if m.epoch != g.assignmentEpoch || len(m.revoking) > 0 || len(m.assigned) != len(g.target[m.id]) {
			return ConsumerReconciling
		}
	}
	return ConsumerStable
}

// effectiveTopics is m's subscription: its topic names plus every topic in
// listed its regex matches, sorted.
func (m *consumerMember) effectiveTopics(listed []string) []string {
	if m.re == nil {
		return m.topics
	}
	out := slices.Clone(m.topics)
	for _, t := range listed {
		if m.re.MatchString(t) {
			out = append(out, t)
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(out)))
}

// refreshMetadataLocked resolves the topics the members subscribe to,
// by name or by regex over listed (every topic name), as refreshMetadata
// says.
func (g *consumerGroup) refreshMetadataLocked(resolve TopicResolver, listed []string) bool {
	subscriptions := func(yield func([]string) bool) {
		for _, m := range g.members {
			if !yield(m.effectiveTopics(listed)) {
				return
			}
		}
	}
	return refreshMetadata(&g.metadata, subscriptions, resolve)
}

// chooseAssignorLocked picks the assignor most members ask for, ties going
// to the broker's order; with none asked for, the broker default.
func (g *consumerGroup) chooseAssignorLocked(configured []string) string {
	best, bestVotes := configured[0], 0
	for _, a := range configured {
		votes := 0
		for _, m := range g.members {
			if m.assignor == a {
				votes++
			}
		}
		if votes > bestVotes {
			best, bestVotes = a, votes
		}
	}
	return best
}

// computeAssignmentLocked runs the assignor when the group epoch has moved
// past the assignment epoch.
func (g *consumerGroup) computeAssignmentLocked(configured, listed []string) {
	if g.assignmentEpoch >= g.groupEpoch {
		return
	}
	members := make([]assignMember, 0, len(g.order))
	for _, id := range g.order {
		members = append(members, assignMember{id: id, topics: g.members[id].effectiveTopics(listed)})
	}
	g.assignor = g.chooseAssignorLocked(configured)
	if g.assignor == "range" {
		g.target = assignRange(members, g.metadata)
	} else {
		g.target = assignBalanced(members, g.metadata, g.target, 1)
	}
	g.assignmentEpoch = g.groupEpoch
}

// releaseLocked forgets that m owns tps.
func (g *consumerGroup) releaseLocked(m *consumerMember, tps map[topicPartition]bool) {
	for tp := range tps {
		if g.owner[tp] == m.id {
			delete(g.owner, tp)
		}
	}
}

// reconcileLocked moves m one step towards its target (848-revoke-first)
// and reports whether its assignment changed. owned is what the member's
// heartbeat says it holds, nil when the heartbeat did not say.
//
// Example: A owns p0,p1; B joins and the target gives p1 to B. A's next
// heartbeat is told to keep only p0 (p1 is revoking, A stays at its epoch)
// while B reaches the new epoch with nothing. Once A's heartbeat lists
// only p0, p1 is free: A reaches the new epoch, and B's next heartbeat
// receives p1.
func (g *consumerGroup) reconcileLocked(m *consumerMember, owned map[topicPartition]bool) bool {
	if len(m.revoking) > 0 && owned != nil && !intersects(owned, m.revoking) {
		g.releaseLocked(m, m.revoking)
		m.revoking = nil
		m.revokeDeadline = time.Time{}
	}
	if len(m.revoking) > 0 {
		return false
	}
	target := g.target[m.id]
	revoke := make(map[topicPartition]bool)
	for tp := range m.assigned {
		if !target[tp] {
			revoke[tp] = true
		}
	}
	if len(revoke) > 0 {
		for tp := range revoke {
			delete(m.assigned, tp)
		}
		m.revoking = revoke
		return true
	}
	if m.epoch != g.assignmentEpoch {
		m.prevEpoch, m.epoch = m.epoch, g.assignmentEpoch
	}
	changed := false
	for tp := range target {
		if m.assigned[tp] {
			continue
		}
		if o, taken := g.owner[tp]; !taken || o == m.id {
			g.owner[tp] = m.id
			m.assigned[tp] = true
			changed = true
		}
	}
	return changed
}

func intersects(a, b map[topicPartition]bool) bool {
	for k := range a {
		if b[k] {
			return true
		}
	}
	return false
}

// removeMemberLocked drops m, frees what it owns, bumps the group epoch and
// stops m's timers; now is the time of the removal.
func (g *consumerGroup) removeMemberLocked(m *consumerMember, timers *locktimer.Service, now time.Time) {
	delete(g.members, m.id)
	g.order = slices.DeleteFunc(g.order, func(id string) bool { return id == m.id })
	delete(g.target, m.id)
	g.releaseLocked(m, m.assigned)
	g.releaseLocked(m, m.revoking)
	if m.timer != nil {
		timers.Cancel(m.timer)
	}
	if m.revokeTimer != nil {
		timers.Cancel(m.revokeTimer)
	}
	g.groupEpoch++
	if len(g.members) == 0 {
		g.emptySince = now
	}
}
