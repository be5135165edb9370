package group

import (
	"errors"
	"fmt"
	"time"
)

// offsetStore is one group's committed offsets, guarded by the group's mu.
//
// Transactional commits (TxnOffsetCommit, docs/transactions.md) wait in
// pending, by producer ID, until the transaction ends: CompleteTxn moves
// them into committed on commit and drops them on abort. require-stable
// answers ErrUnstableOffsetCommit for a partition that has one
// (txn_offsets.go).
type offsetStore struct {
	committed map[offsetKey]committedOffset
	pending   map[int64]map[offsetKey]committedOffset
}

type offsetKey struct {
	topic     string
	partition int32
}

// committedOffset is one partition's commit (commit-stored).
type committedOffset struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTime  time.Time
	// expireAt is an explicit expiry (OffsetCommit v2-v4 retention time);
	// zero means the group's retention applies.
	expireAt time.Time
}

// CommitInput is an OffsetCommit request in domain terms.
type CommitInput struct {
	GroupID    string
	MemberID   string
	InstanceID *string
	// Generation is the member's generation, or -1 for a "simple" commit
	// (commit-simple).
	Generation int32
	// UnknownGroupIsNotFound is set from OffsetCommit v9: a commit with a
	// generation for a group that does not exist answers
	// ErrGroupIDNotFound; earlier versions answer ErrIllegalGeneration.
	UnknownGroupIsNotFound bool
	Topics                 []CommitTopic
}

// CommitTopic is one topic of a commit.
type CommitTopic struct {
	Topic      string
	Partitions []CommitPartition
}

// CommitPartition is one partition's offset to commit.
type CommitPartition struct {
	Partition   int32
	Offset      int64
	LeaderEpoch int32   // -1 when unknown
	Metadata    *string // nil is stored as ""
	// CommitTime is the commit's time; zero means now (OffsetCommit v1
	// lets the client set it).
	CommitTime time.Time
	// ExpireAt, if set, expires the offset then (OffsetCommit v2-v4).
	ExpireAt time.Time
}

// commitPartitionErr applies the per-partition rules of commit-stored
// (docs/groups.md) to one committed partition: it must exist, and its
// metadata must fit offset.metadata.max.bytes. Every commit path (classic,
// KIP-848, transactional) checks through it.
func commitPartitionErr(topic string, info TopicInfo, known bool, p CommitPartition, maxMetadata int32) error {
	switch {
	case !known || p.Partition < 0 || p.Partition >= info.Partitions:
		return fmt.Errorf("%w: %s-%d", ErrUnknownTopicOrPartition, topic, p.Partition)
	case p.Metadata != nil && len(*p.Metadata) > int(maxMetadata):
		return fmt.Errorf("%w: %d bytes, more than offset.metadata.max.bytes (%d)",
			ErrOffsetMetadataTooLarge, len(*p.Metadata), maxMetadata)
	}
	return nil
}

// Commit handles OffsetCommit (commit-checks, commit-simple, commit-stored).
// A group-level error applies to every partition; otherwise the result holds
// one error (or nil) per partition, shaped like in.Topics.
func (s *ClassicGroups) Commit(in CommitInput) ([][]error, error) {
	if in.GroupID == "" {
		return nil, fmt.Errorf("%w: group ID can't be empty", ErrInvalidGroupID)
	}
	var errs [][]error
	err := s.withOffsetGroup(in.GroupID, in.Generation < 0, func(g *classicGroup) error {
		if err := g.validateCommitLocked(&in); err != nil {
			return err
		}
		errs = g.offsets.storeLocked(in.Topics, s.resolve, s.cfg.OffsetMetadataMaxBytes, s.clock.Now())
		s.journalLocked(g.id, &g.offsets)
		return nil
	})
	if errors.Is(err, ErrGroupIDNotFound) && in.Generation >= 0 && !in.UnknownGroupIsNotFound {
		err = fmt.Errorf("%w: group %s does not exist", ErrIllegalGeneration, in.GroupID)
	}
	return errs, err
}

