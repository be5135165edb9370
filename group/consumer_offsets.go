package group

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Committed offsets of KIP-848 consumer groups live in the same offsetStore
// as classic groups'; only the member check differs (commit-checks): the
// request's generation field carries the member epoch.

// ConsumerCommitVersion is the first OffsetCommit version a member of a
// consumer group may use, as in Kafka.
const ConsumerCommitVersion = 9

// Commit handles OffsetCommit for consumer group in.GroupID; version is the
// request's. Results are shaped as ClassicGroups.Commit's.
func (s *ConsumerGroups) Commit(in CommitInput, version int16) ([][]error, error) {
	var errs [][]error
	err := s.withGroup(in.GroupID, func(g *consumerGroup) error {
		if err := g.validateCommitLocked(&in, version); err != nil {
			return err
		}
		errs = g.offsets.storeLocked(in.Topics, s.resolve, s.cfg.OffsetMetadataMaxBytes, s.clock.Now())
		s.journalLocked(g.id, &g.offsets)
		return nil
	})
	return errs, err
}

// validateCommitLocked is commit-checks for a consumer group: a commit
// without member ID and a negative epoch is an admin commit, accepted with
// no members; otherwise the member must exist and the epoch be its own.
func (g *consumerGroup) validateCommitLocked(in *CommitInput, version int16) error {
	if in.Generation < 0 && in.MemberID == "" && len(g.members) == 0 {
		return nil
	}
	m := g.members[in.MemberID]
	if m == nil {
		return fmt.Errorf("%w: member %q is not in group %s", ErrUnknownMemberID, in.MemberID, g.id)
	}
	if version < ConsumerCommitVersion {
		return fmt.Errorf("%w: OffsetCommit version %d or above must be used by members of consumer groups", ErrUnsupportedVersion, ConsumerCommitVersion)
	}
	return checkMemberEpoch(m, in.Generation)
}

// checkMemberEpoch is the epoch half of commit-checks: any epoch but the
// member's own is STALE_MEMBER_EPOCH, older or newer alike, as Kafka 4's
// ConsumerGroup.validateMemberEpoch has it.
func checkMemberEpoch(m *consumerMember, epoch int32) error {
	if epoch != m.epoch {
		return fmt.Errorf("%w: member %s has epoch %d, the request carried %d", ErrStaleMemberEpoch, m.id, m.epoch, epoch)
	}
	return nil
}

// Fetch handles OffsetFetch for consumer group groupID. With no member ID
// and a negative epoch it is an admin fetch; otherwise the member must
// exist (UNKNOWN_MEMBER_ID) at that epoch (STALE_MEMBER_EPOCH), as Kafka
// checks for OffsetFetch v9+. requireStable is fetch-require-stable.
func (s *ConsumerGroups) Fetch(groupID string, memberID *string, epoch int32, topics []OffsetPartitions, requireStable bool) ([]FetchedTopic, error) {
	var out []FetchedTopic
	err := s.withGroup(groupID, func(g *consumerGroup) error {
		if memberID != nil || epoch >= 0 {
			id := ""
			if memberID != nil {
				id = *memberID
			}
			m := g.members[id]
			if m == nil {
				return fmt.Errorf("%w: member %q is not in group %s", ErrUnknownMemberID, id, g.id)
			}
			if err := checkMemberEpoch(m, epoch); err != nil {
				return err
			}
		}
		out = g.offsets.fetchLocked(topics, requireStable)
		return nil
	})
	return out, err
}

// DeleteOffsets handles OffsetDelete (offset-delete) for consumer group
// groupID: offsets of topics no member subscribes to (by name or by its
// regular expression) are removed; the result holds one error (or nil) per
// partition, shaped like topics.
func (s *ConsumerGroups) DeleteOffsets(groupID string, topics []OffsetPartitions) ([][]error, error) {
	var errs [][]error
	err := s.withGroup(groupID, func(g *consumerGroup) error {
		errs = g.offsets.deleteLocked(groupID, topics, s.resolve, func(topic string) bool {
			for _, m := range g.members {
				if slices.Contains(m.topics, topic) || (m.re != nil && m.re.MatchString(topic)) {
					return true
				}
			}
			return false
		})
		s.journalLocked(g.id, &g.offsets)
		return nil
	})
	return errs, err
}

// withGroup runs fn on consumer group id under its lock.
func (s *ConsumerGroups) withGroup(id string, fn func(g *consumerGroup) error) error {
	if id == "" {
		return fmt.Errorf("%w: group ID can't be empty", ErrInvalidGroupID)
	}
	return s.withGroupFrom(s.lookup, id, false, nil, fn)
}

