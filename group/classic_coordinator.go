package group

import (
	"crypto/rand"
	"fmt"
	"slices"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

// ClassicOptions configures ClassicGroups.
type ClassicOptions struct {
	// Clock drives session, rebalance, initial-delay and sync timeouts and
	// offset retention. Required.
	Clock locktimer.Clock
	// Config is the broker-level configuration; it must pass Validate.
	Config ClassicConfig
	// Registry is shared with the other group coordinators; nil makes a
	// private one.
	Registry *Registry
	// Topics resolves topics for commit checks and OffsetDelete. Required.
	Topics TopicResolver
	// NewID returns a fresh unique string for member IDs; nil means a
	// random UUID.
	NewID func() string
}

// ClassicGroups owns every classic group of the broker and their committed
// offsets.
//
// Waiting: JoinGroup and SyncGroup answer when a round completes, which is
// another request's doing or a timer's. Join and Sync therefore return a
// channel of capacity one that receives exactly one answer: at once for an
// error or an immediate answer, else when the round (or the leader's sync)
// completes, when the member is removed or fenced, or when the round's
// rebalance timeout or the sync timeout fires on the clock. Nothing here
// runs a goroutine per member; timers run on one locktimer.Service.
//
// Locking: mu guards the groups map; each group has its own lock, taken
// after mu. The registry, topic resolution and the timer service are called
// with a group lock held; timer callbacks take the group lock themselves.
type ClassicGroups struct {
	coordinator[*classicGroup]
	offsetJournals
	cfg   ClassicConfig
	newID func() string
	// consumer hands empty groups over (migration.go); set by Link.
	consumer *ConsumerGroups
}

// NewClassicGroups validates o and returns an empty coordinator. Its offset
// retention check runs every o.Config.RetentionCheckInterval on the clock
// while any group exists.
func NewClassicGroups(o ClassicOptions) (*ClassicGroups, error) {
	s := &ClassicGroups{cfg: o.Config, newID: o.NewID, offsetJournals: offsetJournals{kind: TypeClassic}}
	if err := s.init(TypeClassic, "ClassicOptions", o.Clock, o.Registry, o.Topics, o.Config.Validate); err != nil {
		return nil, err
	}
	if s.newID == nil {
		s.newID = randomUUID
	}
	s.refuseAfterClose = true
	return s, nil
}

// Close stops every timer and answers every waiting JoinGroup and SyncGroup
// with ErrCoordinatorNotAvailable. Groups and offsets are left as they are.
func (s *ClassicGroups) Close() {
	groups := s.close()
	err := fmt.Errorf("%w: the broker is shutting down", ErrCoordinatorNotAvailable)
	for _, g := range groups {
		g.mu.Lock()
		for _, m := range g.members {
			answerJoin(m, joinFailed(m.id, err))
			answerSync(m, ClassicSyncOutcome{Err: err})
		}
		g.mu.Unlock()
	}
}

// randomUUID returns a version 4 UUID string.
func randomUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func errUnknownMember(groupID, memberID string) error {
	return fmt.Errorf("%w: member %q is not in group %s", ErrUnknownMemberID, memberID, groupID)
}

func errFenced(instanceID, memberID string) error {
	return fmt.Errorf("%w: instance %s is no longer member %q", ErrFencedInstanceID, instanceID, memberID)
}

// lookup finds classic group id, creating it (Empty) when create is set.
// A missing group is ErrGroupIDNotFound; an ID of another group type fails
// as Registry.Check says.
func (s *ClassicGroups) lookup(id string, create bool) (*classicGroup, error) {
	return s.coordinator.lookup(id, create, "group %s not found", func(id string) *classicGroup {
		return s.addGroupLocked(id, s.clock.Now())
	})
}

// addGroupLocked makes classic group id, Empty since since, which the
// registry already gives to classic groups; s.mu is held.
func (s *ClassicGroups) addGroupLocked(id string, since time.Time) *classicGroup {
	g := &classicGroup{
		groupBase:  groupBase{id: id},
		state:      ClassicEmpty,
		stateSince: since,
		members:    make(map[string]*classicMember),
		static:     make(map[string]string),
		pending:    make(map[string]*locktimer.Handle),
	}
	s.groups[id] = g
	s.armRetentionLocked()
	return g
}

// withGroup runs fn with group id locked, retrying when it finds the group
// removed (Dead) under it. If the group cannot be had (missing, or of
// another type), the answer is missing when set, else lookup's error.
func (s *ClassicGroups) withGroup(id string, create bool, missing error, fn func(g *classicGroup) error) error {
	return s.withGroupFrom(s.lookup, id, create, missing, fn)
}

// touchLocked restarts m's session.
func (s *ClassicGroups) touchLocked(m *classicMember, now time.Time) {
	m.deadline = now.Add(m.sessionTimeout)
	s.timers.Reset(m.timer, m.deadline)
}

// removeMemberLocked drops m from g, answering its waiting requests with
// err. It does not start a rebalance: see rebalanceAfterRemovalLocked.
func (s *ClassicGroups) removeMemberLocked(g *classicGroup, m *classicMember, err error) {
	answerJoin(m, joinFailed(m.id, err))
	answerSync(m, ClassicSyncOutcome{Err: err})
	s.timers.Cancel(m.timer)
	delete(g.members, m.id)
	delete(g.pendingSync, m.id)
	g.order = slices.DeleteFunc(g.order, func(id string) bool { return id == m.id })
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
}

// rebalanceAfterRemovalLocked is what follows removing members (leave,
// session-expiry): a rebalance from Stable or CompletingRebalance; a round
// in progress may now be complete.
func (s *ClassicGroups) rebalanceAfterRemovalLocked(g *classicGroup, now time.Time) {
	switch g.state {
	case ClassicStable, ClassicCompletingRebalance:
		s.prepareRebalanceLocked(g, now)
	case ClassicPreparingRebalance:
		s.maybeCompleteJoinLocked(g, now)
	}
}

// checkGenerationLocked is the member and generation check shared by
// SyncGroup and Heartbeat.
func (s *ClassicGroups) checkGenerationLocked(g *classicGroup, memberID string, instanceID *string, generation int32) error {
	if err := g.validateMemberLocked(memberID, instanceID); err != nil {
		return err
	}
	if generation != g.generation {
		return fmt.Errorf("%w: group %s is at generation %d, not %d", ErrIllegalGeneration, g.id, g.generation, generation)
	}
	return nil
}
