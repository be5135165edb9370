package group

import (
	"slices"
	"time"
)

// classicStored is what Kafka's group coordinator has written for a
// classic group (its GroupMetadataValue record): the generation, protocol,
// leader and members with their assignments, as of the last leader's
// SyncGroup or the group becoming Empty. A new coordinator replays it
// (docs/cluster.md classic-reload-stored).
type classicStored struct {
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      []classicMember // in join order, without channels or timers
}

// storeLocked records g as it is now, as Kafka writes the group's record.
func (g *classicGroup) storeLocked() {
	st := &classicStored{generation: g.generation, protocolType: g.protocolType, protocol: g.protocol, leader: g.leader}
	for _, id := range g.order {
		m := g.members[id]
		st.members = append(st.members, classicMember{
			id: m.id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			sessionTimeout: m.sessionTimeout, rebalanceTimeout: m.rebalanceTimeout,
			protocols: slices.Clone(m.protocols), assignment: slices.Clone(m.assignment),
		})
	}
	g.stored = st
}

// reloadStoredLocked puts a group caught in a round back to its last
// stored generation, as replaying its record on a new coordinator does:
// Stable with the stored members and assignments, or Empty without any
// (GroupMetadataManager's replay: loadedMembers.isEmpty() ? EMPTY :
// STABLE). A group never stored comes back Empty at generation 0. The
// round's timers, the pending member IDs and the members' timers of the
// round are dropped; every stored member's session starts afresh.
// Waiting requests must have been answered already.
func (s *ClassicGroups) reloadStoredLocked(g *classicGroup, now time.Time) {
	s.cancelRoundLocked(g)
	for id, h := range g.pending {
		s.timers.Cancel(h)
		delete(g.pending, id)
	}
	for _, m := range g.members {
		s.timers.Cancel(m.timer)
	}
	st := g.stored
	if st == nil {
		st = &classicStored{}
	}
	g.generation, g.protocolType, g.protocol, g.leader = st.generation, st.protocolType, st.protocol, st.leader
	g.members = make(map[string]*classicMember, len(st.members))
	g.static = make(map[string]string)
	g.order = nil
	g.pendingSync = nil
	g.initialDelay, g.newMemberAdded = false, false
	for i := range st.members {
		m := st.members[i]
		m.protocols, m.assignment = slices.Clone(m.protocols), slices.Clone(m.assignment)
		m.deadline = now.Add(m.sessionTimeout)
		mp := &m
		mp.timer = s.timers.Schedule(mp.deadline, func() { s.expireSession(g, mp) })
		g.members[m.id] = mp
		g.order = append(g.order, m.id)
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
	}
	if len(g.members) == 0 {
		g.protocol, g.leader = "", ""
		g.subscribed = nil
		g.setStateLocked(ClassicEmpty, now)
		return
	}
	g.refreshSubscribedLocked()
	g.setStateLocked(ClassicStable, now)
}
