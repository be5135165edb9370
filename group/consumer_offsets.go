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
		return nil
	})
	return errs, err
}

// validateCommitLocked is commit-checks for a consumer group: a commit
// without member ID and a negative epoch is an admin commit, accepted with
// no members; otherwise the member must exist and the epoch be its own
// (older: STALE_MEMBER_EPOCH, newer: FENCED_MEMBER_EPOCH).
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

func checkMemberEpoch(m *consumerMember, epoch int32) error {
	switch {
	case epoch > m.epoch:
		return fmt.Errorf("%w: member %s has epoch %d, the request carried %d", ErrFencedMemberEpoch, m.id, m.epoch, epoch)
	case epoch < m.epoch:
		return fmt.Errorf("%w: member %s has epoch %d, the request carried %d", ErrStaleMemberEpoch, m.id, m.epoch, epoch)
	}
	return nil
}

// Fetch handles OffsetFetch for consumer group groupID. memberID nil (or
// epoch -1) is an admin fetch; otherwise the member must exist
// (UNKNOWN_MEMBER_ID) at that epoch (STALE_MEMBER_EPOCH), as Kafka checks
// for OffsetFetch v9+.
func (s *ConsumerGroups) Fetch(groupID string, memberID *string, epoch int32, topics []OffsetPartitions) ([]FetchedTopic, error) {
	var committed map[offsetKey]committedOffset
	err := s.withGroup(groupID, func(g *consumerGroup) error {
		if memberID != nil && epoch >= 0 {
			m := g.members[*memberID]
			if m == nil {
				return fmt.Errorf("%w: member %q is not in group %s", ErrUnknownMemberID, *memberID, g.id)
			}
			if epoch != m.epoch {
				return fmt.Errorf("%w: member %s has epoch %d, the request carried %d", ErrStaleMemberEpoch, m.id, m.epoch, epoch)
			}
		}
		committed = maps.Clone(g.offsets.committed)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return fetchCommitted(committed, topics), nil
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
		return nil
	})
	return errs, err
}

// withGroup runs fn on consumer group id under its lock.
func (s *ConsumerGroups) withGroup(id string, fn func(g *consumerGroup) error) error {
	if id == "" {
		return fmt.Errorf("%w: group ID can't be empty", ErrInvalidGroupID)
	}
	for {
		g, err := s.lookup(id, false)
		if err != nil {
			return err
		}
		g.mu.Lock()
		if g.deleted {
			g.mu.Unlock()
			continue
		}
		err = fn(g)
		g.mu.Unlock()
		return err
	}
}

// storeLocked stores a commit's partitions (commit-stored) and returns one
// error (or nil) per partition, shaped like topics.
func (st *offsetStore) storeLocked(topics []CommitTopic, resolve TopicResolver, maxMetadata int32, now time.Time) [][]error {
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
			if st.committed == nil {
				st.committed = make(map[offsetKey]committedOffset)
			}
			st.committed[offsetKey{t.Topic, p.Partition}] = c
		}
	}
	return errs
}

// fetchCommitted answers OffsetFetch from a copy of a group's commits
// (fetch): every requested partition, -1 without a commit; nil topics
// means every committed partition, sorted.
func fetchCommitted(committed map[offsetKey]committedOffset, topics []OffsetPartitions) []FetchedTopic {
	fetched := func(k offsetKey) FetchedOffset {
		c, ok := committed[k]
		if !ok {
			return FetchedOffset{Partition: k.partition, Offset: -1, LeaderEpoch: -1}
		}
		return FetchedOffset{Partition: k.partition, Offset: c.offset, LeaderEpoch: c.leaderEpoch, Metadata: c.metadata}
	}
	var out []FetchedTopic
	if topics == nil {
		keys := slices.SortedFunc(maps.Keys(committed), func(a, b offsetKey) int {
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
	if s.closed {
		return
	}
	s.retention.armLocked(s.timers, s.clock, s.cfg.RetentionCheckInterval, &s.mu, s.expireOffsets,
		func() bool { return len(s.groups) > 0 && !s.closed })
}

// expireOffsets applies retention at now (groups.md retention): the offsets
// of a group without members expire OffsetsRetention after it became
// empty, or at their explicit expiry; a group left with neither members
// nor offsets is removed, as Kafka's cleanupGroupMetadata does.
func (s *ConsumerGroups) expireOffsets(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, g := range s.groups {
		g.mu.Lock()
		if len(g.members) == 0 {
			g.offsets.expireLocked(now, s.cfg.OffsetsRetention, func(committedOffset) time.Time { return g.emptySince })
			if len(g.offsets.committed) == 0 {
				g.deleted = true
				delete(s.groups, id)
				s.registry.Release(id, TypeConsumer)
			}
		}
		g.mu.Unlock()
	}
}