// withOffsetGroup is withGroup for the offset APIs, which answer
// ErrGroupIDNotFound for an ID of another group type (one-kind).
func (s *ClassicGroups) withOffsetGroup(id string, create bool, fn func(g *classicGroup) error) error {
	err := s.withGroup(id, create, nil, fn)
	if errors.Is(err, ErrInconsistentGroupProtocol) {
		err = fmt.Errorf("%w: group %s is not a classic group", ErrGroupIDNotFound, id)
	}
	return err
}

// validateCommitLocked is commit-checks and commit-simple.
func (g *classicGroup) validateCommitLocked(in *CommitInput) error {
	switch {
	case in.Generation < 0 && g.state == ClassicEmpty:
		return nil // a simple commit to a group without members
	case in.Generation >= 0 || in.MemberID != "" || in.InstanceID != nil:
		if err := g.validateMemberLocked(in.MemberID, in.InstanceID); err != nil {
			return err
		}
		if in.Generation != g.generation {
			return fmt.Errorf("%w: group %s is at generation %d, not %d", ErrIllegalGeneration, g.id, g.generation, in.Generation)
		}
	default:
		return fmt.Errorf("%w: group %s has members; a commit without a member ID is refused", ErrUnknownMemberID, g.id)
	}
	if g.state == ClassicCompletingRebalance {
		return fmt.Errorf("%w: group %s is completing a rebalance", ErrRebalanceInProgress, g.id)
	}
	return nil
}

// OffsetPartitions names partitions of one topic, for OffsetFetch and
// OffsetDelete.
type OffsetPartitions struct {
	Topic      string
	Partitions []int32
}

// FetchedTopic is one topic of an OffsetFetch answer.
type FetchedTopic struct {
	Topic      string
	Partitions []FetchedOffset
}

// FetchedOffset is one partition's committed offset; -1 (and leader epoch
// -1, metadata "") when it has none.
type FetchedOffset struct {
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	// Err is a partition's own error: ErrUnstableOffsetCommit when the
	// fetch requires stable offsets and a transactional commit of the
	// partition is pending (require-stable).
	Err error
}

// Fetch handles OffsetFetch for one group (fetch): every requested
// partition, -1 without a commit; nil topics means every committed
// partition, sorted. A group that does not exist has no commits; an ID of
// another group type is ErrGroupIDNotFound.
func (s *ClassicGroups) Fetch(groupID string, topics []OffsetPartitions) ([]FetchedTopic, error) {
	return s.FetchStable(groupID, topics, false)
}

// FetchStable is Fetch; with requireStable, a partition with a pending
// transactional commit carries ErrUnstableOffsetCommit (require-stable).
func (s *ClassicGroups) FetchStable(groupID string, topics []OffsetPartitions, requireStable bool) ([]FetchedTopic, error) {
	if groupID == "" {
		return nil, fmt.Errorf("%w: group ID can't be empty", ErrInvalidGroupID)
	}
	var out []FetchedTopic
	err := s.withOffsetGroup(groupID, false, func(g *classicGroup) error {
		out = g.offsets.fetchLocked(topics, requireStable)
		return nil
	})
	if err != nil {
		// Only a group that does not exist at all answers without error.
		if t, ok := s.registry.TypeOf(groupID); ok && t != TypeClassic || !errors.Is(err, ErrGroupIDNotFound) {
			return nil, err
		}
		return (&offsetStore{}).fetchLocked(topics, false), nil
	}
	return out, nil
}

// DeleteOffsets handles OffsetDelete (offset-delete): the offsets of topics
// the group does not consume are removed. The result holds one error (or
// nil) per partition, shaped like topics; the error is the group's.
func (s *ClassicGroups) DeleteOffsets(groupID string, topics []OffsetPartitions) ([][]error, error) {
	if groupID == "" {
		return nil, fmt.Errorf("%w: group ID can't be empty", ErrInvalidGroupID)
	}
	var errs [][]error
	err := s.withOffsetGroup(groupID, false, func(g *classicGroup) error {
		if g.state != ClassicEmpty && g.protocolType != "consumer" {
			return fmt.Errorf("%w: group %s has members and is not a consumer group", ErrNonEmptyGroup, groupID)
		}
		// Without readable subscriptions every topic counts as consumed,
		// as Kafka assumes.
		errs = g.offsets.deleteLocked(groupID, topics, s.resolve, func(topic string) bool {
			return g.state != ClassicEmpty && (g.subscribed == nil || g.subscribed[topic])
		})
		s.journalLocked(g.id, &g.offsets)
		return nil
	})
	return errs, err
}

