package group

import (
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
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
	clock    locktimer.Clock
	cfg      ClassicConfig
	registry *Registry
	resolve  TopicResolver
	newID    func() string
	timers   *locktimer.Service
	// consumer hands empty groups over (migration.go); set by Link.
	consumer *ConsumerGroups

	mu        sync.Mutex // guards the fields below
	groups    map[string]*classicGroup
	retention retentionLoop
	closed    bool
}

// NewClassicGroups validates o and returns an empty coordinator. Its offset
// retention check runs every o.Config.RetentionCheckInterval on the clock
// while any group exists.
func NewClassicGroups(o ClassicOptions) (*ClassicGroups, error) {
	if o.Clock == nil || o.Topics == nil {
		return nil, errors.New("group: ClassicOptions needs Clock and Topics")
	}
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Registry == nil {
		o.Registry = NewRegistry()
	}
	if o.NewID == nil {
		o.NewID = randomUUID
	}
	s := &ClassicGroups{
		clock:    o.Clock,
		cfg:      o.Config,
		registry: o.Registry,
		resolve:  o.Topics,
		newID:    o.NewID,
		timers:   locktimer.NewService(o.Clock, nil),
		groups:   make(map[string]*classicGroup),
	}
	return s, nil
}

// Close stops every timer and answers every waiting JoinGroup and SyncGroup
// with ErrCoordinatorNotAvailable. Groups and offsets are left as they are.
func (s *ClassicGroups) Close() {
	s.mu.Lock()
	s.closed = true
	groups := slices.Collect(maps.Values(s.groups))
	s.mu.Unlock()
	s.timers.Close()
	err := fmt.Errorf("%w: the broker is shutting down", ErrCoordinatorNotAvailable)
	for _, g := range groups {
		g.mu.Lock()
		for _, m := range g.members {
			answerJoin(m, JoinOutcome{JoinResult: JoinResult{MemberID: m.id, Generation: -1}, Err: err})
			answerSync(m, SyncOutcome{Err: err})
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.registry.Check(id, TypeClassic); err != nil {
		return nil, err
	}
	if g := s.groups[id]; g != nil {
		return g, nil
	}
	if !create {
		return nil, fmt.Errorf("%w: group %s not found", ErrGroupIDNotFound, id)
	}
	if s.closed {
		return nil, fmt.Errorf("%w: the broker is shutting down", ErrCoordinatorNotAvailable)
	}
	if err := s.registry.Claim(id, TypeClassic); err != nil {
		return nil, err
	}
	return s.addGroupLocked(id, s.clock.Now()), nil
}

// addGroupLocked makes classic group id, Empty since since, which the
// registry already gives to classic groups; s.mu is held.
func (s *ClassicGroups) addGroupLocked(id string, since time.Time) *classicGroup {
	g := &classicGroup{
		id:         id,
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

// withGroupFrom is withGroup finding the group with lookup.
func (s *ClassicGroups) withGroupFrom(lookup func(id string, create bool) (*classicGroup, error),
	id string, create bool, missing error, fn func(g *classicGroup) error) error {
	for {
		g, err := lookup(id, create)
		if err != nil {
			if missing != nil {
				return missing
			}
			return err
		}
		g.mu.Lock()
		if g.state == ClassicDead {
			g.mu.Unlock()
			continue
		}
		err = fn(g)
		g.mu.Unlock()
		return err
	}
}

// JoinInput is a JoinGroup request in domain terms.
type JoinInput struct {
	GroupID    string
	MemberID   string // empty for a new member
	InstanceID *string
	ClientID   string
	ClientHost string
	// SessionTimeout must lie within the configured bounds.
	SessionTimeout time.Duration
	// RebalanceTimeout bounds how long a round waits; JoinGroup v0 passes
	// the session timeout.
	RebalanceTimeout time.Duration
	ProtocolType     string
	Protocols        []Protocol // in the member's order of preference
	// RequireKnownMemberID is set from JoinGroup v4: a new dynamic member
	// gets ErrMemberIDRequired and a member ID to join with.
	RequireKnownMemberID bool
}

// JoinResult is a JoinGroup answer. With an error only MemberID (the ID to
// join with after ErrMemberIDRequired) and Generation (-1) are meaningful.
type JoinResult struct {
	MemberID     string
	Generation   int32
	ProtocolType string
	Protocol     string
	LeaderID     string
	// SkipAssignment is set for a static leader that rejoined a Stable
	// group: it gets the member list but must not assign (KIP-814).
	SkipAssignment bool
	// Members is the leader's alone: every member with its metadata for
	// the chosen protocol, in join order.
	Members []JoinedMember
}

// JoinedMember is one member in the leader's JoinGroup answer.
type JoinedMember struct {
	MemberID   string
	InstanceID *string
	Metadata   []byte
}

// JoinOutcome is what a Join channel receives.
type JoinOutcome struct {
	JoinResult
	Err error
}

func answerJoin(m *classicMember, out JoinOutcome) {
	if m.join != nil {
		m.join <- out
		m.join = nil
	}
}

func answerSync(m *classicMember, out SyncOutcome) {
	if m.sync != nil {
		m.sync <- out
		m.sync = nil
	}
}

// Join handles one JoinGroup. The returned channel receives the answer
// exactly once (see ClassicGroups). Protocol metadata is copied.
func (s *ClassicGroups) Join(in JoinInput) <-chan JoinOutcome {
	ch := make(chan JoinOutcome, 1)
	fail := func(memberID string, err error) <-chan JoinOutcome {
		ch <- JoinOutcome{JoinResult: JoinResult{MemberID: memberID, Generation: -1}, Err: err}
		return ch
	}
	switch {
	case in.GroupID == "":
		return fail(in.MemberID, fmt.Errorf("%w: group ID can't be empty", ErrInvalidGroupID))
	case in.SessionTimeout < s.cfg.MinSessionTimeout || in.SessionTimeout > s.cfg.MaxSessionTimeout:
		return fail(in.MemberID, fmt.Errorf("%w: %v is outside [%v, %v]", ErrInvalidSessionTimeout,
			in.SessionTimeout, s.cfg.MinSessionTimeout, s.cfg.MaxSessionTimeout))
	case in.ProtocolType == "" || len(in.Protocols) == 0:
		return fail(in.MemberID, fmt.Errorf("%w: a member needs a protocol type and at least one protocol", ErrInconsistentGroupProtocol))
	}
	protocols := make([]Protocol, len(in.Protocols))
	for i, p := range in.Protocols {
		protocols[i] = Protocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)}
	}
	in.Protocols = protocols
	err := s.withGroupFrom(s.lookupJoining, in.GroupID, in.MemberID == "", nil, func(g *classicGroup) error {
		s.joinLocked(g, &in, ch)
		return nil
	})
	if errors.Is(err, ErrGroupIDNotFound) {
		// A member ID for a group that does not exist.
		err = errUnknownMember(in.GroupID, in.MemberID)
	}
	if err != nil {
		return fail(in.MemberID, err)
	}
	return ch
}

func (s *ClassicGroups) joinLocked(g *classicGroup, in *JoinInput, ch chan JoinOutcome) {
	now := s.clock.Now()
	fail := func(memberID string, err error) {
		ch <- JoinOutcome{JoinResult: JoinResult{MemberID: memberID, Generation: -1}, Err: err}
	}
	if !g.supportsLocked(in.ProtocolType, in.Protocols) {
		fail(in.MemberID, fmt.Errorf("%w: group %s uses protocol type %q with protocols no member of it shares with the request",
			ErrInconsistentGroupProtocol, g.id, g.protocolType))
		return
	}
	if in.MemberID == "" {
		if !s.acceptsNewMemberLocked(g) {
			fail("", fmt.Errorf("%w: group %s has reached its maximum size of %d members", ErrGroupMaxSizeReached, g.id, s.cfg.MaxSize))
			return
		}
		if in.InstanceID != nil {
			id := *in.InstanceID + "-" + s.newID()
			if old, ok := g.static[*in.InstanceID]; ok {
				s.replaceStaticLocked(g, g.members[old], id, in, ch, now)
				return
			}
			s.addMemberLocked(g, id, in, ch, now)
			return
		}
		id := in.ClientID + "-" + s.newID()
		if in.RequireKnownMemberID {
			// member-id-required: remember the ID for a session timeout.
			g.pending[id] = s.timers.Schedule(now.Add(in.SessionTimeout), func() { s.expirePending(g, id) })
			fail(id, fmt.Errorf("%w: join again with member ID %s", ErrMemberIDRequired, id))
			return
		}
		s.addMemberLocked(g, id, in, ch, now)
		return
	}

	if h, ok := g.pending[in.MemberID]; ok {
		if !s.acceptsNewMemberLocked(g) {
			fail("", fmt.Errorf("%w: group %s has reached its maximum size of %d members", ErrGroupMaxSizeReached, g.id, s.cfg.MaxSize))
			return
		}
		s.timers.Cancel(h)
		delete(g.pending, in.MemberID)
		s.addMemberLocked(g, in.MemberID, in, ch, now)
		return
	}
	if err := g.validateMemberLocked(in.MemberID, in.InstanceID); err != nil {
		fail(in.MemberID, err)
		return
	}
	m := g.members[in.MemberID]
	if g.state == ClassicPreparingRebalance && m.join == nil && !s.acceptsNewMemberLocked(g) {
		// max-size: the round already has as many members awaiting it as
		// the group may hold, so a member rejoining this late would end
		// it above the limit. Kafka turns it away and removes it; the
		// members awaiting the round may then be all there is.
		s.removeMemberLocked(g, m, fmt.Errorf("%w: group %s is full", ErrGroupMaxSizeReached, g.id))
		fail("", fmt.Errorf("%w: group %s has reached its maximum size of %d members", ErrGroupMaxSizeReached, g.id, s.cfg.MaxSize))
		s.maybeCompleteJoinLocked(g, now)
		return
	}
	switch g.state {
	case ClassicPreparingRebalance:
		s.updateMemberLocked(g, m, in, ch, now)
		s.maybeCompleteJoinLocked(g, now)
	case ClassicCompletingRebalance:
		if m.sameProtocols(in.Protocols) {
			// The member lost the round's answer; give it again.
			s.touchLocked(m, now)
			ch <- JoinOutcome{JoinResult: g.joinResultLocked(m.id, false)}
			return
		}
		s.updateMemberLocked(g, m, in, ch, now)
		s.prepareRebalanceLocked(g, now)
	case ClassicStable:
		if m.id == g.leader || !m.sameProtocols(in.Protocols) {
			// The leader's join is its way to ask for a rebalance
			// (new topics matched, for example).
			s.updateMemberLocked(g, m, in, ch, now)
			s.prepareRebalanceLocked(g, now)
			return
		}
		s.touchLocked(m, now)
		ch <- JoinOutcome{JoinResult: g.joinResultLocked(m.id, false)}
	default:
		fail(in.MemberID, errUnknownMember(g.id, in.MemberID))
	}
}

// acceptsNewMemberLocked is max-size for a new member: in a rebalance the
// members awaiting the round count, otherwise every member does.
func (s *ClassicGroups) acceptsNewMemberLocked(g *classicGroup) bool {
	switch g.state {
	case ClassicEmpty:
		return true
	case ClassicPreparingRebalance:
		n := 0
		for _, m := range g.members {
			if m.join != nil {
				n++
			}
		}
		return int64(n) < int64(s.cfg.MaxSize)
	}
	return int64(len(g.members)) < int64(s.cfg.MaxSize)
}

// joinResultLocked is the round's answer for member id; the leader gets the
// member list.
func (g *classicGroup) joinResultLocked(id string, skipAssignment bool) JoinResult {
	r := JoinResult{
		MemberID:       id,
		Generation:     g.generation,
		ProtocolType:   g.protocolType,
		Protocol:       g.protocol,
		LeaderID:       g.leader,
		SkipAssignment: skipAssignment,
	}
	if id == g.leader {
		r.Members = make([]JoinedMember, 0, len(g.order))
		for _, mid := range g.order {
			m := g.members[mid]
			r.Members = append(r.Members, JoinedMember{MemberID: m.id, InstanceID: m.instanceID, Metadata: m.metadataFor(g.protocol)})
		}
	}
	return r
}

func (s *ClassicGroups) addMemberLocked(g *classicGroup, id string, in *JoinInput, ch chan JoinOutcome, now time.Time) {
	m := &classicMember{id: id, join: ch}
	if in.InstanceID != nil {
		inst := *in.InstanceID
		m.instanceID = &inst
		g.static[inst] = id
	}
	m.clientID, m.clientHost = in.ClientID, in.ClientHost
	m.sessionTimeout, m.rebalanceTimeout = in.SessionTimeout, in.RebalanceTimeout
	m.protocols = in.Protocols
	if len(g.members) == 0 {
		g.protocolType = in.ProtocolType
	}
	if g.leader == "" {
		g.leader = id
	}
	g.members[id] = m
	g.order = append(g.order, id)
	m.deadline = now.Add(m.sessionTimeout)
	m.timer = s.timers.Schedule(m.deadline, func() { s.expireSession(g, m) })
	if g.state == ClassicPreparingRebalance {
		if g.initialDelay {
			g.newMemberAdded = true
		}
		s.maybeCompleteJoinLocked(g, now)
		return
	}
	s.prepareRebalanceLocked(g, now)
}

// updateMemberLocked applies a rejoin of m: new protocols and timeouts, and
// m now awaits the round.
func (s *ClassicGroups) updateMemberLocked(g *classicGroup, m *classicMember, in *JoinInput, ch chan JoinOutcome, now time.Time) {
	if m.join != nil {
		// An older JoinGroup of the same member is still waiting (sent
		// on another connection); it will never be the member's answer.
		answerJoin(m, JoinOutcome{JoinResult: JoinResult{MemberID: m.id, Generation: -1},
			Err: fmt.Errorf("%w: the member joined again", ErrRebalanceInProgress)})
	}
	m.protocols = in.Protocols
	m.sessionTimeout, m.rebalanceTimeout = in.SessionTimeout, in.RebalanceTimeout
	m.clientID, m.clientHost = in.ClientID, in.ClientHost
	m.join = ch
	s.touchLocked(m, now)
}

// replaceStaticLocked is static-rejoin: the instance's new member ID takes
// the old one's place, keeping its assignment; the old member ID is fenced.
func (s *ClassicGroups) replaceStaticLocked(g *classicGroup, old *classicMember, id string, in *JoinInput, ch chan JoinOutcome, now time.Time) {
	fenced := errFenced(*in.InstanceID, old.id)
	answerJoin(old, JoinOutcome{JoinResult: JoinResult{MemberID: old.id, Generation: -1}, Err: fenced})
	answerSync(old, SyncOutcome{Err: fenced})
	s.timers.Cancel(old.timer)

	m := &classicMember{
		id:               id,
		instanceID:       old.instanceID,
		clientID:         in.ClientID,
		clientHost:       in.ClientHost,
		sessionTimeout:   in.SessionTimeout,
		rebalanceTimeout: in.RebalanceTimeout,
		protocols:        in.Protocols,
		assignment:       old.assignment,
		deadline:         now.Add(in.SessionTimeout),
	}
	m.timer = s.timers.Schedule(m.deadline, func() { s.expireSession(g, m) })
	delete(g.members, old.id)
	g.members[id] = m
	g.order[slices.Index(g.order, old.id)] = id
	g.static[*in.InstanceID] = id
	if g.leader == old.id {
		g.leader = id
	}
	if g.pendingSync[old.id] {
		delete(g.pendingSync, old.id)
		g.pendingSync[id] = true
	}

	switch g.state {
	case ClassicStable:
		if g.selectProtocolLocked() == g.protocol {
			// No rebalance: the member gets the current generation back
			// and its old assignment from SyncGroup.
			g.refreshSubscribedLocked()
			ch <- JoinOutcome{JoinResult: g.joinResultLocked(id, id == g.leader)}
			return
		}
		m.join = ch
		s.prepareRebalanceLocked(g, now)
	case ClassicCompletingRebalance:
		m.join = ch
		s.prepareRebalanceLocked(g, now)
	default: // PreparingRebalance
		m.join = ch
		s.maybeCompleteJoinLocked(g, now)
	}
}

// touchLocked restarts m's session.
func (s *ClassicGroups) touchLocked(m *classicMember, now time.Time) {
	m.deadline = now.Add(m.sessionTimeout)
	s.timers.Reset(m.timer, m.deadline)
}

// scheduleRoundLocked replaces the group's round timer with fn at deadline.
func (s *ClassicGroups) scheduleRoundLocked(g *classicGroup, deadline time.Time, fn func(g *classicGroup, now time.Time)) {
	s.cancelRoundLocked(g)
	seq := g.timerSeq
	g.roundTimer = s.timers.Schedule(deadline, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.timerSeq != seq || g.state == ClassicDead {
			return // replaced or cancelled after the service took it
		}
		g.roundTimer = nil
		fn(g, s.clock.Now())
	})
}

func (s *ClassicGroups) cancelRoundLocked(g *classicGroup) {
	g.timerSeq++
	if g.roundTimer != nil {
		s.timers.Cancel(g.roundTimer)
		g.roundTimer = nil
	}
}

// prepareRebalanceLocked starts a round. A round from Empty waits the
// initial delay (initial-delay); any other waits for every member or the
// rebalance timeout (round-completes).
func (s *ClassicGroups) prepareRebalanceLocked(g *classicGroup, now time.Time) {
	if g.state == ClassicCompletingRebalance {
		err := fmt.Errorf("%w: group %s is rebalancing again", ErrRebalanceInProgress, g.id)
		for _, m := range g.members {
			m.assignment = nil
			answerSync(m, SyncOutcome{Err: err})
		}
	}
	g.pendingSync = nil
	rebalanceTimeout := g.rebalanceTimeoutLocked()
	if g.state == ClassicEmpty && s.cfg.InitialRebalanceDelay > 0 {
		g.setStateLocked(ClassicPreparingRebalance, now)
		g.initialDelay, g.newMemberAdded = true, false
		delay := s.cfg.InitialRebalanceDelay
		s.scheduleInitialDelayLocked(g, now, delay, max(rebalanceTimeout-delay, 0))
		return
	}
	g.setStateLocked(ClassicPreparingRebalance, now)
	s.scheduleRoundLocked(g, now.Add(rebalanceTimeout), s.completeJoinLocked)
	s.maybeCompleteJoinLocked(g, now)
}

// scheduleInitialDelayLocked waits delay; if members joined meanwhile and
// time remains within the rebalance timeout, it waits again.
func (s *ClassicGroups) scheduleInitialDelayLocked(g *classicGroup, now time.Time, delay, remaining time.Duration) {
	s.scheduleRoundLocked(g, now.Add(delay), func(g *classicGroup, now time.Time) {
		if g.newMemberAdded && remaining > 0 {
			g.newMemberAdded = false
			next := min(s.cfg.InitialRebalanceDelay, remaining)
			s.scheduleInitialDelayLocked(g, now, next, remaining-next)
			return
		}
		s.completeJoinLocked(g, now)
	})
}

func (s *ClassicGroups) maybeCompleteJoinLocked(g *classicGroup, now time.Time) {
	if g.state == ClassicPreparingRebalance && !g.initialDelay && g.allJoinedLocked() {
		s.completeJoinLocked(g, now)
	}
}

// completeJoinLocked ends a round: members that did not rejoin are removed,
// the generation advances, and every member gets its answer.
func (s *ClassicGroups) completeJoinLocked(g *classicGroup, now time.Time) {
	if g.state != ClassicPreparingRebalance {
		return
	}
	s.cancelRoundLocked(g)
	g.initialDelay, g.newMemberAdded = false, false
	for _, id := range slices.Clone(g.order) {
		if m := g.members[id]; m.join == nil {
			s.removeMemberLocked(g, m, fmt.Errorf("%w: member %s did not rejoin in time", ErrUnknownMemberID, id))
		}
	}
	g.generation++
	if len(g.members) == 0 {
		g.protocol = ""
		g.subscribed = nil
		g.setStateLocked(ClassicEmpty, now)
		return
	}
	g.protocol = g.selectProtocolLocked()
	g.refreshSubscribedLocked()
	g.setStateLocked(ClassicCompletingRebalance, now)
	g.pendingSync = make(map[string]bool, len(g.members))
	for _, id := range g.order {
		m := g.members[id]
		g.pendingSync[id] = true
		s.touchLocked(m, now)
		answerJoin(m, JoinOutcome{JoinResult: g.joinResultLocked(id, false)})
	}
	s.scheduleRoundLocked(g, now.Add(g.rebalanceTimeoutLocked()), s.expirePendingSyncLocked)
}

// expirePendingSyncLocked removes the members that did not send SyncGroup
// within the rebalance timeout after the round, and rebalances.
func (s *ClassicGroups) expirePendingSyncLocked(g *classicGroup, now time.Time) {
	if (g.state != ClassicCompletingRebalance && g.state != ClassicStable) || len(g.pendingSync) == 0 {
		return
	}
	for _, id := range slices.Sorted(maps.Keys(g.pendingSync)) {
		if m := g.members[id]; m != nil {
			s.removeMemberLocked(g, m, fmt.Errorf("%w: member %s did not sync in time", ErrUnknownMemberID, id))
		}
	}
	g.pendingSync = nil
	s.prepareRebalanceLocked(g, now)
}

// removeMemberLocked drops m from g, answering its waiting requests with
// err. It does not start a rebalance: see rebalanceAfterRemovalLocked.
func (s *ClassicGroups) removeMemberLocked(g *classicGroup, m *classicMember, err error) {
	answerJoin(m, JoinOutcome{JoinResult: JoinResult{MemberID: m.id, Generation: -1}, Err: err})
	answerSync(m, SyncOutcome{Err: err})
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

// expirePending forgets a member ID handed out by MEMBER_ID_REQUIRED that
// was not used within its session timeout.
func (s *ClassicGroups) expirePending(g *classicGroup, id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.pending[id]; !ok || g.state == ClassicDead {
		return
	}
	delete(g.pending, id)
	s.maybeCompleteJoinLocked(g, s.clock.Now())
}

// SyncInput is a SyncGroup request in domain terms.
type SyncInput struct {
	GroupID    string
	MemberID   string
	InstanceID *string
	Generation int32
	// ProtocolType and Protocol (v5+) must match the group's when set.
	ProtocolType *string
	Protocol     *string
	// Assignments is the leader's, by member ID; others send none.
	Assignments map[string][]byte
}

// SyncResult is a SyncGroup answer.
type SyncResult struct {
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// SyncOutcome is what a Sync channel receives.
type SyncOutcome struct {
	SyncResult
	Err error
}

// Sync handles one SyncGroup. The returned channel receives the answer
// exactly once; a follower's waits for the leader's SyncGroup (sync).
// Assignments are copied.
func (s *ClassicGroups) Sync(in SyncInput) <-chan SyncOutcome {
	ch := make(chan SyncOutcome, 1)
	if in.GroupID == "" {
		ch <- SyncOutcome{Err: fmt.Errorf("%w: group ID can't be empty", ErrInvalidGroupID)}
		return ch
	}
	err := s.withGroup(in.GroupID, false, errUnknownMember(in.GroupID, in.MemberID), func(g *classicGroup) error {
		return s.syncLocked(g, &in, ch)
	})
	if err != nil {
		ch <- SyncOutcome{Err: err}
	}
	return ch
}

func (s *ClassicGroups) syncLocked(g *classicGroup, in *SyncInput, ch chan SyncOutcome) error {
	if err := s.checkGenerationLocked(g, in.MemberID, in.InstanceID, in.Generation); err != nil {
		return err
	}
	if in.ProtocolType != nil && *in.ProtocolType != g.protocolType || in.Protocol != nil && *in.Protocol != g.protocol {
		return fmt.Errorf("%w: group %s uses protocol type %q and protocol %q", ErrInconsistentGroupProtocol, g.id, g.protocolType, g.protocol)
	}
	now := s.clock.Now()
	m := g.members[in.MemberID]
	switch g.state {
	case ClassicPreparingRebalance:
		return fmt.Errorf("%w: group %s is rebalancing; rejoin", ErrRebalanceInProgress, g.id)
	case ClassicCompletingRebalance:
		if m.sync != nil {
			answerSync(m, SyncOutcome{Err: fmt.Errorf("%w: the member synced again", ErrRebalanceInProgress)})
		}
		m.sync = ch
		delete(g.pendingSync, m.id)
		s.touchLocked(m, now)
		if m.id == g.leader {
			for _, om := range g.members {
				om.assignment = slices.Clone(in.Assignments[om.id])
			}
			g.setStateLocked(ClassicStable, now)
			for _, om := range g.members {
				answerSync(om, SyncOutcome{SyncResult: SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: om.assignment}})
			}
		}
		return nil
	case ClassicStable:
		delete(g.pendingSync, m.id)
		s.touchLocked(m, now)
		ch <- SyncOutcome{SyncResult: SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment}}
		return nil
	}
	return errUnknownMember(g.id, in.MemberID)
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

// LeavingMember is one member of a LeaveGroup request: v0-v2 carry a member
// ID, v3+ a batch of member IDs and/or group instance IDs.
type LeavingMember struct {
	MemberID   string
	InstanceID *string
}

// Leave handles LeaveGroup (leave, static-leave): each member is removed or
// gets its own error, in request order; then the group rebalances once. The
// error is the group's: the group does not exist.
func (s *ClassicGroups) Leave(groupID string, members []LeavingMember) ([]error, error) {
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

func (s *ClassicGroups) leaveOneLocked(g *classicGroup, lm LeavingMember) error {
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
