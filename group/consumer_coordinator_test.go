package group

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

// consumerEnv is a ConsumerGroups on a manual clock.
type consumerEnv struct {
	t      *testing.T
	clock  *locktimer.ManualClock
	cg     *ConsumerGroups
	reg    *Registry
	store  *ConfigStore
	mu     sync.Mutex
	topics map[string]TopicInfo
}

func newConsumerEnv(t *testing.T) *consumerEnv { t.Helper(); return newConsumerEnvWith(t, nil) }

func newConsumerEnvWith(t *testing.T, change func(*ConsumerConfig)) *consumerEnv {
	t.Helper()
	cfg := DefaultConsumerConfig()
	if change != nil {
		change(&cfg)
	}
	e := &consumerEnv{t: t, clock: locktimer.NewManualClock(t0), topics: topicsOf(map[string]int32{"A": 2, "C": 4}), reg: NewRegistry()}
	e.store = NewConfigStore(DefaultShareConfig())
	cg, err := NewConsumerGroups(ConsumerOptions{
		Clock: e.clock, Config: cfg, Configs: e.store, Registry: e.reg,
		ListTopics: func() []string {
			e.mu.Lock()
			defer e.mu.Unlock()
			return slices.Sorted(maps.Keys(e.topics))
		},
		Topics: func(name string) (TopicInfo, bool) {
			e.mu.Lock()
			defer e.mu.Unlock()
			info, ok := e.topics[name]
			return info, ok
		},
		NewID: func() string { return "broker-made" },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cg.Close)
	e.cg = cg
	return e
}

func (e *consumerEnv) hb(in ConsumerHeartbeatInput) (ConsumerHeartbeatResult, error) {
	if in.GroupID == "" {
		in.GroupID = "g"
	}
	if in.Version == 0 {
		in.Version = 1
	}
	if in.RebalanceTimeoutMs == 0 {
		in.RebalanceTimeoutMs = -1
	}
	return e.cg.Heartbeat(in, e.clock.Now())
}

func (e *consumerEnv) join(member string, topics ...string) ConsumerHeartbeatResult {
	e.t.Helper()
	res, err := e.hb(ConsumerHeartbeatInput{MemberID: member, RebalanceTimeoutMs: 30000, SubscribedTopicNames: topics, Owned: []TopicPartitions{}})
	if err != nil {
		e.t.Fatalf("join %s: %v", member, err)
	}
	return res
}

// beat heartbeats member at epoch, reporting owned (nil: not reported).
func (e *consumerEnv) beat(member string, epoch int32, owned []TopicPartitions) ConsumerHeartbeatResult {
	e.t.Helper()
	res, err := e.hb(ConsumerHeartbeatInput{MemberID: member, MemberEpoch: epoch, Owned: owned})
	if err != nil {
		e.t.Fatalf("heartbeat %s@%d: %v", member, epoch, err)
	}
	return res
}

// count is how many partitions an assignment holds.
func count(a []TopicPartitions) int {
	n := 0
	for _, t := range a {
		n += len(t.Partitions)
	}
	return n
}

func Test848EpochsJoinAndLeave(t *testing.T) {
	e := newConsumerEnv(t)
	a := e.join("a", "A", "C")
	if a.MemberEpoch != 1 || count(a.Assignment) != 6 || a.HeartbeatInterval != 5*time.Second {
		t.Fatalf("first join: %+v", a)
	}
	b := e.join("b", "A", "C")
	if b.MemberEpoch != 2 || count(b.Assignment) != 0 {
		t.Fatalf("b joins while a still owns everything: %+v", b)
	}
	d := e.cg.Describe([]string{"g"})[0]
	if d.GroupEpoch != 2 || d.AssignmentEpoch != 2 || d.State != ConsumerReconciling || d.AssignorName != "uniform" {
		t.Fatalf("describe: %+v", d)
	}
	left, err := e.hb(ConsumerHeartbeatInput{MemberID: "b", MemberEpoch: -1})
	if err != nil || left.MemberEpoch != -1 {
		t.Fatalf("leave: %+v %v", left, err)
	}
	if _, err := e.hb(ConsumerHeartbeatInput{MemberID: "b", MemberEpoch: 2}); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("heartbeat after leave: %v", err)
	}
}

