package group

import (
	"fmt"
	"maps"
	"slices"
)

// CheckInvariants reports the first broken invariant of any classic group,
// or nil. Tests call it after each request (the broker's fuzz targets); it
// takes the coordinator's and each group's lock, so it may run at any time.
//
//   - order lists each member once, and only members.
//   - A group with members has a protocol type and a leader among them;
//     an Empty group has no members.
//   - static maps each instance ID to the member that has it, both ways.
//   - Only a PreparingRebalance group has members awaiting JoinGroup, and
//     only a CompletingRebalance group members awaiting SyncGroup.
//   - Members awaiting SyncGroup are members, and exist only after a round
//     (CompletingRebalance or Stable).
//   - After a round every member supports the chosen protocol.
//   - No round ends with more members than group.max.size (max-size).
func (s *ClassicGroups) CheckInvariants() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(s.groups)) {
		g := s.groups[id]
		g.mu.Lock()
		err := g.checkLocked()
		if err == nil && (g.state == ClassicCompletingRebalance || g.state == ClassicStable) && int64(len(g.members)) > int64(s.cfg.MaxSize) {
			err = fmt.Errorf("%d members, above group.max.size %d", len(g.members), s.cfg.MaxSize)
		}
		g.mu.Unlock()
		if err != nil {
			return fmt.Errorf("classic group %q (%s, generation %d): %w", id, g.state, g.generation, err)
		}
	}
	return nil
}

func (g *classicGroup) checkLocked() error {
	if g.state == ClassicDead {
		return nil // removed; a stale holder looks again
	}
	if g.generation < 0 {
		return fmt.Errorf("negative generation")
	}
	if err := checkOrder(g.order, len(g.members), func(id string) bool { return g.members[id] != nil }); err != nil {
		return err
	}
	switch {
	case len(g.members) > 0 && g.members[g.leader] == nil:
		return fmt.Errorf("leader %q is not a member", g.leader)
	case len(g.members) == 0 && g.leader != "":
		return fmt.Errorf("leader %q of a group without members", g.leader)
	case len(g.members) > 0 && g.protocolType == "":
		return fmt.Errorf("members but no protocol type")
	case len(g.members) > 0 && g.state == ClassicEmpty:
		return fmt.Errorf("state Empty with %d members", len(g.members))
	}
	for inst, id := range g.static {
		if m := g.members[id]; m == nil || m.instanceID == nil || *m.instanceID != inst {
			return fmt.Errorf("instance %q maps to %q, which is not a member with that instance", inst, id)
		}
	}
	for id, m := range g.members {
		switch {
		case m.id != id:
			return fmt.Errorf("member %q is filed under %q", m.id, id)
		case m.instanceID != nil && g.static[*m.instanceID] != id:
			return fmt.Errorf("member %q has instance %q, which maps to %q", id, *m.instanceID, g.static[*m.instanceID])
		case m.join != nil && g.state != ClassicPreparingRebalance:
			return fmt.Errorf("member %q awaits JoinGroup outside PreparingRebalance", id)
		case m.sync != nil && g.state != ClassicCompletingRebalance:
			return fmt.Errorf("member %q awaits SyncGroup outside CompletingRebalance", id)
		case (g.state == ClassicCompletingRebalance || g.state == ClassicStable) && !slices.ContainsFunc(m.protocols, func(p ClassicProtocol) bool { return p.Name == g.protocol }):
			return fmt.Errorf("member %q does not support the group's protocol %q", id, g.protocol)
		}
	}
	for id := range g.pendingSync {
		if g.members[id] == nil {
			return fmt.Errorf("pending sync of %q, not a member", id)
		}
	}
	if len(g.pendingSync) > 0 && g.state != ClassicCompletingRebalance && g.state != ClassicStable {
		return fmt.Errorf("pending syncs outside CompletingRebalance and Stable")
	}
	return nil
}

// checkOrder checks that order holds n distinct IDs, each of which isMember.
func checkOrder(order []string, n int, isMember func(string) bool) error {
	if len(order) != n {
		return fmt.Errorf("%d members but %d in join order", n, len(order))
	}
	seen := make(map[string]bool, len(order))
	for _, id := range order {
		if seen[id] || !isMember(id) {
			return fmt.Errorf("join order %q lists %q twice or as a non-member", order, id)
		}
		seen[id] = true
	}
	return nil
}

// CheckInvariants reports the first broken invariant of any KIP-848
// consumer group, or nil; like ClassicGroups.CheckInvariants it is for
// tests and may run at any time.
//
//   - order lists each member once, and only members.
//   - The assignment epoch never passes the group epoch, nor a member's
//     epoch the group epoch.
//   - owner and the members' assigned and revoking partitions agree: a
//     partition a member holds (assigned or revoking, never both) is owned
//     by it, and every owned partition is held by its owner.
//   - No group has more members than group.consumer.max.size.
func (s *ConsumerGroups) CheckInvariants() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(s.groups)) {
		g := s.groups[id]
		g.mu.Lock()
		err := g.checkLocked()
		if err == nil && int64(len(g.members)) > int64(s.cfg.MaxSize) {
			err = fmt.Errorf("%d members, above group.consumer.max.size %d", len(g.members), s.cfg.MaxSize)
		}
		g.mu.Unlock()
		if err != nil {
			return fmt.Errorf("consumer group %q (group epoch %d, assignment epoch %d): %w", id, g.groupEpoch, g.assignmentEpoch, err)
		}
	}
	return nil
}

func (g *consumerGroup) checkLocked() error {
	if g.deleted {
		return nil
	}
	if err := checkOrder(g.order, len(g.members), func(id string) bool { return g.members[id] != nil }); err != nil {
		return err
	}
	if g.assignmentEpoch > g.groupEpoch {
		return fmt.Errorf("assignment epoch ahead of the group epoch")
	}
	for id, m := range g.members {
		if m.id != id {
			return fmt.Errorf("member %q is filed under %q", m.id, id)
		}
		if m.epoch > g.groupEpoch {
			return fmt.Errorf("member %q at epoch %d, ahead of the group", id, m.epoch)
		}
		for tp := range m.assigned {
			if m.revoking[tp] {
				return fmt.Errorf("member %q both holds and revokes %v", id, tp)
			}
			if g.owner[tp] != id {
				return fmt.Errorf("member %q holds %v, owned by %q", id, tp, g.owner[tp])
			}
		}
		for tp := range m.revoking {
			if g.owner[tp] != id {
				return fmt.Errorf("member %q revokes %v, owned by %q", id, tp, g.owner[tp])
			}
		}
	}
	for tp, id := range g.owner {
		if m := g.members[id]; m == nil || !m.assigned[tp] && !m.revoking[tp] {
			return fmt.Errorf("%v is owned by %q, which does not hold it", tp, id)
		}
	}
	return nil
}
