package group

import (
	"errors"
	"fmt"
)

// ErrUnstableOffsetCommit: OffsetFetch with RequireStable for a partition
// with a pending transactional commit (UNSTABLE_OFFSET_COMMIT,
// require-stable in docs/transactions.md).
var ErrUnstableOffsetCommit = errors.New("unstable offset commit")

// TxnCommitInput is a TxnOffsetCommit in domain terms: a commit that stays
// pending until ProducerID's transaction ends.
type TxnCommitInput struct {
	CommitInput
	ProducerID int64
}

// TxnCommit stores offsets as pending for a transaction (txn-offset-commit).
// A request that carries a member ID, instance ID or generation is checked
// as KIP-447 asks, so a zombie whose group moved on stores nothing; one
// without (generation -1, no member) is not checked, as Kafka's
// ClassicGroup.validateOffsetCommit does for transactional commits. The
// result is shaped like Commit's.
func (s *ClassicGroups) TxnCommit(in TxnCommitInput) ([][]error, error) {
	if in.GroupID == "" {
		return nil, fmt.Errorf("%w: group ID can't be empty", ErrInvalidGroupID)
	}
	var errs [][]error
	err := s.withOffsetGroup(in.GroupID, true, func(g *classicGroup) error {
		if in.Generation >= 0 || in.MemberID != "" || in.InstanceID != nil {
			if err := g.validateMemberLocked(in.MemberID, in.InstanceID); err != nil {
				return err
			}
			if in.Generation != g.generation {
				return fmt.Errorf("%w: group %s is at generation %d, not %d", ErrIllegalGeneration, g.id, g.generation, in.Generation)
			}
		}
		now := s.clock.Now()
		errs = make([][]error, len(in.Topics))
		for i, t := range in.Topics {
			errs[i] = make([]error, len(t.Partitions))
			info, known := s.resolve(t.Topic)
			for j, p := range t.Partitions {
				if err := commitPartitionErr(t.Topic, info, known, p, s.cfg.OffsetMetadataMaxBytes); err != nil {
					errs[i][j] = err
					continue
				}
				c := committedOffset{offset: p.Offset, leaderEpoch: p.LeaderEpoch, commitTime: now}
				if p.Metadata != nil {
					c.metadata = *p.Metadata
				}
				if g.offsets.pending == nil {
					g.offsets.pending = make(map[int64]map[offsetKey]committedOffset)
				}
				if g.offsets.pending[in.ProducerID] == nil {
					g.offsets.pending[in.ProducerID] = make(map[offsetKey]committedOffset)
				}
				g.offsets.pending[in.ProducerID][offsetKey{t.Topic, p.Partition}] = c
			}
		}
		return nil
	})
	return errs, err
}

// CompleteTxn settles producerID's pending commits in a group: applied
// when commit is set, else dropped (end-txn). A group that no longer
// exists has nothing to settle.
func (s *ClassicGroups) CompleteTxn(groupID string, producerID int64, commit bool) {
	_ = s.withOffsetGroup(groupID, false, func(g *classicGroup) error {
		pending := g.offsets.pending[producerID]
		delete(g.offsets.pending, producerID)
		if !commit {
			return nil
		}
		now := s.clock.Now()
		for k, c := range pending {
			c.commitTime = now
			if g.offsets.committed == nil {
				g.offsets.committed = make(map[offsetKey]committedOffset)
			}
			g.offsets.committed[k] = c
		}
		return nil
	})
}