func Test848EpochsV0BrokerMakesMemberID(t *testing.T) {
	e := newConsumerEnv(t)
	res, err := e.cg.Heartbeat(ConsumerHeartbeatInput{Version: 0, GroupID: "g", RebalanceTimeoutMs: 1000, SubscribedTopicNames: []string{"A"}}, e.clock.Now())
	if err != nil || res.MemberID != "broker-made" || res.MemberEpoch != 1 {
		t.Fatalf("v0 join: %+v %v", res, err)
	}
	if _, err := e.hb(ConsumerHeartbeatInput{Version: 1, RebalanceTimeoutMs: 1000, SubscribedTopicNames: []string{"A"}}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("v1 join without member ID: %v", err)
	}
}

func Test848RevokeFirst(t *testing.T) {
	e := newConsumerEnv(t)
	a := e.join("a", "A", "C")
	all := a.Assignment
	b := e.join("b", "A", "C")
	// a is told to keep half; it stays at epoch 1 until it gives the rest up.
	a = e.beat("a", 1, all)
	if a.MemberEpoch != 1 || count(a.Assignment) != 3 {
		t.Fatalf("a revoking: %+v", a)
	}
	// b still gets nothing: a has not acknowledged the revocation.
	b = e.beat("b", b.MemberEpoch, []TopicPartitions{})
	if count(b.Assignment) != 0 {
		t.Fatalf("b got partitions a still owns: %+v", b.Assignment)
	}
	// A heartbeat that does not list owned partitions acknowledges nothing.
	if a2 := e.beat("a", 1, nil); a2.MemberEpoch != 1 {
		t.Fatalf("a advanced without acknowledging: %+v", a2)
	}
	kept := a.Assignment
	a = e.beat("a", 1, kept)
	if a.MemberEpoch != 2 {
		t.Fatalf("a after revoking: %+v", a)
	}
	b = e.beat("b", 2, []TopicPartitions{})
	if count(b.Assignment) != 3 {
		t.Fatalf("b after a revoked: %+v", b)
	}
	for _, ta := range kept {
		for _, tb := range b.Assignment {
			if ta.TopicID == tb.TopicID {
				for _, p := range ta.Partitions {
					if slices.Contains(tb.Partitions, p) {
						t.Fatalf("partition %s-%d owned twice", ta.Topic, p)
					}
				}
			}
		}
	}
	if d := e.cg.Describe([]string{"g"})[0]; d.State != ConsumerStable {
		t.Fatalf("state %s, want Stable", d.State)
	}
}

func Test848Fencing(t *testing.T) {
	e := newConsumerEnv(t)
	a := e.join("a", "A")
	if _, err := e.hb(ConsumerHeartbeatInput{MemberID: "a", MemberEpoch: 5}); !errors.Is(err, ErrFencedMemberEpoch) {
		t.Fatalf("future epoch: %v", err)
	}
	if _, err := e.hb(ConsumerHeartbeatInput{MemberID: "zz", MemberEpoch: 1}); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("unknown member: %v", err)
	}
	if _, err := e.hb(ConsumerHeartbeatInput{GroupID: "other", MemberID: "zz", MemberEpoch: 1}); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("unknown group: %v", err)
	}
	// The previous epoch is accepted when what it owns is still assigned
	// (the answer that moved it on may have been lost).
	e.join("b", "A")
	e.beat("a", a.MemberEpoch, a.Assignment) // revoking one partition
	a = e.beat("a", 1, []TopicPartitions{{TopicID: tid("A"), Partitions: []int32{0}}})
	if a.MemberEpoch != 2 {
		t.Fatalf("a: %+v", a)
	}
	if res := e.beat("a", 1, []TopicPartitions{{TopicID: tid("A"), Partitions: []int32{0}}}); res.MemberEpoch != 2 {
		t.Fatalf("previous epoch: %+v", res)
	}
	if _, err := e.hb(ConsumerHeartbeatInput{MemberID: "a", MemberEpoch: 1}); !errors.Is(err, ErrFencedMemberEpoch) {
		t.Fatalf("previous epoch without owned partitions: %v", err)
	}
}

