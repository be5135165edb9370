package group

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

// maxMemberIDLen is the longest member ID Kafka accepts: clients generate a
// UUID string (36 characters) once per consumer.
const maxMemberIDLen = 36

// ShareOptions configures ShareGroups.
type ShareOptions struct {
	// Clock drives member session timeouts. Required.
	Clock locktimer.Clock
	// Broker is the broker-level configuration; it must pass Validate.
	Broker ShareConfig
	// Configs holds GROUP config overrides; nil makes a private store.
	Configs *ConfigStore
	// Registry is shared with the other group coordinators; nil makes a
	// private one.
	Registry *Registry
	// Topics resolves subscribed topics. Required.
	Topics TopicResolver
}

// ShareGroups owns every share group of the broker.
//
// Locking: mu guards the groups map; each group has its own lock, taken
// after mu. Topic resolution, the registry, the config store and the timer
// service are called with a group lock held.
type ShareGroups struct {
	coordinator[*shareGroup]
	broker  ShareConfig
	configs *ConfigStore

	rebalances atomic.Int64 // group epoch bumps of every share group (Rebalances)
}

// Rebalances returns how many times a share group's epoch has moved:
// members joining, leaving or timing out, and subscription or topic
// changes. Kafka's coordinator counts the same (share-group-rebalance-count).
func (s *ShareGroups) Rebalances() int64 { return s.rebalances.Load() }

// NewShareGroups validates o and returns an empty coordinator.
func NewShareGroups(o ShareOptions) (*ShareGroups, error) {
	s := &ShareGroups{broker: o.Broker, configs: o.Configs}
	if err := s.init(TypeShare, "ShareOptions", o.Clock, o.Registry, o.Topics, o.Broker.Validate); err != nil {
		return nil, err
	}
	if s.configs == nil {
		s.configs = NewConfigStore(o.Broker)
	}
	return s, nil
}

// Close stops every session timer. Members are left as they are.
func (s *ShareGroups) Close() { s.close() }

// Configs returns the GROUP config store in use.
func (s *ShareGroups) Configs() *ConfigStore { return s.configs }

// Registry returns the group-type registry in use.
func (s *ShareGroups) Registry() *Registry { return s.registry }

// ShareHeartbeatInput is a ShareGroupHeartbeat request in domain terms.
type ShareHeartbeatInput struct {
	GroupID     string
	MemberID    string
	MemberEpoch int32
	// RackID nil means unchanged; set, it must not be blank.
	RackID *string
	// SubscribedTopicNames nil means unchanged; a non-nil empty slice is
	// an (empty) subscription. Required and non-empty on join.
	SubscribedTopicNames []string
	// ClientID and ClientHost come from the request context.
	ClientID   string
	ClientHost string
}

// ShareHeartbeatResult is a successful ShareGroupHeartbeat answer.
type ShareHeartbeatResult struct {
	MemberEpoch       int32
	HeartbeatInterval time.Duration // zero on leave
	// Assignment is nil when the heartbeat need not carry one; otherwise
	// the member's full assignment (possibly empty).
	Assignment []TopicPartitions
}

// CheckMemberID is the first field check of ShareGroupHeartbeat, which Kafka
// makes before its topic ACL checks.
func CheckMemberID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: MemberId can't be empty", ErrInvalidRequest)
	}
	if javaLength(id) > maxMemberIDLen {
		return fmt.Errorf("%w: MemberId can't be longer than %d characters", ErrInvalidRequest, maxMemberIDLen)
	}
	return nil
}

