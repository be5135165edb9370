package group

import (
	"fmt"
)

// ClassicHeartbeatInput is a (classic) Heartbeat request in domain terms.
type ClassicHeartbeatInput struct {
	GroupID    string
	MemberID   string
	InstanceID *string
	Generation int32
}

// Heartbeat handles one classic Heartbeat: it keeps the member's session,
// and during a rebalance answers ErrRebalanceInProgress so it rejoins.
func (s *ClassicGroups) Heartbeat(in ClassicHeartbeatInput) error {
	if in.GroupID == "" {
		return fmt.Errorf("%w: group ID can't be empty", ErrInvalidGroupID)
	}
	return s.withGroup(in.GroupID, false, errUnknownMember(in.GroupID, in.MemberID), func(g *classicGroup) error {
		if err := s.checkGenerationLocked(g, in.MemberID, in.InstanceID, in.Generation); err != nil {
			return err
		}
		m := g.members[in.MemberID]
		switch g.state {
		case ClassicPreparingRebalance:
			s.touchLocked(m, s.clock.Now())
			return fmt.Errorf("%w: group %s is rebalancing; rejoin", ErrRebalanceInProgress, g.id)
		case ClassicCompletingRebalance, ClassicStable:
			s.touchLocked(m, s.clock.Now())
			return nil
		}
		return errUnknownMember(g.id, in.MemberID)
	})
}

// expireSession is m's session timer: session-expiry. A member waiting for
// a round or for the leader's sync is kept alive, as Kafka does: those
// waits are bounded by their own timers.
func (s *ClassicGroups) expireSession(g *classicGroup, m *classicMember) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := s.clock.Now()
	if g.state == ClassicDead || g.members[m.id] != m || now.Before(m.deadline) {
		return
	}
	if m.join != nil || m.sync != nil {
		s.touchLocked(m, now)
		return
	}
	s.removeMemberLocked(g, m, fmt.Errorf("%w: session of member %s timed out", ErrUnknownMemberID, m.id))
	s.rebalanceAfterRemovalLocked(g, now)
}

// ClassicLeavingMember is one member of a LeaveGroup request: v0-v2 carry a
// member ID, v3+ a batch of member IDs and/or group instance IDs.
type ClassicLeavingMember struct {
	MemberID   string
	InstanceID *string
}

// Leave handles LeaveGroup (leave, static-leave): each member is removed or
// gets its own error, in request order; then the group rebalances once. The
// error is the group's: the group does not exist.
func (s *ClassicGroups) Leave(groupID string, members []ClassicLeavingMember) ([]error, error) {
	if groupID == "" {
		return nil, fmt.Errorf("%w: group ID can't be empty", ErrInvalidGroupID)
	}
	var errs []error
	missing := fmt.Errorf("%w: group %s not found", ErrUnknownMemberID, groupID)
	err := s.withGroup(groupID, false, missing, func(g *classicGroup) error {
		errs = make([]error, len(members))
		removed := false
		for i, lm := range members {
			errs[i] = s.leaveOneLocked(g, lm)
			removed = removed || errs[i] == nil
		}
		if removed {
			s.rebalanceAfterRemovalLocked(g, s.clock.Now())
		}
		return nil
	})
	return errs, err
}

func (s *ClassicGroups) leaveOneLocked(g *classicGroup, lm ClassicLeavingMember) error {
	reason := fmt.Errorf("%w: member left the group", ErrUnknownMemberID)
	if lm.MemberID == "" {
		// An administrative removal by instance ID.
		if lm.InstanceID == nil {
			return errUnknownMember(g.id, "")
		}
		id, ok := g.static[*lm.InstanceID]
		if !ok {
			return fmt.Errorf("%w: no member has instance ID %s", ErrUnknownMemberID, *lm.InstanceID)
		}
		s.removeMemberLocked(g, g.members[id], reason)
		return nil
	}
	if h, ok := g.pending[lm.MemberID]; ok {
		s.timers.Cancel(h)
		delete(g.pending, lm.MemberID)
		return nil
	}
	if err := g.validateMemberLocked(lm.MemberID, lm.InstanceID); err != nil {
		return err
	}
	s.removeMemberLocked(g, g.members[lm.MemberID], reason)
	return nil
}
