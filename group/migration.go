package group

import (
	"errors"
	"fmt"
)

// Moving a group ID between the classic and the KIP-848 protocol
// (groups.md "Moving between the classic and KIP-848 protocols"): a group
// without members changes kind when a request of the other protocol joins
// it, offsets included (empty-upgrade, empty-downgrade); a group with
// members does not (online-upgrade-not-served, classic-join-not-served).
//
// Locking: a joining request (a ConsumerGroupHeartbeat with epoch 0, a
// JoinGroup) takes Registry.convert for its conversion and its lookup, so
// no conversion comes between the two. A conversion then takes the mu of
// the coordinator that receives the group, the giving coordinator's mu and
// the group's lock. Holding two coordinators' locks at once happens only
// here, and convert lets one conversion run at a time, so the two
// directions never wait on each other; every other path holds at most one
// coordinator's locks.

// Link lets classic and consumer hand empty groups to each other. Call it
// once, before either serves a request; both must share one Registry.
func Link(classic *ClassicGroups, consumer *ConsumerGroups) error {
	if classic.registry != consumer.registry {
		return errors.New("group: Link needs coordinators that share a Registry")
	}
	classic.consumer, consumer.classic = consumer, classic
	return nil
}

// lookupJoining is lookup for a ConsumerGroupHeartbeat. A joining one
// (create) first upgrades an empty classic group id, under
// Registry.convert so that no conversion comes between that and the
// lookup.
func (s *ConsumerGroups) lookupJoining(id string, create bool) (*consumerGroup, error) {
	if !create || s.classic == nil {
		return s.lookup(id, create)
	}
	s.registry.convert.Lock()
	defer s.registry.convert.Unlock()
	if err := s.upgradeEmptyClassic(id); err != nil {
		return nil, err
	}
	return s.lookup(id, true)
}

// upgradeEmptyClassic turns classic group id, if it has no members, into
// an empty consumer group holding its offsets, committed and pending
// (empty-upgrade); a classic group with members is ErrGroupIDNotFound
// (online-upgrade-not-served). Registry.convert is held.
func (s *ConsumerGroups) upgradeEmptyClassic(id string) error {
	if t, _ := s.registry.TypeOf(id); t != TypeClassic {
		return nil
	}
	c := s.classic
	s.mu.Lock()
	defer s.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.groups[id]
	if old == nil {
		return nil
	}
	old.mu.Lock()
	defer old.mu.Unlock()
	if old.state != ClassicEmpty {
		return fmt.Errorf("%w: cannot upgrade classic group %s to a consumer group: it has members, and online migration is not served (as group.consumer.migration.policy=disabled)",
			ErrGroupIDNotFound, id)
	}
	if !s.registry.transfer(id, TypeClassic, TypeConsumer) {
		return nil
	}
	c.detachLocked(old)
	g := s.addGroupLocked(id)
	g.offsets, old.offsets = old.offsets, offsetStore{}
	g.emptySince = old.stateSince
	s.journalLocked(g.id, &g.offsets) // the group's offsets, now under its new kind
	return nil
}

// lookupJoining is lookup for a JoinGroup: it first downgrades an empty
// consumer group id, under Registry.convert so that no conversion comes
// between that and the lookup.
func (s *ClassicGroups) lookupJoining(id string, create bool) (*classicGroup, error) {
	if s.consumer == nil {
		return s.lookup(id, create)
	}
	s.registry.convert.Lock()
	defer s.registry.convert.Unlock()
	if err := s.downgradeEmptyConsumer(id); err != nil {
		return nil, err
	}
	return s.lookup(id, create)
}

// downgradeEmptyConsumer turns consumer group id, if it has no members,
// into an Empty classic group holding its offsets, committed and pending
// (empty-downgrade); a consumer group with members is
// ErrInconsistentGroupProtocol (classic-join-not-served).
// Registry.convert is held.
func (s *ClassicGroups) downgradeEmptyConsumer(id string) error {
	if t, _ := s.registry.TypeOf(id); t != TypeConsumer {
		return nil
	}
	c := s.consumer
	s.mu.Lock()
	defer s.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.groups[id]
	if old == nil {
		return nil
	}
	old.mu.Lock()
	defer old.mu.Unlock()
	if n := len(old.members); n > 0 {
		return fmt.Errorf("%w: group %s is a KIP-848 consumer group with %d members; classic members in it are not served",
			ErrInconsistentGroupProtocol, id, n)
	}
	if !s.registry.transfer(id, TypeConsumer, TypeClassic) {
		return nil
	}
	c.detachLocked(old)
	since := old.emptySince
	if since.IsZero() { // it never had a member
		since = s.clock.Now()
	}
	g := s.addGroupLocked(id, since)
	g.offsets, old.offsets = old.offsets, offsetStore{}
	s.journalLocked(g.id, &g.offsets) // the group's offsets, now under its new kind
	return nil
}

// detachLocked makes g Dead and forgets it, leaving the registry to the
// caller; s.mu and g.mu are held.
func (s *ClassicGroups) detachLocked(g *classicGroup) {
	s.cancelRoundLocked(g)
	for _, h := range g.pending {
		s.timers.Cancel(h)
	}
	g.state = ClassicDead
	delete(s.groups, g.id)
}

// detachLocked marks g deleted and forgets it, leaving the registry to the
// caller; s.mu and g.mu are held and g has no members (so no timers).
func (s *ConsumerGroups) detachLocked(g *consumerGroup) {
	g.deleted = true
	delete(s.groups, g.id)
}