// javaLength is the length of s as Java's String.length counts it (UTF-16
// code units), which is what Kafka's 36-character limit measures.
func javaLength(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// validate makes the request-shape checks of §4.2 in Kafka's order.
func (in *ShareHeartbeatInput) validate() error {
	if err := CheckMemberID(in.MemberID); err != nil {
		return err
	}
	// Kafka checks topic DESCRIBE ACLs here (§4.2); we have no authoriser
	// (§5.7). Its coordinator then repeats the member ID check with blank
	// meaning empty.
	switch {
	case strings.TrimSpace(in.MemberID) == "":
		return fmt.Errorf("%w: MemberId can't be empty", ErrInvalidRequest)
	case in.GroupID == "":
		return fmt.Errorf("%w: GroupId can't be empty", ErrInvalidRequest)
	case in.RackID != nil && strings.TrimSpace(*in.RackID) == "":
		return fmt.Errorf("%w: RackId can't be empty", ErrInvalidRequest)
	case in.MemberEpoch < -1:
		return fmt.Errorf("%w: MemberEpoch is invalid", ErrInvalidRequest)
	case in.MemberEpoch == 0 && len(in.SubscribedTopicNames) == 0:
		return fmt.Errorf("%w: SubscribedTopicNames must be set in first request", ErrInvalidRequest)
	}
	return nil
}

// Heartbeat handles one ShareGroupHeartbeat at time now (the clock's time).
// Errors wrap the sentinels of errors.go.
func (s *ShareGroups) Heartbeat(in ShareHeartbeatInput, now time.Time) (ShareHeartbeatResult, error) {
	if err := in.validate(); err != nil {
		return ShareHeartbeatResult{}, err
	}
	return answerFrom(&s.coordinator, s.lookup, in.GroupID, in.MemberEpoch == 0, func(g *shareGroup) (ShareHeartbeatResult, error) {
		return s.heartbeatLocked(g, &in, now)
	})
}

// lookup finds the share group id, creating it when create is set.
func (s *ShareGroups) lookup(id string, create bool) (*shareGroup, error) {
	return s.coordinator.lookup(id, create, "group %s not found", func(id string) *shareGroup {
		g := &shareGroup{groupBase: groupBase{id: id}, members: make(map[string]*shareMember), rebalances: &s.rebalances}
		s.groups[id] = g
		return g
	})
}

func (s *ShareGroups) heartbeatLocked(g *shareGroup, in *ShareHeartbeatInput, now time.Time) (ShareHeartbeatResult, error) {
	m := g.members[in.MemberID]
	if m == nil && in.MemberEpoch >= 0 && int32(len(g.members)) >= s.broker.MaxSize {
		return ShareHeartbeatResult{}, fmt.Errorf("%w: the share group has reached its maximum capacity of %d members", ErrGroupMaxSizeReached, s.broker.MaxSize)
	}
	if m == nil && in.MemberEpoch != 0 {
		return ShareHeartbeatResult{}, fmt.Errorf("%w: member %s is not a member of group %s", ErrUnknownMemberID, in.MemberID, g.id)
	}

	if in.MemberEpoch == -1 {
		g.removeMemberLocked(m, s.timers)
		return ShareHeartbeatResult{MemberEpoch: -1}, nil
	}

	if m != nil && (in.MemberEpoch > m.epoch || (in.MemberEpoch < m.epoch && in.MemberEpoch != m.prevEpoch)) {
		return ShareHeartbeatResult{}, fmt.Errorf("%w: the share group member has epoch %d, the request carried %d", ErrFencedMemberEpoch, m.epoch, in.MemberEpoch)
	}

	// Accepted: apply the request to the member.
	bump := false
	if m == nil {
		m = &shareMember{id: in.MemberID, assigned: map[topicPartition]bool{}}
		g.members[m.id] = m
		g.order = append(g.order, m.id)
		bump = true
	}
	m.clientID, m.clientHost = in.ClientID, in.ClientHost
	if in.RackID != nil {
		rack := *in.RackID
		m.rackID = &rack
	}
	if in.SubscribedTopicNames != nil {
		topics := slices.Compact(slices.Sorted(slices.Values(in.SubscribedTopicNames)))
		if !slices.Equal(topics, m.topics) {
			m.topics = topics
			bump = true
		}
	}
	// Topic metadata is checked on every heartbeat: cheap for a mock, and
	// it makes partitions added to a subscribed topic reach the members
	// without Kafka's metadata refresh interval.
	if g.refreshMetadataLocked(s.resolve) {
		bump = true
	}
	if bump {
		g.bumpEpochLocked()
	}
	g.computeAssignmentLocked()

	// The member moves to the target epoch in its own heartbeat and takes
	// its whole target at once: share groups have no revocation phase.
	if m.epoch != g.assignmentEpoch {
		m.prevEpoch, m.epoch = m.epoch, g.assignmentEpoch
	}
	target := g.target[m.id]
	if target == nil {
		target = map[topicPartition]bool{}
	}
	changed := !maps.Equal(target, m.assigned)
	m.assigned = target

	cfg := s.configs.Share(g.id)
	m.deadline = now.Add(cfg.SessionTimeout)
	s.armTimer(&m.timer, m.deadline, s.expiry(g, m))

	res := ShareHeartbeatResult{MemberEpoch: m.epoch, HeartbeatInterval: cfg.HeartbeatInterval}
	if in.MemberEpoch == 0 || in.SubscribedTopicNames != nil || changed {
		res.Assignment = assignmentList(m.assigned, g.metadata)
	}
	return res, nil
}

// expiry returns m's session-timeout callback.
func (s *ShareGroups) expiry(g *shareGroup, m *shareMember) func() {
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.deleted || g.members[m.id] != m || s.clock.Now().Before(m.deadline) {
			return
		}
		g.removeMemberLocked(m, s.timers)
	}
}

