package group

import (
	"fmt"
	"maps"
	"slices"
	"time"
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
	return s.checkGroupsLocked(func(g *classicGroup) error {
		err := g.checkLocked()
		if err == nil && (g.state == ClassicCompletingRebalance || g.state == ClassicStable) && int64(len(g.members)) > int64(s.cfg.MaxSize) {
			err = fmt.Errorf("%d members, above group.max.size %d", len(g.members), s.cfg.MaxSize)
		}
		if err != nil {
			return fmt.Errorf("classic group %q (%s, generation %d): %w", g.id, g.state, g.generation, err)
		}
		return nil
	})
}

// checkGroupsLocked runs check on every group, in ID order, each with its
// lock held, and returns the first error; mu is held.
func (c *coordinator[G]) checkGroupsLocked(check func(g G) error) error {
	for _, id := range slices.Sorted(maps.Keys(c.groups)) {
		g := c.groups[id]
		b := g.base()
		b.mu.Lock()
		err := check(g)
		b.mu.Unlock()
		if err != nil {
			return err
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
	return s.checkGroupsLocked(func(g *consumerGroup) error {
		err := g.checkLocked()
		if err == nil && int64(len(g.members)) > int64(s.cfg.MaxSize) {
			err = fmt.Errorf("%d members, above group.consumer.max.size %d", len(g.members), s.cfg.MaxSize)
		}
		if err != nil {
			return fmt.Errorf("consumer group %q (group epoch %d, assignment epoch %d): %w", g.id, g.groupEpoch, g.assignmentEpoch, err)
		}
		return nil
	})
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

// CheckInvariants reports the first broken invariant of any share group, or
// nil (share-groups.md §4.3, §4.4). Like ClassicGroups.CheckInvariants it
// is for tests; its session-timer checks also need the coordinator open and
// no timer firing, as between the steps of a test on a manual clock.
//
//   - A listed group is not deleted, and the registry gives its ID to share
//     groups.
//   - order lists each member once, and only members; no group has more
//     than group.share.max.size members.
//   - The state is Empty exactly when the group has no members.
//   - Epochs: 0 <= previous epoch < member epoch <= assignment epoch <=
//     group epoch. A member takes the assignment epoch in its own
//     heartbeat, and the assignment epoch only catches up with the group
//     epoch (§4.3).
//   - The target assignment names only members, and gives each only
//     partitions of topics it subscribes to, as last resolved.
//   - A member at the assignment epoch holds exactly its target.
//   - While the target is current (assignment epoch = group epoch) every
//     member has one, within the simple assignor's bounds (§4.4): in each
//     pool (every subscribed partition when the subscriptions are
//     identical, else each topic over its subscribers) no partition has
//     more than desiredSharing holders or none, and no member more than
//     its quota.
//   - Every member has a session timer whose deadline is still ahead of
//     the clock, and the timer service holds no other timer.
func (s *ShareGroups) CheckInvariants() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	members := 0
	err := s.checkGroupsLocked(func(g *shareGroup) error {
		err := g.checkLocked(now)
		if t, ok := s.registry.TypeOf(g.id); err == nil && (!ok || t != TypeShare) {
			err = fmt.Errorf("the registry does not give the ID to share groups")
		}
		if err == nil && int64(len(g.members)) > int64(s.broker.MaxSize) {
			err = fmt.Errorf("%d members, above group.share.max.size %d", len(g.members), s.broker.MaxSize)
		}
		members += len(g.members)
		if err != nil {
			return fmt.Errorf("share group %q (group epoch %d, assignment epoch %d): %w", g.id, g.groupEpoch, g.assignmentEpoch, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n := s.timers.Len(); n != members {
		return fmt.Errorf("%d session timers pending for %d share group members", n, members)
	}
	return nil
}

func (g *shareGroup) checkLocked(now time.Time) error {
	if g.deleted {
		return fmt.Errorf("deleted, but still listed")
	}
	if err := checkOrder(g.order, len(g.members), func(id string) bool { return g.members[id] != nil }); err != nil {
		return err
	}
	if empty := g.stateLocked() == ShareEmpty; empty != (len(g.members) == 0) {
		return fmt.Errorf("state %s with %d members", g.stateLocked(), len(g.members))
	}
	if g.assignmentEpoch < 0 || g.assignmentEpoch > g.groupEpoch {
		return fmt.Errorf("assignment epoch outside [0, group epoch]")
	}
	for id, m := range g.members {
		switch {
		case m.id != id:
			return fmt.Errorf("member %q is filed under %q", m.id, id)
		case m.prevEpoch < 0 || m.prevEpoch >= m.epoch || m.epoch > g.assignmentEpoch:
			return fmt.Errorf("member %q at epoch %d (previous %d), outside (previous, assignment epoch]", id, m.epoch, m.prevEpoch)
		case m.epoch == g.assignmentEpoch && !maps.Equal(m.assigned, g.target[id]):
			return fmt.Errorf("member %q is at the assignment epoch but does not hold its target", id)
		case m.timer == nil || !now.Before(m.deadline):
			return fmt.Errorf("member %q has no session timer ahead of the clock (deadline %v)", id, m.deadline)
		}
	}
	for id, target := range g.target {
		m := g.members[id]
		if m == nil {
			return fmt.Errorf("target assignment for %q, not a member", id)
		}
		for tp := range target {
			if !slices.ContainsFunc(m.topics, func(t string) bool {
				info, ok := g.metadata[t]
				return ok && info.ID == tp.id && tp.partition >= 0 && tp.partition < info.Partitions
			}) {
				return fmt.Errorf("member %q is assigned %v, not a partition of its subscription", id, tp)
			}
		}
	}
	if g.assignmentEpoch == g.groupEpoch {
		return g.checkAssignorBoundsLocked()
	}
	return nil
}

// checkAssignorBoundsLocked checks a current target against the bounds of
// assignSimple, pooling the partitions as it does.
func (g *shareGroup) checkAssignorBoundsLocked() error {
	for _, id := range g.order {
		if _, ok := g.target[id]; !ok {
			return fmt.Errorf("member %q has no target assignment at the group epoch", id)
		}
	}
	for _, p := range assignPools(g.assignMembersLocked(), g.metadata) {
		m, n := len(p.members), len(p.parts)
		if m == 0 || n == 0 {
			continue
		}
		sharing, quota := poolShares(m, n, 0)
		for _, tp := range p.parts {
			holders := 0
			for _, id := range p.members {
				if g.target[id][tp] {
					holders++
				}
			}
			if holders == 0 || holders > sharing {
				return fmt.Errorf("%v has %d holders, want 1 to desiredSharing %d", tp, holders, sharing)
			}
		}
		for i, id := range p.members {
			held := 0
			for _, tp := range p.parts {
				if g.target[id][tp] {
					held++
				}
			}
			if held > quota[i] {
				return fmt.Errorf("member %q holds %d partitions of its pool, above its quota %d", id, held, quota[i])
			}
		}
	}
	return nil
}
