package group

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

// ConsumerOptions configures ConsumerGroups.
type ConsumerOptions struct {
	// Clock drives session and rebalance timeouts. Required.
	Clock locktimer.Clock
	// Config is the broker-level configuration; it must pass Validate.
	Config ConsumerConfig
	// Configs holds GROUP config overrides; nil means none.
	Configs *ConfigStore
	// Registry is shared with the other coordinators; nil makes a private one.
	Registry *Registry
	// Topics resolves subscribed and committed topics. Required.
	Topics TopicResolver
	// NewID returns member IDs for ConsumerGroupHeartbeat v0; nil means a
	// random UUID.
	NewID func() string
	// ListTopics returns every topic name, for SubscribedTopicRegex; nil
	// refuses regex subscriptions. Called with a group lock held.
	ListTopics func() []string
}

// ConsumerGroups owns every KIP-848 consumer group of the broker and their
// committed offsets.
//
// Locking: mu guards the groups map; each group has its own lock, taken
// after mu. The registry, config store, topic resolution and timer service
// are called with a group lock held; timer callbacks take the group lock.
type ConsumerGroups struct {
	coordinator[*consumerGroup]
	offsetJournals
	cfg     ConsumerConfig
	configs *ConfigStore
	newID   func() string
	list    func() []string
	// classic hands empty groups over (migration.go); set by Link.
	classic *ClassicGroups
}

// NewConsumerGroups validates o and returns an empty coordinator.
func NewConsumerGroups(o ConsumerOptions) (*ConsumerGroups, error) {
	s := &ConsumerGroups{cfg: o.Config, configs: o.Configs, newID: o.NewID, list: o.ListTopics,
		offsetJournals: offsetJournals{kind: TypeConsumer}}
	if err := s.init(TypeConsumer, "ConsumerOptions", o.Clock, o.Registry, o.Topics, o.Config.Validate); err != nil {
		return nil, err
	}
	if s.newID == nil {
		s.newID = randomUUID
	}
	return s, nil
}

// Close stops every timer. Groups are left as they are.
func (s *ConsumerGroups) Close() { s.close() }

// ConsumerHeartbeatInput is a ConsumerGroupHeartbeat request in domain terms.
type ConsumerHeartbeatInput struct {
	// Version is the request version: v0 has the broker make member IDs.
	Version     int16
	GroupID     string
	MemberID    string
	MemberEpoch int32
	InstanceID  *string
	RackID      *string
	// RebalanceTimeoutMs is -1 when unchanged.
	RebalanceTimeoutMs int32
	// SubscribedTopicNames nil means unchanged.
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	// ServerAssignor nil means unchanged.
	ServerAssignor *string
	// Owned is what the member holds; nil means unchanged.
	Owned      []TopicPartitions
	ClientID   string
	ClientHost string
}

// ConsumerHeartbeatResult is a successful ConsumerGroupHeartbeat answer.
type ConsumerHeartbeatResult struct {
	MemberID          string
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	// Assignment is nil when the answer need not carry one; otherwise the
	// member's whole current assignment (possibly empty).
	Assignment []TopicPartitions
}

func invalid(msg string) error { return fmt.Errorf("%w: %s", ErrInvalidRequest, msg) }

// validate makes Kafka's request checks (its
// throwIfConsumerGroupHeartbeatRequestIsInvalid), in its order.
func (s *ConsumerGroups) validate(in *ConsumerHeartbeatInput) error {
	switch {
	case in.Version >= 1 && strings.TrimSpace(in.MemberID) == "":
		return invalid("MemberId can't be empty.")
	case in.Version == 0 && in.MemberEpoch != 0 && strings.TrimSpace(in.MemberID) == "":
		return invalid("MemberId can't be empty.")
	case strings.TrimSpace(in.GroupID) == "":
		return invalid("GroupId can't be empty.")
	case in.RackID != nil && strings.TrimSpace(*in.RackID) == "":
		return invalid("RackId can't be empty.")
	case in.MemberEpoch < -2:
		return invalid("MemberEpoch is invalid.")
	case in.MemberEpoch == -2 && in.InstanceID == nil:
		return invalid("InstanceId can't be null.")
	case in.MemberEpoch == 0 && in.RebalanceTimeoutMs == -1:
		return invalid("RebalanceTimeoutMs must be provided in first request.")
	case in.MemberEpoch == 0 && len(in.Owned) > 0:
		return invalid("TopicPartitions must be empty when (re-)joining.")
	case in.MemberEpoch == 0 && in.SubscribedTopicNames == nil && in.SubscribedTopicRegex == nil:
		return invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
	case in.SubscribedTopicRegex != nil && s.list == nil:
		return invalid("SubscribedTopicRegex is not supported by this broker; subscribe to topic names.")
	case in.ServerAssignor != nil && !slices.Contains(s.cfg.Assignors, *in.ServerAssignor):
		return fmt.Errorf("%w: ServerAssignor %s is not supported; supported assignors: %s",
			ErrUnsupportedAssignor, *in.ServerAssignor, strings.Join(s.cfg.Assignors, ", "))
	}
	if in.SubscribedTopicRegex != nil && *in.SubscribedTopicRegex != "" {
		if _, err := compileTopicRegex(*in.SubscribedTopicRegex); err != nil {
			return fmt.Errorf("%w: SubscribedTopicRegex %s: %v", ErrInvalidRegularExpression, *in.SubscribedTopicRegex, err)
		}
	}
	return nil
}

