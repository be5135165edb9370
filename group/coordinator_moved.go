package group

import (
	"errors"
	"fmt"
)

// ErrNotCoordinator answers a JoinGroup or SyncGroup that was waiting on a
// coordinator which has since lost the group (NOT_COORDINATOR); the client
// looks the coordinator up again and resends.
var ErrNotCoordinator = errors.New("not coordinator")

// A group's coordinator moving to another node (docs/cluster.md §4.2) is,
// in Kafka, the old coordinator unloading the group (onUnloaded) and the
// new one replaying it and running onLoaded. The state here is one object
// whichever node serves it, so each CoordinatorMoved below does only what
// the unload and load show a client: waiting requests are answered, and
// member timers start again with their full length, as the new
// coordinator schedules them when it loads the group (timers-restart-on-move).

// CoordinatorMoved is called when group id's coordinator changed. Every
// JoinGroup waiting for the round (PreparingRebalance) and every SyncGroup
// waiting for the leader's assignment (CompletingRebalance, Stable) is
// answered ErrNotCoordinator at once, as Kafka's onUnloaded completes
// them; such a member counts as not yet rejoined until it joins again on
// the new coordinator. Then every member's session timer restarts with its
// full session timeout (onLoaded: rescheduleClassicGroupMemberHeartbeat).
// A group caught in a round goes back to its last stored generation, as
// the new coordinator replays it (classic-reload-stored). Unknown IDs and
// groups of other types are ignored.
func (s *ClassicGroups) CoordinatorMoved(id string) {
	_ = s.withGroup(id, false, nil, func(g *classicGroup) error {
		err := fmt.Errorf("%w: group %s moved to another coordinator", ErrNotCoordinator, id)
		now := s.clock.Now()
		for _, m := range g.members {
			switch g.state {
			case ClassicPreparingRebalance:
				answerJoin(m, joinFailed(m.id, err))
			case ClassicCompletingRebalance, ClassicStable:
				answerSync(m, ClassicSyncOutcome{Err: err})
			}
			s.touchLocked(m, now)
		}
		if g.state == ClassicPreparingRebalance || g.state == ClassicCompletingRebalance {
			s.reloadStoredLocked(g, now)
		}
		return nil
	})
}

// CoordinatorMoved is called when group id's coordinator changed: every
// member's session timeout starts again in full, and a member that still
// has partitions to revoke gets its full rebalance timeout again (Kafka's
// onLoaded: scheduleConsumerGroupSessionTimeout and, for a member in
// UNREVOKED_PARTITIONS, scheduleConsumerGroupRebalanceTimeout). Unknown
// IDs and groups of other types are ignored.
func (s *ConsumerGroups) CoordinatorMoved(id string) {
	_ = s.withGroup(id, func(g *consumerGroup) error {
		now := s.clock.Now()
		for _, m := range g.members {
			if m.timer != nil {
				s.touchLocked(g, m, now)
			}
			if len(m.revoking) > 0 && !m.revokeDeadline.IsZero() {
				s.armRevokeLocked(g, m, now)
			}
		}
		return nil
	})
}

// CoordinatorMoved is called when share group id's coordinator changed:
// every member's session timeout starts again in full (Kafka's onLoaded:
// scheduleShareGroupSessionTimeout for each loaded member). Unknown IDs
// and groups of other types are ignored.
func (s *ShareGroups) CoordinatorMoved(id string) {
	_ = s.withGroupFrom(s.lookup, id, false, nil, func(g *shareGroup) error {
		now := s.clock.Now()
		session := s.configs.Share(g.id).SessionTimeout
		for _, m := range g.members {
			if m.timer == nil {
				continue
			}
			m.deadline = now.Add(session)
			s.timers.Reset(m.timer, m.deadline)
		}
		return nil
	})
}
