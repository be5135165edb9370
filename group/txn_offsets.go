package group

import (
	"errors"
	"fmt"
	"time"
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
	// StaleEpochIsStale is set from TxnOffsetCommit v6 (KIP-1319), with
	// CommitInput.UnknownGroupIsNotFound: a consumer-group member's other
	// epoch answers ErrStaleMemberEpoch, as OffsetCommit answers it.
	// Before v6 it is ErrIllegalGeneration, the code older producers know
	// (txn-offset-commit-v6 in docs/transactions.md).
	StaleEpochIsStale bool
}

// TxnCommit stores offsets as pending for a transaction (txn-offset-commit).
// A request that carries a member ID, instance ID or generation is checked
// as KIP-447 asks, so a zombie whose group moved on stores nothing; one
// without (generation -1, no member) is not checked, as Kafka's
// ClassicGroup.validateOffsetCommit does for transactional commits, and
// creates the group if it does not exist. A generation for a group that
// does not exist is ILLEGAL_GENERATION, or from TxnOffsetCommit v6
// (in.UnknownGroupIsNotFound) GROUP_ID_NOT_FOUND, as Kafka's
// OffsetMetadataManager.validateTransactionalOffsetCommit answers it. The
// result is shaped like Commit's.
func (s *ClassicGroups) TxnCommit(in TxnCommitInput) ([][]error, error) {
	if in.GroupID == "" {
		return nil, fmt.Errorf("%w: group ID can't be empty", ErrInvalidGroupID)
	}
	var errs [][]error
	err := s.withOffsetGroup(in.GroupID, in.Generation < 0, func(g *classicGroup) error {
		if in.Generation >= 0 || in.MemberID != "" || in.InstanceID != nil {
			if err := g.validateMemberLocked(in.MemberID, in.InstanceID); err != nil {
				return err
			}
			if in.Generation != g.generation {
				return fmt.Errorf("%w: group %s is at generation %d, not %d", ErrIllegalGeneration, g.id, g.generation, in.Generation)
			}
		}
		errs = g.offsets.stageLocked(in.ProducerID, in.Topics, s.resolve, s.cfg.OffsetMetadataMaxBytes, s.clock.Now())
		s.journalPendingLocked(g.id, in.ProducerID, &g.offsets)
		return nil
	})
	if errors.Is(err, ErrGroupIDNotFound) && !in.UnknownGroupIsNotFound {
		if t, ok := s.registry.TypeOf(in.GroupID); !ok || t == TypeClassic {
			err = fmt.Errorf("%w: group %s does not exist", ErrIllegalGeneration, in.GroupID)
		}
	}
	return errs, err
}

// CompleteTxn settles producerID's pending commits in a group: applied
// when commit is set, else dropped (end-txn). A group that no longer
// exists has nothing to settle.
func (s *ClassicGroups) CompleteTxn(groupID string, producerID int64, commit bool) {
	_ = s.withOffsetGroup(groupID, false, func(g *classicGroup) error {
		s.completeTxnLocked(g.id, &g.offsets, producerID, commit, s.clock.Now())
		return nil
	})
}

// TxnCommit stores offsets as pending for a transaction in a consumer
// group (txn-offset-commit): a request without member ID, instance ID and
// with generation -1 is not checked, nor is one with a negative epoch to a
// group without members; otherwise the member must exist
// (UNKNOWN_MEMBER_ID) and the generation field carry its epoch. Any other
// epoch is ILLEGAL_GENERATION before TxnOffsetCommit v6, which had no
// STALE_MEMBER_EPOCH, so Kafka answers the classic code; from v6
// (in.StaleEpochIsStale, KIP-1319) it is STALE_MEMBER_EPOCH. Producers
// treat both as an abortable commit failure. The result is shaped like
// Commit's.
func (s *ConsumerGroups) TxnCommit(in TxnCommitInput) ([][]error, error) {
	var errs [][]error
	err := s.withGroup(in.GroupID, func(g *consumerGroup) error {
		unchecked := in.Generation < 0 && len(g.members) == 0 ||
			in.Generation == -1 && in.MemberID == "" && in.InstanceID == nil
		if !unchecked {
			m := g.members[in.MemberID]
			if m == nil {
				return fmt.Errorf("%w: member %q is not in group %s", ErrUnknownMemberID, in.MemberID, g.id)
			}
			if in.StaleEpochIsStale {
				if err := checkMemberEpoch(m, in.Generation); err != nil {
					return err
				}
			} else if in.Generation != m.epoch {
				return fmt.Errorf("%w: member %s has epoch %d, the request carried %d", ErrIllegalGeneration, m.id, m.epoch, in.Generation)
			}
		}
		errs = g.offsets.stageLocked(in.ProducerID, in.Topics, s.resolve, s.cfg.OffsetMetadataMaxBytes, s.clock.Now())
		s.journalPendingLocked(g.id, in.ProducerID, &g.offsets)
		return nil
	})
	return errs, err
}

// CompleteTxn settles producerID's pending commits in a consumer group, as
// ClassicGroups.CompleteTxn does for classic ones.
func (s *ConsumerGroups) CompleteTxn(groupID string, producerID int64, commit bool) {
	_ = s.withGroup(groupID, func(g *consumerGroup) error {
		s.completeTxnLocked(g.id, &g.offsets, producerID, commit, s.clock.Now())
		return nil
	})
}

// stageLocked stores a transactional commit's partitions as pending for
// producerID (commit-stored applies to each) and returns one error (or nil)
// per partition, shaped like topics.
func (st *offsetStore) stageLocked(producerID int64, topics []CommitTopic, resolve TopicResolver, maxMetadata int32, now time.Time) [][]error {
	if st.pending == nil {
		st.pending = make(map[int64]map[offsetKey]committedOffset)
	}
	dst := st.pending[producerID]
	if dst == nil {
		dst = make(map[offsetKey]committedOffset)
		st.pending[producerID] = dst
	}
	return storeInto(dst, topics, resolve, maxMetadata, now)
}

// completeTxnLocked moves producerID's pending commits into the committed
// offsets, stamped now, when commit is set, and drops them otherwise.
func (st *offsetStore) completeTxnLocked(producerID int64, commit bool, now time.Time) {
	pending := st.pending[producerID]
	delete(st.pending, producerID)
	if !commit || len(pending) == 0 {
		return
	}
	if st.committed == nil {
		st.committed = make(map[offsetKey]committedOffset)
	}
	for k, c := range pending {
		c.commitTime = now
		st.committed[k] = c
	}
}

// pendingFor reports whether a transaction holds a pending commit for k.
func (st *offsetStore) pendingFor(k offsetKey) bool {
	for _, m := range st.pending {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}