// compileTopicRegex compiles a subscription regex to match whole topic
// names, as Kafka's RE2/J Pattern.matches does. Go's regexp is RE2 too, so
// the syntax is the same.
func compileTopicRegex(expr string) (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + expr + `)$`)
}

// Heartbeat handles one ConsumerGroupHeartbeat at time now (848-epochs,
// 848-revoke-first, 848-fencing, 848-timeouts).
func (s *ConsumerGroups) Heartbeat(in ConsumerHeartbeatInput, now time.Time) (ConsumerHeartbeatResult, error) {
	if err := s.validate(&in); err != nil {
		return ConsumerHeartbeatResult{}, err
	}
	if in.Version == 0 && in.MemberEpoch == 0 && in.MemberID == "" {
		in.MemberID = s.newID()
	}
	return answerFrom(&s.coordinator, s.lookupJoining, in.GroupID, in.MemberEpoch == 0, func(g *consumerGroup) (ConsumerHeartbeatResult, error) {
		return s.heartbeatLocked(g, &in, now)
	})
}

// lookup finds consumer group id, creating it when create is set.
func (s *ConsumerGroups) lookup(id string, create bool) (*consumerGroup, error) {
	return s.coordinator.lookup(id, create, "consumer group %s not found", s.addGroupLocked)
}

// addGroupLocked makes an empty consumer group id, which the registry
// already gives to consumer groups; s.mu is held.
func (s *ConsumerGroups) addGroupLocked(id string) *consumerGroup {
	g := &consumerGroup{
		groupBase: groupBase{id: id},
		members:   make(map[string]*consumerMember),
		owner:     make(map[topicPartition]string),
	}
	s.groups[id] = g
	s.armRetentionLocked()
	return g
}

