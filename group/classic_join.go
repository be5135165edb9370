package group

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// ClassicJoinInput is a JoinGroup request in domain terms.
type ClassicJoinInput struct {
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
	Protocols        []ClassicProtocol // in the member's order of preference
	// RequireKnownMemberID is set from JoinGroup v4: a new dynamic member
	// gets ErrMemberIDRequired and a member ID to join with.
	RequireKnownMemberID bool
}

// ClassicJoinResult is a JoinGroup answer. With an error only MemberID (the
// ID to join with after ErrMemberIDRequired) and Generation (-1) are
// meaningful.
type ClassicJoinResult struct {
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
	Members []ClassicJoinedMember
}

// ClassicJoinedMember is one member in the leader's JoinGroup answer.
type ClassicJoinedMember struct {
	MemberID   string
	InstanceID *string
	Metadata   []byte
}

// ClassicJoinOutcome is what a Join channel receives.
type ClassicJoinOutcome struct {
	ClassicJoinResult
	Err error
}

// joinFailed is the answer of a JoinGroup that failed with err, whose
// member ID is memberID (see ClassicJoinResult).
func joinFailed(memberID string, err error) ClassicJoinOutcome {
	return ClassicJoinOutcome{ClassicJoinResult: ClassicJoinResult{MemberID: memberID, Generation: -1}, Err: err}
}

func answerJoin(m *classicMember, out ClassicJoinOutcome) { answerOnce(&m.join, out) }

// Join handles one JoinGroup. The returned channel receives the answer
// exactly once (see ClassicGroups). Protocol metadata is copied.
func (s *ClassicGroups) Join(in ClassicJoinInput) <-chan ClassicJoinOutcome {
	ch := make(chan ClassicJoinOutcome, 1)
	fail := func(memberID string, err error) <-chan ClassicJoinOutcome {
		ch <- joinFailed(memberID, err)
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
	protocols := make([]ClassicProtocol, len(in.Protocols))
	for i, p := range in.Protocols {
		protocols[i] = ClassicProtocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)}
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

func (s *ClassicGroups) joinLocked(g *classicGroup, in *ClassicJoinInput, ch chan ClassicJoinOutcome) {
	now := s.clock.Now()
	fail := func(memberID string, err error) {
		ch <- joinFailed(memberID, err)
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
			ch <- ClassicJoinOutcome{ClassicJoinResult: g.joinResultLocked(m.id, false)}
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
		ch <- ClassicJoinOutcome{ClassicJoinResult: g.joinResultLocked(m.id, false)}
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
func (g *classicGroup) joinResultLocked(id string, skipAssignment bool) ClassicJoinResult {
	r := ClassicJoinResult{
		MemberID:       id,
		Generation:     g.generation,
		ProtocolType:   g.protocolType,
		Protocol:       g.protocol,
		LeaderID:       g.leader,
		SkipAssignment: skipAssignment,
	}
	if id == g.leader {
		r.Members = make([]ClassicJoinedMember, 0, len(g.order))
		for _, mid := range g.order {
			m := g.members[mid]
			r.Members = append(r.Members, ClassicJoinedMember{MemberID: m.id, InstanceID: m.instanceID, Metadata: m.metadataFor(g.protocol)})
		}
	}
	return r
}

func (s *ClassicGroups) addMemberLocked(g *classicGroup, id string, in *ClassicJoinInput, ch chan ClassicJoinOutcome, now time.Time) {
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
func (s *ClassicGroups) updateMemberLocked(g *classicGroup, m *classicMember, in *ClassicJoinInput, ch chan ClassicJoinOutcome, now time.Time) {
	if m.join != nil {
		// An older JoinGroup of the same member is still waiting (sent
		// on another connection); it will never be the member's answer.
		answerJoin(m, joinFailed(m.id, fmt.Errorf("%w: the member joined again", ErrRebalanceInProgress)))
	}
	m.protocols = in.Protocols
	m.sessionTimeout, m.rebalanceTimeout = in.SessionTimeout, in.RebalanceTimeout
	m.clientID, m.clientHost = in.ClientID, in.ClientHost
	m.join = ch
	s.touchLocked(m, now)
}

// replaceStaticLocked is static-rejoin: the instance's new member ID takes
// the old one's place, keeping its assignment; the old member ID is fenced.
func (s *ClassicGroups) replaceStaticLocked(g *classicGroup, old *classicMember, id string, in *ClassicJoinInput, ch chan ClassicJoinOutcome, now time.Time) {
	fenced := errFenced(*in.InstanceID, old.id)
	answerJoin(old, joinFailed(old.id, fenced))
	answerSync(old, ClassicSyncOutcome{Err: fenced})
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
			ch <- ClassicJoinOutcome{ClassicJoinResult: g.joinResultLocked(id, id == g.leader)}
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
			answerSync(m, ClassicSyncOutcome{Err: err})
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
		g.storeLocked()
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
		answerJoin(m, ClassicJoinOutcome{ClassicJoinResult: g.joinResultLocked(id, false)})
	}
	s.scheduleRoundLocked(g, now.Add(g.rebalanceTimeoutLocked()), s.expirePendingSyncLocked)
}