func Test848TimeoutsSession(t *testing.T) {
	e := newConsumerEnv(t)
	e.join("a", "A")
	e.clock.Advance(44 * time.Second)
	e.beat("a", 1, nil)
	e.clock.Advance(44 * time.Second)
	if _, err := e.hb(ConsumerHeartbeatInput{MemberID: "a", MemberEpoch: 1}); err != nil {
		t.Fatalf("within session: %v", err)
	}
	e.clock.Advance(45 * time.Second)
	if _, err := e.hb(ConsumerHeartbeatInput{MemberID: "a", MemberEpoch: 1}); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("after session timeout: %v", err)
	}
}

func Test848TimeoutsGroupOverride(t *testing.T) {
	e := newConsumerEnv(t)
	if err := e.store.Alter("g", []ConfigOp{{Name: "consumer.session.timeout.ms", Value: "50000"}, {Name: "consumer.heartbeat.interval.ms", Value: "6000"}}, false); err != nil {
		t.Fatal(err)
	}
	if res := e.join("a", "A"); res.HeartbeatInterval != 6*time.Second {
		t.Fatalf("interval %v", res.HeartbeatInterval)
	}
	e.clock.Advance(49 * time.Second)
	e.beat("a", 1, nil)
	e.clock.Advance(50 * time.Second)
	if _, err := e.hb(ConsumerHeartbeatInput{MemberID: "a", MemberEpoch: 1}); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("after overridden session timeout: %v", err)
	}
}

func Test848TimeoutsRebalanceFencesNonRevoker(t *testing.T) {
	e := newConsumerEnv(t)
	a := e.join("a", "C")
	e.join("b", "C")
	e.beat("a", 1, a.Assignment) // told to revoke two partitions; never does
	for range 5 {
		e.clock.Advance(5 * time.Second)
		e.beat("a", 1, a.Assignment)
		e.beat("b", 2, []TopicPartitions{})
	}
	e.clock.Advance(5 * time.Second)
	if _, err := e.hb(ConsumerHeartbeatInput{MemberID: "a", MemberEpoch: 1}); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("a should be fenced after the 30s rebalance timeout: %v", err)
	}
	if b := e.beat("b", 2, []TopicPartitions{}); b.MemberEpoch != 3 || count(b.Assignment) != 4 {
		t.Fatalf("b after a was fenced: %+v", b)
	}
}