// ShareDescribedMember is one member in ShareGroupDescribe.
type ShareDescribedMember struct {
	MemberID             string
	RackID               *string
	MemberEpoch          int32
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	Assignment           []TopicPartitions
}

// ShareDescribedGroup is one group in ShareGroupDescribe. When Err is set
// (ErrInvalidGroupID or ErrGroupIDNotFound) only GroupID is meaningful.
type ShareDescribedGroup struct {
	GroupID         string
	Err             error
	State           ShareGroupState
	GroupEpoch      int32
	AssignmentEpoch int32
	AssignorName    string
	Members         []ShareDescribedMember // in join order
}

// Describe answers ShareGroupDescribe for ids, in request order.
func (s *ShareGroups) Describe(ids []string) []ShareDescribedGroup {
	return describeGroups(&s.coordinator, s.lookup, ids, describeShareLocked, func(id string, err error) ShareDescribedGroup {
		return ShareDescribedGroup{GroupID: id, Err: err}
	})
}

func describeShareLocked(g *shareGroup) ShareDescribedGroup {
	d := ShareDescribedGroup{
		GroupID:         g.id,
		State:           g.stateLocked(),
		GroupEpoch:      g.groupEpoch,
		AssignmentEpoch: g.assignmentEpoch,
		AssignorName:    "simple",
		Members:         make([]ShareDescribedMember, 0, len(g.order)),
	}
	for _, mid := range g.order {
		m := g.members[mid]
		dm := ShareDescribedMember{
			MemberID:             m.id,
			MemberEpoch:          m.epoch,
			ClientID:             m.clientID,
			ClientHost:           m.clientHost,
			SubscribedTopicNames: slices.Clone(m.topics),
			Assignment:           assignmentList(m.assigned, g.metadata),
		}
		if m.rackID != nil {
			rack := *m.rackID
			dm.RackID = &rack
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// ShareListedGroup is one share group in ListGroups (type and protocol type
// "share").
type ShareListedGroup struct {
	GroupID string
	State   ShareGroupState
}

// List returns every share group, sorted by ID. Filtering by type and state
// is the broker's, since it spans all group types.
func (s *ShareGroups) List() []ShareListedGroup {
	return listLive(&s.coordinator, func(g *shareGroup) ShareListedGroup {
		return ShareListedGroup{GroupID: g.id, State: g.stateLocked()}
	})
}

// Delete removes an empty share group (DeleteGroups). The caller then
// deletes the group's share-partition state. Group configs are left alone:
// they exist independently of the group.
func (s *ShareGroups) Delete(id string) error {
	return s.deleteEmpty(id, func(g *shareGroup) {
		g.deleted = true
		delete(s.groups, id)
		s.registry.Release(id, TypeShare)
	})
}

// RequireEmpty checks that id names a share group with no members, as the
// share-group offset admin APIs need. With create, a missing group is
// created, empty (AlterShareGroupOffsets does that); without, a missing
// group is ErrGroupIDNotFound (DeleteShareGroupOffsets). A group of another
// type is ErrGroupIDNotFound, an empty ID ErrInvalidGroupID, members
// present ErrNonEmptyGroup. A member may join right after the check; the
// admin APIs accept that race, as a single broker serves them one by one.
func (s *ShareGroups) RequireEmpty(id string, create bool) error {
	if id == "" {
		return fmt.Errorf("%w: group ID can't be empty", ErrInvalidGroupID)
	}
	return s.withGroupFrom(s.lookup, id, create, nil, func(g *shareGroup) error {
		if n := len(g.members); n > 0 {
			return fmt.Errorf("%w: group %s has %d members; stop them first", ErrNonEmptyGroup, id, n)
		}
		return nil
	})
}
