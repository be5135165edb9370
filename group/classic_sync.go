package group

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// ClassicSyncInput is a SyncGroup request in domain terms.
type ClassicSyncInput struct {
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

// ClassicSyncResult is a SyncGroup answer.
type ClassicSyncResult struct {
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// ClassicSyncOutcome is what a Sync channel receives.
type ClassicSyncOutcome struct {
	ClassicSyncResult
	Err error
}

func answerSync(m *classicMember, out ClassicSyncOutcome) { answerOnce(&m.sync, out) }

// Sync handles one SyncGroup. The returned channel receives the answer
// exactly once; a follower's waits for the leader's SyncGroup (sync).
// Assignments are copied.
func (s *ClassicGroups) Sync(in ClassicSyncInput) <-chan ClassicSyncOutcome {
	ch := make(chan ClassicSyncOutcome, 1)
	if in.GroupID == "" {
		ch <- ClassicSyncOutcome{Err: fmt.Errorf("%w: group ID can't be empty", ErrInvalidGroupID)}
		return ch
	}
	err := s.withGroup(in.GroupID, false, errUnknownMember(in.GroupID, in.MemberID), func(g *classicGroup) error {
		return s.syncLocked(g, &in, ch)
	})
	if err != nil {
		ch <- ClassicSyncOutcome{Err: err}
	}
	return ch
}

func (s *ClassicGroups) syncLocked(g *classicGroup, in *ClassicSyncInput, ch chan ClassicSyncOutcome) error {
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
			answerSync(m, ClassicSyncOutcome{Err: fmt.Errorf("%w: the member synced again", ErrRebalanceInProgress)})
		}
		m.sync = ch
		delete(g.pendingSync, m.id)
		s.touchLocked(m, now)
		if m.id == g.leader {
			for _, om := range g.members {
				om.assignment = slices.Clone(in.Assignments[om.id])
			}
			g.setStateLocked(ClassicStable, now)
			g.storeLocked()
			for _, om := range g.members {
				answerSync(om, ClassicSyncOutcome{ClassicSyncResult: ClassicSyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: om.assignment}})
			}
		}
		return nil
	case ClassicStable:
		delete(g.pendingSync, m.id)
		s.touchLocked(m, now)
		ch <- ClassicSyncOutcome{ClassicSyncResult: ClassicSyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment}}
		return nil
	}
	return errUnknownMember(g.id, in.MemberID)
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
