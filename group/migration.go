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
// (create) first upgrades an empty classic group id.
func (s *ConsumerGroups) lookupJoining(id string, create bool) (*consumerGroup, error) {
	if !create || s.classic == nil {
		return s.lookup(id, create)
	}
	return convertThenLookup(s.registry, id, create, s.upgradeEmptyClassic, s.lookup)
}

// upgradeEmptyClassic turns classic group id, if it has no members, into
// an empty consumer group holding its offsets, committed and pending
// (empty-upgrade); a classic group with members is ErrGroupIDNotFound
// (online-upgrade-not-served). Registry.convert is held.
func (s *ConsumerGroups) upgradeEmptyClassic(id string) error {
	return convertEmpty(&s.coordinator, &s.classic.coordinator, id, func(old *classicGroup) error {
		if old.state != ClassicEmpty {
			return fmt.Errorf("%w: cannot upgrade classic group %s to a consumer group: it has members, and online migration is not served (as group.consumer.migration.policy=disabled)",
				ErrGroupIDNotFound, id)
		}
		return nil
	}, func(old *classicGroup) {
		s.classic.detachLocked(old)
		g := s.addGroupLocked(id)
		g.offsets, old.offsets = old.offsets, offsetStore{}
		g.emptySince = old.stateSince
		s.journalLocked(g.id, &g.offsets) // the group's offsets, now under its new kind
	})
}

// lookupJoining is lookup for a JoinGroup: it first downgrades an empty
// consumer group id.
func (s *ClassicGroups) lookupJoining(id string, create bool) (*classicGroup, error) {
	if s.consumer == nil {
		return s.lookup(id, create)
	}
	return convertThenLookup(s.registry, id, create, s.downgradeEmptyConsumer, s.lookup)
}

// downgradeEmptyConsumer turns consumer group id, if it has no members,
// into an Empty classic group holding its offsets, committed and pending
// (empty-downgrade); a consumer group with members is
// ErrInconsistentGroupProtocol (classic-join-not-served).
// Registry.convert is held.
func (s *ClassicGroups) downgradeEmptyConsumer(id string) error {
	return convertEmpty(&s.coordinator, &s.consumer.coordinator, id, func(old *consumerGroup) error {
		if n := len(old.members); n > 0 {
			return fmt.Errorf("%w: group %s is a KIP-848 consumer group with %d members; classic members in it are not served",
				ErrInconsistentGroupProtocol, id, n)
		}
		return nil
	}, func(old *consumerGroup) {
		s.consumer.detachLocked(old)
		since := old.emptySince
		if since.IsZero() { // it never had a member
			since = s.clock.Now()
		}
		g := s.addGroupLocked(id, since)
		g.offsets, old.offsets = old.offsets, offsetStore{}
		s.journalLocked(g.id, &g.offsets) // the group's offsets, now under its new kind
	})
}

// convertThenLookup runs convert for group id, then lookup, both under
// Registry.convert, so that no conversion comes between the two: the
// lookup of a joining request of either protocol.
func convertThenLookup[G any](r *Registry, id string, create bool, convert func(id string) error,
	lookup func(id string, create bool) (G, error)) (G, error) {
	r.convert.Lock()
	defer r.convert.Unlock()
	if err := convert(id); err != nil {
		var none G
		return none, err
	}
	return lookup(id, create)
}

// convertEmpty hands group id from coordinator from to coordinator to,
// when from has it: refuse, with the group locked, says why it may not
// move (its members), and move, once the registry gives the ID to to's
// kind, detaches it from from and makes to's group of its offsets. It
// takes to's mu, then from's, then the group's lock: the one place two
// coordinators' locks are held (see the locking note above).
// Registry.convert is held.
func convertEmpty[T, F groupLike](to *coordinator[T], from *coordinator[F], id string, refuse func(old F) error, move func(old F)) error {
	if t, _ := to.registry.TypeOf(id); t != from.kind {
		return nil
	}
	to.mu.Lock()
	defer to.mu.Unlock()
	from.mu.Lock()
	defer from.mu.Unlock()
	old, ok := from.groups[id]
	if !ok {
		return nil
	}
	b := old.base()
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := refuse(old); err != nil {
		return err
	}
	if !to.registry.transfer(id, from.kind, to.kind) {
		return nil
	}
	move(old)
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