func Test848EpochsStaticTemporaryLeave(t *testing.T) {
	e := newConsumerEnv(t)
	inst := "i1"
	res, err := e.hb(ConsumerHeartbeatInput{MemberID: "a", InstanceID: &inst, RebalanceTimeoutMs: 1000, SubscribedTopicNames: []string{"A"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.hb(ConsumerHeartbeatInput{MemberID: "a2", InstanceID: &inst, RebalanceTimeoutMs: 1000, SubscribedTopicNames: []string{"A"}}); !errors.Is(err, ErrUnreleasedInstanceID) {
		t.Fatalf("second live instance: %v", err)
	}
	if left, err := e.hb(ConsumerHeartbeatInput{MemberID: "a", MemberEpoch: -2, InstanceID: &inst}); err != nil || left.MemberEpoch != -2 {
		t.Fatalf("static leave: %+v %v", left, err)
	}
	back, err := e.hb(ConsumerHeartbeatInput{MemberID: "a2", InstanceID: &inst, RebalanceTimeoutMs: 1000, SubscribedTopicNames: []string{"A"}})
	if err != nil || back.MemberEpoch != res.MemberEpoch || count(back.Assignment) != 2 {
		t.Fatalf("static rejoin: %+v %v", back, err)
	}
	if d := e.cg.Describe([]string{"g"})[0]; d.GroupEpoch != 1 || len(d.Members) != 1 || d.Members[0].MemberID != "a2" {
		t.Fatalf("rejoin caused a rebalance: %+v", d)
	}
}

func Test848EpochsValidation(t *testing.T) {
	e := newConsumerEnv(t)
	bad := "nope"
	cases := map[string]struct {
		in   ConsumerHeartbeatInput
		want error
	}{
		"no rebalance timeout": {ConsumerHeartbeatInput{MemberID: "a", SubscribedTopicNames: []string{"A"}}, ErrInvalidRequest},
		"owned on join":        {ConsumerHeartbeatInput{MemberID: "a", RebalanceTimeoutMs: 1, SubscribedTopicNames: []string{"A"}, Owned: []TopicPartitions{{TopicID: tid("A"), Partitions: []int32{0}}}}, ErrInvalidRequest},
		"no subscription":      {ConsumerHeartbeatInput{MemberID: "a", RebalanceTimeoutMs: 1}, ErrInvalidRequest},
		"static leave no id":   {ConsumerHeartbeatInput{MemberID: "a", MemberEpoch: -2}, ErrInvalidRequest},
		"epoch -3":             {ConsumerHeartbeatInput{MemberID: "a", MemberEpoch: -3}, ErrInvalidRequest},
		"unknown assignor":     {ConsumerHeartbeatInput{MemberID: "a", RebalanceTimeoutMs: 1, SubscribedTopicNames: []string{"A"}, ServerAssignor: &bad}, ErrUnsupportedAssignor},
	}
	for name, c := range cases {
		if _, err := e.hb(c.in); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", name, err, c.want)
		}
	}
}

func Test848RangeAssignor(t *testing.T) {
	e := newConsumerEnv(t)
	r := "range"
	for _, m := range []string{"b", "a"} {
		if _, err := e.hb(ConsumerHeartbeatInput{MemberID: m, RebalanceTimeoutMs: 1000, SubscribedTopicNames: []string{"C"}, ServerAssignor: &r, Owned: []TopicPartitions{}}); err != nil {
			t.Fatal(err)
		}
	}
	d := e.cg.Describe([]string{"g"})[0]
	if d.AssignorName != "range" {
		t.Fatalf("assignor %s", d.AssignorName)
	}
	for _, m := range d.Members {
		want := map[string][]int32{"a": {0, 1}, "b": {2, 3}}[m.MemberID]
		if len(m.TargetAssignment) != 1 || !slices.Equal(m.TargetAssignment[0].Partitions, want) {
			t.Errorf("member %s target %+v, want %v", m.MemberID, m.TargetAssignment, want)
		}
	}
}

func TestConsumerOneKind(t *testing.T) {
	e := newConsumerEnv(t)
	if err := e.reg.Claim("s", TypeShare); err != nil {
		t.Fatal(err)
	}
	if _, err := e.hb(ConsumerHeartbeatInput{GroupID: "s", MemberID: "a", RebalanceTimeoutMs: 1, SubscribedTopicNames: []string{"A"}}); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("heartbeat on a share group: %v", err)
	}
	e.join("a", "A")
	if err := e.reg.Check("g", TypeClassic); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("classic use of a consumer group: %v", err)
	}
	if err := e.cg.Delete("g"); !errors.Is(err, ErrNonEmptyGroup) {
		t.Fatalf("delete with members: %v", err)
	}
	e.beat("a", -1, nil)
	if err := e.cg.Delete("g"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.reg.TypeOf("g"); ok {
		t.Fatal("deleted group still registered")
	}
}

func TestConsumerCommitChecks(t *testing.T) {
	e := newConsumerEnv(t)
	e.join("a", "A")
	e.join("b", "A") // group epoch 2; a stays at 1 until it revokes
	off := []CommitTopic{{Topic: "A", Partitions: []CommitPartition{{Partition: 0, Offset: 7, LeaderEpoch: -1}}}}
	cases := []struct {
		name    string
		in      CommitInput
		version int16
		want    error
	}{
		{"member at its epoch", CommitInput{MemberID: "a", Generation: 1}, 9, nil},
		{"stale epoch", CommitInput{MemberID: "b", Generation: 1}, 9, ErrStaleMemberEpoch},
		{"future epoch", CommitInput{MemberID: "a", Generation: 3}, 9, ErrStaleMemberEpoch},
		{"unknown member", CommitInput{MemberID: "zz", Generation: 1}, 9, ErrUnknownMemberID},
		{"admin commit with members", CommitInput{Generation: -1}, 9, ErrUnknownMemberID},
		{"old version", CommitInput{MemberID: "a", Generation: 1}, 8, ErrUnsupportedVersion},
	}
	for _, c := range cases {
		c.in.GroupID, c.in.Topics = "g", off
		_, err := e.cg.Commit(c.in, c.version)
		if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	id := "b"
	if _, err := e.cg.Fetch("g", &id, 1, nil, false); !errors.Is(err, ErrStaleMemberEpoch) {
		t.Errorf("fetch with stale epoch: %v", err)
	}
	got, err := e.cg.Fetch("g", nil, -1, []OffsetPartitions{{Topic: "A", Partitions: []int32{0, 1}}}, false)
	if err != nil || got[0].Partitions[0].Offset != 7 || got[0].Partitions[1].Offset != -1 {
		t.Fatalf("fetch: %+v %v", got, err)
	}
}

func Test848EpochsRegexSubscription(t *testing.T) {
	e := newConsumerEnv(t)
	re := "A|B"
	res, err := e.hb(ConsumerHeartbeatInput{MemberID: "a", RebalanceTimeoutMs: 1000, SubscribedTopicRegex: &re, Owned: []TopicPartitions{}})
	if err != nil || count(res.Assignment) != 2 {
		t.Fatalf("regex join: %+v %v", res, err)
	}
	// A topic created later that the regex matches joins the subscription
	// on the next heartbeat; "CA" does not match: the regex is anchored.
	e.mu.Lock()
	e.topics["B"] = TopicInfo{Name: "B", ID: tid("B"), Partitions: 3}
	e.topics["CA"] = TopicInfo{Name: "CA", ID: tid("CA"), Partitions: 3}
	e.mu.Unlock()
	res = e.beat("a", res.MemberEpoch, res.Assignment)
	if res.MemberEpoch != 2 || count(res.Assignment) != 5 {
		t.Fatalf("after topic B appeared: %+v", res)
	}
	if d := e.cg.Describe([]string{"g"})[0]; d.Members[0].SubscribedTopicRegex == nil || *d.Members[0].SubscribedTopicRegex != re {
		t.Fatalf("describe regex: %+v", d.Members[0])
	}
	bad := "("
	if _, err := e.hb(ConsumerHeartbeatInput{MemberID: "b", RebalanceTimeoutMs: 1000, SubscribedTopicRegex: &bad}); !errors.Is(err, ErrInvalidRegularExpression) {
		t.Fatalf("bad regex: %v", err)
	}
}

func TestConsumerOffsetsRetention(t *testing.T) {
	e := newConsumerEnvWith(t, func(c *ConsumerConfig) { c.OffsetsRetention = 10 * time.Minute; c.RetentionCheckInterval = time.Minute })
	e.join("a", "A")
	off := []CommitTopic{{Topic: "A", Partitions: []CommitPartition{{Partition: 0, Offset: 3, LeaderEpoch: -1}}}}
	if _, err := e.cg.Commit(CommitInput{GroupID: "g", MemberID: "a", Generation: 1, Topics: off}, 9); err != nil {
		t.Fatal(err)
	}
	// Offsets of a group with members never expire.
	for range 30 {
		e.clock.Advance(30 * time.Second)
		e.beat("a", 1, nil)
	}
	if got, err := e.cg.Fetch("g", nil, -1, nil, false); err != nil || len(got) != 1 {
		t.Fatalf("offsets of a live group: %+v %v", got, err)
	}
	e.beat("a", -1, nil)
	e.clock.Advance(9 * time.Minute)
	if got, err := e.cg.Fetch("g", nil, -1, nil, false); err != nil || len(got) != 1 {
		t.Fatalf("offsets before retention: %+v %v", got, err)
	}
	if d := e.cg.List(); len(d) != 1 || d[0].State != ConsumerEmpty {
		t.Fatalf("list: %+v", d)
	}
	e.clock.Advance(2 * time.Minute)
	if _, err := e.cg.Fetch("g", nil, -1, nil, false); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("after retention the group should be gone: %v", err)
	}
	if _, ok := e.reg.TypeOf("g"); ok {
		t.Fatal("expired group still registered")
	}
}

func Test848TimeoutsGroupConfigBoundsFollowBroker(t *testing.T) {
	cfg := DefaultConsumerConfig()
	cfg.HeartbeatInterval, cfg.MinHeartbeatInterval = 100*time.Millisecond, 10*time.Millisecond
	store := NewGroupConfigStore(DefaultShareConfig(), cfg)
	for _, e := range store.Describe("g") {
		if e.Name == "consumer.heartbeat.interval.ms" && e.Value != "100" {
			t.Fatalf("default %s, want the broker's 100", e.Value)
		}
	}
	if err := store.Alter("g", []ConfigOp{{Name: "consumer.heartbeat.interval.ms", Value: "20"}}, false); err != nil {
		t.Fatalf("within the broker's bounds: %v", err)
	}
	if err := store.Alter("g", []ConfigOp{{Name: "consumer.heartbeat.interval.ms", Value: "5"}}, false); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("below group.consumer.min.heartbeat.interval.ms: %v", err)
	}
}