func (s *ConsumerGroups) heartbeatLocked(g *consumerGroup, in *ConsumerHeartbeatInput, now time.Time) (ConsumerHeartbeatResult, error) {
	m := g.members[in.MemberID]
	if m == nil && in.MemberEpoch != 0 {
		return ConsumerHeartbeatResult{}, fmt.Errorf("%w: member %s is not in group %s", ErrUnknownMemberID, in.MemberID, g.id)
	}
	switch in.MemberEpoch {
	case -1:
		g.removeMemberLocked(m, s.timers, now)
		return ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: -1}, nil
	case -2:
		if m.instanceID == nil || *m.instanceID != *in.InstanceID {
			return ConsumerHeartbeatResult{}, fmt.Errorf("%w: member %s is not instance %s", ErrFencedInstanceID, m.id, *in.InstanceID)
		}
		// The member keeps its assignment for its session timeout, so a
		// restart with the same instance ID takes it over (KIP-345).
		m.left = true
		s.touchLocked(g, m, now)
		return ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: -2}, nil
	}
	owned := s.ownedSet(in.Owned)
	if in.MemberEpoch == 0 {
		owned = map[topicPartition]bool{}
	}

	bump := false
	if m == nil {
		var err error
		if m, err = s.joinLocked(g, in); err != nil {
			return ConsumerHeartbeatResult{}, err
		}
		bump = m.epoch == 0 // a static replacement inherits its predecessor's place
	} else if in.MemberEpoch != 0 && in.MemberEpoch != m.epoch &&
		!(in.MemberEpoch == m.prevEpoch && in.Owned != nil && subset(owned, m.assigned)) {
		return ConsumerHeartbeatResult{}, fmt.Errorf("%w: member %s has epoch %d, the request carried %d",
			ErrFencedMemberEpoch, m.id, m.epoch, in.MemberEpoch)
	}
	m.left = false
	m.clientID, m.clientHost = in.ClientID, in.ClientHost
	if in.RackID != nil {
		rack := *in.RackID
		m.rackID = &rack
	}
	if in.RebalanceTimeoutMs >= 0 {
		m.rebalanceTimeout = time.Duration(in.RebalanceTimeoutMs) * time.Millisecond
	}
	if in.SubscribedTopicNames != nil {
		topics := slices.Compact(slices.Sorted(slices.Values(in.SubscribedTopicNames)))
		if !slices.Equal(topics, m.topics) {
			m.topics, bump = topics, true
		}
	}
	if in.SubscribedTopicRegex != nil && *in.SubscribedTopicRegex != m.regex {
		m.regex, m.re, bump = *in.SubscribedTopicRegex, nil, true
		if m.regex != "" {
			m.re, _ = compileTopicRegex(m.regex) // validate compiled it
		}
	}
	if in.ServerAssignor != nil && *in.ServerAssignor != m.assignor {
		m.assignor, bump = *in.ServerAssignor, true
	}
	// Topic metadata, and the topics regexes match, are checked on every
	// heartbeat: cheap for a test broker, and new topics reach members at
	// once rather than after Kafka's periodic regex refresh.
	var listed []string
	if s.list != nil {
		listed = s.list()
	}
	if g.refreshMetadataLocked(s.resolve, listed) {
		bump = true
	}
	if bump {
		g.groupEpoch++
	}
	g.computeAssignmentLocked(s.cfg.Assignors, listed)

	hadRevoking := len(m.revoking) > 0
	changed := g.reconcileLocked(m, owned)
	if len(m.revoking) > 0 && !hadRevoking {
		s.armRevokeLocked(g, m, now)
	}
	_, interval := s.touchLocked(g, m, now)

	res := ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: m.epoch, HeartbeatInterval: interval}
	full := in.RebalanceTimeoutMs != -1 && in.SubscribedTopicNames != nil && in.Owned != nil
	if in.MemberEpoch == 0 || full || changed {
		res.Assignment = assignmentList(m.assigned, g.metadata)
	}
	return res, nil
}

// joinLocked adds the member of a heartbeat with epoch 0 and an unknown
// member ID. A static member whose instance left with epoch -2 is replaced
// in place: the new member ID takes over its epoch and assignment.
func (s *ConsumerGroups) joinLocked(g *consumerGroup, in *ConsumerHeartbeatInput) (*consumerMember, error) {
	if in.InstanceID != nil {
		for _, old := range g.members {
			if old.instanceID == nil || *old.instanceID != *in.InstanceID {
				continue
			}
			if !old.left {
				return nil, fmt.Errorf("%w: instance %s is still member %s", ErrUnreleasedInstanceID, *in.InstanceID, old.id)
			}
			m := &consumerMember{
				id: in.MemberID, instanceID: old.instanceID, epoch: old.epoch, prevEpoch: old.prevEpoch,
				topics: old.topics, regex: old.regex, re: old.re, assignor: old.assignor, rebalanceTimeout: old.rebalanceTimeout,
				assigned: old.assigned, revoking: old.revoking,
			}
			for tp, o := range g.owner {
				if o == old.id {
					g.owner[tp] = m.id
				}
			}
			if t, ok := g.target[old.id]; ok {
				g.target[m.id] = t
				delete(g.target, old.id)
			}
			s.stopTimersLocked(old)
			delete(g.members, old.id)
			g.members[m.id] = m
			g.order[slices.Index(g.order, old.id)] = m.id
			return m, nil
		}
	}
	if int32(len(g.members)) >= s.cfg.MaxSize {
		return nil, fmt.Errorf("%w: the consumer group has reached its maximum capacity of %d members", ErrGroupMaxSizeReached, s.cfg.MaxSize)
	}
	m := &consumerMember{id: in.MemberID, assigned: map[topicPartition]bool{}}
	if in.InstanceID != nil {
		id := *in.InstanceID
		m.instanceID = &id
	}
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	return m, nil
}

func (s *ConsumerGroups) stopTimersLocked(m *consumerMember) {
	if m.timer != nil {
		s.timers.Cancel(m.timer)
	}
	if m.revokeTimer != nil {
		s.timers.Cancel(m.revokeTimer)
	}
}

