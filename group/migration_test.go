package group

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// menv is a ClassicGroups and a ConsumerGroups linked on one registry and
// one manual clock, both seeing the kenv topics A (2 partitions) and C (4).
type menv struct {
	*consumerEnv
	classic *ClassicGroups
}

func newMigrationEnv(t *testing.T) *menv {
	t.Helper()
	k := newConsumerEnv(t)
	classic, err := NewClassicGroups(ClassicOptions{
		Clock: k.clock, Config: DefaultClassicConfig(), Registry: k.reg,
		Topics: func(name string) (TopicInfo, bool) {
			k.mu.Lock()
			defer k.mu.Unlock()
			info, ok := k.topics[name]
			return info, ok
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(classic.Close)
	if err := Link(classic, k.cg); err != nil {
		t.Fatal(err)
	}
	return &menv{consumerEnv: k, classic: classic}
}

func (e *menv) typeOf(id string) Type {
	t, _ := e.reg.TypeOf(id)
	return t
}

// consumerOffset is group id's committed offset of A-p as the consumer
// coordinator has it.
func (e *menv) consumerOffset(id string, p int32) int64 {
	e.t.Helper()
	got, err := e.cg.Fetch(id, nil, -1, []OffsetPartitions{{Topic: "A", Partitions: []int32{p}}}, false)
	if err != nil {
		e.t.Fatalf("consumer fetch %s: %v", id, err)
	}
	return got[0].Partitions[0].Offset
}

func (e *menv) classicOffset(id string, p int32) int64 {
	e.t.Helper()
	got, err := e.classic.Fetch(id, []OffsetPartitions{{Topic: "A", Partitions: []int32{p}}})
	if err != nil {
		e.t.Fatalf("classic fetch %s: %v", id, err)
	}
	return got[0].Partitions[0].Offset
}

// empty-upgrade and empty-downgrade: committed and pending transactional
// offsets go with the group both ways.
func TestMigrationEmptyGroupKeepsOffsets(t *testing.T) {
	e := newMigrationEnv(t)
	if _, err := e.classic.Commit(CommitInput{GroupID: "g", Generation: -1,
		Topics: []CommitTopic{{Topic: "A", Partitions: []CommitPartition{{Partition: 0, Offset: 5, LeaderEpoch: -1}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.classic.TxnCommit(TxnCommitInput{ProducerID: 7, CommitInput: CommitInput{GroupID: "g", Generation: -1,
		Topics: []CommitTopic{{Topic: "A", Partitions: []CommitPartition{{Partition: 1, Offset: 9, LeaderEpoch: -1}}}}}}); err != nil {
		t.Fatal(err)
	}

	// A joining heartbeat upgrades the Empty classic group.
	e.join("m1", "A")
	if got := e.typeOf("g"); got != TypeConsumer {
		t.Fatalf("after the heartbeat the registry says %v", got)
	}
	if _, err := e.classic.Fetch("g", nil); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("the classic coordinator still answers for g: %v", err)
	}
	if got := e.consumerOffset("g", 0); got != 5 {
		t.Fatalf("committed offset after the upgrade: %d, want 5", got)
	}
	e.cg.mu.Lock()
	g := e.cg.groups["g"]
	e.cg.mu.Unlock()
	g.mu.Lock()
	pending := g.offsets.pending[7][offsetKey{"A", 1}]
	g.mu.Unlock()
	if pending.offset != 9 {
		t.Fatalf("pending transactional offset after the upgrade: %+v", pending)
	}
	if got := e.cg.List(); len(got) != 1 || got[0].GroupID != "g" || got[0].State == ConsumerEmpty {
		t.Fatalf("consumer groups listed: %+v", got)
	}
	if got := e.classic.List(); len(got) != 0 {
		t.Fatalf("classic groups listed after the upgrade: %+v", got)
	}

	// The member leaves; a classic JoinGroup downgrades the empty group.
	e.beat("m1", -1, nil)
	out := ready(t, e.classic.Join(ClassicJoinInput{GroupID: "g", ClientID: "c", SessionTimeout: 10 * time.Second,
		RebalanceTimeout: 30 * time.Second, ProtocolType: "consumer", RequireKnownMemberID: true,
		Protocols: []ClassicProtocol{{Name: "range", Metadata: subscription("A")}}}))
	if !errors.Is(out.Err, ErrMemberIDRequired) {
		t.Fatalf("classic join after the downgrade: %v", out.Err)
	}
	if got := e.typeOf("g"); got != TypeClassic {
		t.Fatalf("after the JoinGroup the registry says %v", got)
	}
	if _, err := e.cg.Fetch("g", nil, -1, nil, false); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("the consumer coordinator still answers for g: %v", err)
	}
	if got := e.classicOffset("g", 0); got != 5 {
		t.Fatalf("committed offset after the downgrade: %d, want 5", got)
	}
	e.classic.CompleteTxn("g", 7, true)
	if got := e.classicOffset("g", 1); got != 9 {
		t.Fatalf("pending offset settled after the downgrade: %d, want 9", got)
	}

	// The handed-out member ID is forgotten by an upgrade: the group is
	// still Empty, so a heartbeat takes it again, offsets and all.
	e.join("m2", "A")
	if got := e.typeOf("g"); got != TypeConsumer || e.consumerOffset("g", 1) != 9 {
		t.Fatalf("second upgrade: type %v, A-1 at %d", got, e.consumerOffset("g", 1))
	}
}

// online-upgrade-not-served, classic-join-not-served and joins-convert.
func TestMigrationNonEmptyGroupsStay(t *testing.T) {
	e := newMigrationEnv(t)

	// A classic group with a member waiting out the initial delay.
	busy := e.classic.Join(ClassicJoinInput{GroupID: "busy", ClientID: "c", SessionTimeout: 10 * time.Second,
		RebalanceTimeout: 30 * time.Second, ProtocolType: "consumer",
		Protocols: []ClassicProtocol{{Name: "range", Metadata: subscription("A")}}})
	waiting(t, busy)
	_, err := e.hb(ConsumerHeartbeatInput{GroupID: "busy", MemberID: "m", RebalanceTimeoutMs: 30000, SubscribedTopicNames: []string{"A"}})
	if !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("heartbeat joining a classic group with members: %v", err)
	}
	if got := e.typeOf("busy"); got != TypeClassic {
		t.Fatalf("busy became %v", got)
	}
	// The member syncs, then goes away without LeaveGroup: the group
	// converts once its session (10 s) has timed out, not before.
	e.clock.Advance(3 * time.Second)
	first := ready(t, busy)
	if out := ready(t, e.classic.Sync(ClassicSyncInput{GroupID: "busy", MemberID: first.MemberID, Generation: first.Generation,
		Assignments: map[string][]byte{first.MemberID: {}}})); out.Err != nil {
		t.Fatalf("sync: %v", out.Err)
	}
	e.clock.Advance(10*time.Second - time.Millisecond)
	if _, err := e.hb(ConsumerHeartbeatInput{GroupID: "busy", MemberID: "m", RebalanceTimeoutMs: 30000, SubscribedTopicNames: []string{"A"}}); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("heartbeat joining within the classic member's session: %v", err)
	}
	e.clock.Advance(time.Millisecond)
	if _, err := e.hb(ConsumerHeartbeatInput{GroupID: "busy", MemberID: "m", RebalanceTimeoutMs: 30000, SubscribedTopicNames: []string{"A"}}); err != nil {
		t.Fatalf("heartbeat joining after the classic member's session: %v", err)
	}
	if got := e.typeOf("busy"); got != TypeConsumer {
		t.Fatalf("busy is %v after its last classic member expired", got)
	}

	// Only a joining heartbeat converts.
	if _, err := e.classic.Commit(CommitInput{GroupID: "simple", Generation: -1,
		Topics: []CommitTopic{{Topic: "A", Partitions: []CommitPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.hb(ConsumerHeartbeatInput{GroupID: "simple", MemberID: "m", MemberEpoch: 1}); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("heartbeat at epoch 1 on a classic group: %v", err)
	}
	if got := e.typeOf("simple"); got != TypeClassic {
		t.Fatalf("a non-joining heartbeat converted the group to %v", got)
	}

	// A KIP-848 group with a member refuses classic joins.
	e.join("m1", "A")
	out := ready(t, e.classic.Join(joinIn("g", "")))
	if !errors.Is(out.Err, ErrInconsistentGroupProtocol) {
		t.Fatalf("classic join on a consumer group with a member: %v", out.Err)
	}
	// A static member that left with -2 is still a member.
	inst := "i1"
	if _, err := e.hb(ConsumerHeartbeatInput{GroupID: "s", MemberID: "sm", InstanceID: &inst, RebalanceTimeoutMs: 30000, SubscribedTopicNames: []string{"A"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.hb(ConsumerHeartbeatInput{GroupID: "s", MemberID: "sm", InstanceID: &inst, MemberEpoch: -2}); err != nil {
		t.Fatal(err)
	}
	if out := ready(t, e.classic.Join(joinIn("s", ""))); !errors.Is(out.Err, ErrInconsistentGroupProtocol) {
		t.Fatalf("classic join on a group whose static member left temporarily: %v", out.Err)
	}
	if got := e.typeOf("g"); got != TypeConsumer {
		t.Fatalf("g became %v", got)
	}
}

// Conversions both ways race joins and leaves of both protocols on one ID
// without deadlock (the test's own timeout catches one) or a lost group.
func TestMigrationConcurrentConversions(t *testing.T) {
	e := newMigrationEnv(t)
	var wg sync.WaitGroup
	var committed atomic.Bool // some commit landed (the group was classic and Empty then)
	for w := range 2 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 200 {
				m := fmt.Sprintf("m%d-%d", w, i)
				if _, err := e.hb(ConsumerHeartbeatInput{GroupID: "x", MemberID: m, RebalanceTimeoutMs: 30000, SubscribedTopicNames: []string{"A"}}); err == nil {
					_, _ = e.hb(ConsumerHeartbeatInput{GroupID: "x", MemberID: m, MemberEpoch: -1})
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 200 {
				in := joinIn("x", "")
				in.RequireKnownMemberID = true
				out := <-e.classic.Join(in)
				if out.Err != nil && !errors.Is(out.Err, ErrMemberIDRequired) && !errors.Is(out.Err, ErrInconsistentGroupProtocol) {
					t.Errorf("classic join: %v", out.Err)
				}
				if _, err := e.classic.Commit(CommitInput{GroupID: "x", Generation: -1,
					Topics: []CommitTopic{{Topic: "A", Partitions: []CommitPartition{{Partition: 0, Offset: 3, LeaderEpoch: -1}}}}}); err == nil {
					committed.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	var offset int64
	switch e.typeOf("x") {
	case TypeClassic:
		offset = e.classicOffset("x", 0)
	case TypeConsumer:
		offset = e.consumerOffset("x", 0)
	default:
		t.Fatal("group x is gone")
	}
	if committed.Load() && offset != 3 {
		t.Fatalf("x's offset is %d after the races, want 3", offset)
	}
	if !committed.Load() {
		t.Log("no commit landed: the group was never classic and Empty when one was tried")
	}
}