// offset-delete for a KIP-848 group: a topic a member subscribes to is
// consumed and keeps its offsets; another topic's offsets go.
func TestConsumerDeleteOffsets(t *testing.T) {
	e := newConsumerEnv(t)
	e.join("a", "A")
	off := []CommitTopic{
		{Topic: "A", Partitions: []CommitPartition{{Partition: 0, Offset: 3, LeaderEpoch: -1}}},
		{Topic: "C", Partitions: []CommitPartition{{Partition: 1, Offset: 7, LeaderEpoch: -1}}},
	}
	if _, err := e.cg.Commit(CommitInput{GroupID: "g", MemberID: "a", Generation: 1, Topics: off}, 9); err != nil {
		t.Fatal(err)
	}
	errs, err := e.cg.DeleteOffsets("g", []OffsetPartitions{
		{Topic: "A", Partitions: []int32{0}},
		{Topic: "C", Partitions: []int32{1, 9}},
		{Topic: "nope", Partitions: []int32{0}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(errs[0][0], ErrGroupSubscribedToTopic) || errs[1][0] != nil ||
		!errors.Is(errs[1][1], ErrUnknownTopicOrPartition) || !errors.Is(errs[2][0], ErrUnknownTopicOrPartition) {
		t.Fatalf("per-partition errors %v", errs)
	}
	got, err := e.cg.Fetch("g", nil, -1, []OffsetPartitions{{Topic: "A", Partitions: []int32{0}}, {Topic: "C", Partitions: []int32{1}}}, false)
	if err != nil || got[0].Partitions[0].Offset != 3 || got[1].Partitions[0].Offset != -1 {
		t.Fatalf("after delete: %+v %v", got, err)
	}
	if _, err := e.cg.DeleteOffsets("missing", nil); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("unknown group: %v", err)
	}
}