// touchLocked restarts m's session timeout and returns the group's
// session timeout and heartbeat interval.
func (s *ConsumerGroups) touchLocked(g *consumerGroup, m *consumerMember, now time.Time) (session, interval time.Duration) {
	session, interval = consumerTimeouts(&s.cfg, s.configs, g.id)
	m.deadline = now.Add(session)
	s.armTimer(&m.timer, m.deadline, s.expiry(g, m, func(m *consumerMember) time.Time { return m.deadline }))
	return session, interval
}

// armRevokeLocked fences m if it still holds partitions to revoke after its
// rebalance timeout (848-timeouts).
func (s *ConsumerGroups) armRevokeLocked(g *consumerGroup, m *consumerMember, now time.Time) {
	m.revokeDeadline = now.Add(m.rebalanceTimeout)
	s.armTimer(&m.revokeTimer, m.revokeDeadline, s.expiry(g, m, func(m *consumerMember) time.Time { return m.revokeDeadline }))
}

// expiry returns a timer callback that removes m once deadline(m), read
// under the group lock, is set and has passed; otherwise the fire is stale.
func (s *ConsumerGroups) expiry(g *consumerGroup, m *consumerMember, deadline func(*consumerMember) time.Time) func() {
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		d := deadline(m)
		now := s.clock.Now()
		if g.deleted || g.members[m.id] != m || d.IsZero() || now.Before(d) {
			return
		}
		g.removeMemberLocked(m, s.timers, now)
	}
}

// ownedSet turns a heartbeat's owned partitions into a set; nil stays nil.
func (s *ConsumerGroups) ownedSet(owned []TopicPartitions) map[topicPartition]bool {
	if owned == nil {
		return nil
	}
	set := make(map[topicPartition]bool)
	for _, t := range owned {
		for _, p := range t.Partitions {
			set[topicPartition{t.TopicID, p}] = true
		}
	}
	return set
}

func subset(a, b map[topicPartition]bool) bool {
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// ConsumerDescribedMember is one member in ConsumerGroupDescribe.
type ConsumerDescribedMember struct {
	MemberID             string
	InstanceID           *string
	RackID               *string
	MemberEpoch          int32
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	Assignment           []TopicPartitions
	TargetAssignment     []TopicPartitions
}

// ConsumerDescribedGroup is one group in ConsumerGroupDescribe; with Err
// set only GroupID is meaningful.
type ConsumerDescribedGroup struct {
	GroupID         string
	Err             error
	State           ConsumerGroupState
	GroupEpoch      int32
	AssignmentEpoch int32
	AssignorName    string
	Members         []ConsumerDescribedMember // in join order
}

// Describe answers ConsumerGroupDescribe for ids, in request order.
func (s *ConsumerGroups) Describe(ids []string) []ConsumerDescribedGroup {
	return describeGroups(&s.coordinator, s.lookup, ids, s.describeLocked, func(id string, err error) ConsumerDescribedGroup {
		return ConsumerDescribedGroup{GroupID: id, Err: err}
	})
}

func (s *ConsumerGroups) describeLocked(g *consumerGroup) ConsumerDescribedGroup {
	assignor := g.assignor
	if assignor == "" {
		assignor = s.cfg.Assignors[0]
	}
	d := ConsumerDescribedGroup{
		GroupID: g.id, State: g.stateLocked(), GroupEpoch: g.groupEpoch,
		AssignmentEpoch: g.assignmentEpoch, AssignorName: assignor,
	}
	for _, mid := range g.order {
		m := g.members[mid]
		dm := ConsumerDescribedMember{
			MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID, MemberEpoch: m.epoch,
			ClientID: m.clientID, ClientHost: m.clientHost, SubscribedTopicNames: slices.Clone(m.topics),
			Assignment:       assignmentList(m.assigned, g.metadata),
			TargetAssignment: assignmentList(g.target[m.id], g.metadata),
		}
		if m.regex != "" {
			re := m.regex
			dm.SubscribedTopicRegex = &re
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// ConsumerListedGroup is one consumer group in ListGroups.
type ConsumerListedGroup struct {
	GroupID string
	State   ConsumerGroupState
}

// List returns every consumer group, sorted by ID.
func (s *ConsumerGroups) List() []ConsumerListedGroup {
	return listLive(&s.coordinator, func(g *consumerGroup) ConsumerListedGroup {
		return ConsumerListedGroup{GroupID: g.id, State: g.stateLocked()}
	})
}

// Delete removes a consumer group with no members, offsets included
// (DeleteGroups).
func (s *ConsumerGroups) Delete(id string) error {
	return s.deleteEmpty(id, func(g *consumerGroup) {
		s.journalGoneLocked(g.id)
		s.detachLocked(g)
		s.registry.Release(id, TypeConsumer)
	})
}