// storeLocked stores a commit's partitions (commit-stored) and returns one
// error (or nil) per partition, shaped like topics.
func (st *offsetStore) storeLocked(topics []CommitTopic, resolve TopicResolver, maxMetadata int32, now time.Time) [][]error {
	if st.committed == nil {
		st.committed = make(map[offsetKey]committedOffset)
	}
	return storeInto(st.committed, topics, resolve, maxMetadata, now)
}

// storeInto checks each partition of topics (commit-stored) and writes the
// accepted ones into dst: the committed offsets, or one transaction's
// pending ones. It returns one error (or nil) per partition, shaped like
// topics.
func storeInto(dst map[offsetKey]committedOffset, topics []CommitTopic, resolve TopicResolver, maxMetadata int32, now time.Time) [][]error {
	errs := make([][]error, len(topics))
	for i, t := range topics {
		errs[i] = make([]error, len(t.Partitions))
		info, known := resolve(t.Topic)
		for j, p := range t.Partitions {
			if err := commitPartitionErr(t.Topic, info, known, p, maxMetadata); err != nil {
				errs[i][j] = err
				continue
			}
			c := committedOffset{offset: p.Offset, leaderEpoch: p.LeaderEpoch, commitTime: now, expireAt: p.ExpireAt}
			if p.Metadata != nil {
				c.metadata = *p.Metadata
			}
			if !p.CommitTime.IsZero() {
				c.commitTime = p.CommitTime
			}
			dst[offsetKey{t.Topic, p.Partition}] = c
		}
	}
	return errs
}

// fetchLocked answers OffsetFetch from the store (fetch): every requested
// partition, -1 without a commit; nil topics means every committed
// partition, sorted. With requireStable a partition with a pending
// transactional commit carries ErrUnstableOffsetCommit instead
// (require-stable).
func (st *offsetStore) fetchLocked(topics []OffsetPartitions, requireStable bool) []FetchedTopic {
	fetched := func(k offsetKey) FetchedOffset {
		if requireStable && st.pendingFor(k) {
			return FetchedOffset{Partition: k.partition, Offset: -1, LeaderEpoch: -1,
				Err: fmt.Errorf("%w: %s-%d has a pending transactional commit", ErrUnstableOffsetCommit, k.topic, k.partition)}
		}
		c, ok := st.committed[k]
		if !ok {
			return FetchedOffset{Partition: k.partition, Offset: -1, LeaderEpoch: -1}
		}
		return FetchedOffset{Partition: k.partition, Offset: c.offset, LeaderEpoch: c.leaderEpoch, Metadata: c.metadata}
	}
	var out []FetchedTopic
	if topics == nil {
		keys := slices.SortedFunc(maps.Keys(st.committed), func(a, b offsetKey) int {
			return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
		})
		for _, k := range keys {
			if len(out) == 0 || out[len(out)-1].Topic != k.topic {
				out = append(out, FetchedTopic{Topic: k.topic})
			}
			last := &out[len(out)-1]
			last.Partitions = append(last.Partitions, fetched(k))
		}
		return out
	}
	out = make([]FetchedTopic, 0, len(topics))
	for _, t := range topics {
		ft := FetchedTopic{Topic: t.Topic, Partitions: make([]FetchedOffset, 0, len(t.Partitions))}
		for _, p := range t.Partitions {
			ft.Partitions = append(ft.Partitions, fetched(offsetKey{t.Topic, p}))
		}
		out = append(out, ft)
	}
	return out
}

// armRetentionLocked arms the offset retention check if it is not armed;
// s.mu is held. It runs every RetentionCheckInterval while any consumer
// group exists.
func (s *ConsumerGroups) armRetentionLocked() {
	s.coordinator.armRetentionLocked(s.cfg.RetentionCheckInterval, s.expireOffsets)
}

// expireOffsets applies retention at now (groups.md retention): the offsets
// of a group without members expire OffsetsRetention after it became
// empty, or at their explicit expiry; a group left with neither members
// nor offsets (committed or pending) is removed, as Kafka's
// cleanupGroupMetadata does.
func (s *ConsumerGroups) expireOffsets(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, g := range s.groups {
		g.mu.Lock()
		if len(g.members) == 0 {
			n := len(g.offsets.committed)
			g.offsets.expireLocked(now, s.cfg.OffsetsRetention, func(committedOffset) time.Time { return g.emptySince })
			if len(g.offsets.committed) != n {
				s.journalLocked(g.id, &g.offsets)
			}
			if len(g.offsets.committed) == 0 && len(g.offsets.pending) == 0 {
				s.journalGoneLocked(g.id)
				g.deleted = true
				delete(s.groups, id)
				s.registry.Release(id, TypeConsumer)
			}
		}
		g.mu.Unlock()
	}
}