// deleteLocked removes the committed offsets of the named partitions
// (offset-delete) and returns one error (or nil) per partition, shaped like
// topics: a partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION,
// one of a topic the group consumes GROUP_SUBSCRIBED_TO_TOPIC. The owning
// group's lock is held.
func (st *offsetStore) deleteLocked(groupID string, topics []OffsetPartitions, resolve TopicResolver, consumed func(topic string) bool) [][]error {
	errs := make([][]error, len(topics))
	for i, t := range topics {
		errs[i] = make([]error, len(t.Partitions))
		info, known := resolve(t.Topic)
		for j, p := range t.Partitions {
			switch {
			case !known || p < 0 || p >= info.Partitions:
				errs[i][j] = fmt.Errorf("%w: %s-%d", ErrUnknownTopicOrPartition, t.Topic, p)
			case consumed(t.Topic):
				errs[i][j] = fmt.Errorf("%w: group %s consumes %s", ErrGroupSubscribedToTopic, groupID, t.Topic)
			default:
				delete(st.committed, offsetKey{t.Topic, p})
			}
		}
	}
	return errs
}

// expireLocked drops the committed offsets that retention no longer keeps
// at now: an offset with an explicit expiry goes then, any other retention
// after the time since returns for it (when its group became empty, or its
// commit). The owning group's lock is held.
func (st *offsetStore) expireLocked(now time.Time, retention time.Duration, since func(committedOffset) time.Time) {
	for k, c := range st.committed {
		expires := since(c).Add(retention)
		if !c.expireAt.IsZero() {
			expires = c.expireAt
		}
		if !now.Before(expires) {
			delete(st.committed, k)
		}
	}
}

// armRetentionLocked arms the offset retention check (retention) if it is
// not armed; s.mu is held. The check runs every RetentionCheckInterval
// while any classic group exists, so an idle broker has no timer for it.
func (s *ClassicGroups) armRetentionLocked() {
	s.coordinator.armRetentionLocked(s.cfg.RetentionCheckInterval, s.expireOffsets)
}

// expireOffsets applies retention at now: the offsets of a group without
// members expire offsets.retention.minutes after it became Empty, or after
// their commit for a group that never had members (no protocol type), or
// at their explicit expiry. A group left with neither members nor offsets
// is removed.
func (s *ClassicGroups) expireOffsets(now time.Time) {
	groups := s.snapshot()
	var drop []*classicGroup
	for _, g := range groups {
		g.mu.Lock()
		if g.state == ClassicEmpty {
			n := len(g.offsets.committed)
			g.offsets.expireLocked(now, s.cfg.OffsetsRetention, func(c committedOffset) time.Time {
				if g.protocolType != "" {
					return g.stateSince
				}
				return c.commitTime
			})
			if len(g.offsets.committed) != n {
				s.journalLocked(g.id, &g.offsets)
			}
			if len(g.offsets.committed) == 0 && len(g.offsets.pending) == 0 && len(g.pending) == 0 {
				drop = append(drop, g)
			}
		}
		g.mu.Unlock()
	}
	for _, g := range drop {
		s.removeIfEmpty(g)
	}
}

// removeIfEmpty removes g if it still has no members, no handed-out member
// IDs and no offsets.
func (s *ClassicGroups) removeIfEmpty(g *classicGroup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state != ClassicEmpty || len(g.offsets.committed) > 0 || len(g.offsets.pending) > 0 || len(g.pending) > 0 || s.groups[g.id] != g {
		return
	}
	s.removeLocked(g)
}

// removeLocked makes g Dead and forgets it; s.mu and g.mu are held.
func (s *ClassicGroups) removeLocked(g *classicGroup) {
	s.journalGoneLocked(g.id)
	s.detachLocked(g)
	s.registry.Release(g.id, TypeClassic)
}
