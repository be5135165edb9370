package group

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// shareEnv is a ShareGroups on a manual clock with a mutable topic table.
type shareEnv struct {
	t      *testing.T
	clock  *locktimer.ManualClock
	sg     *ShareGroups
	mu     sync.Mutex
	topics map[string]TopicInfo
}

func newShareEnv(t *testing.T, change func(*ShareConfig)) *shareEnv {
	t.Helper()
	e := &shareEnv{t: t, clock: locktimer.NewManualClock(t0), topics: topicsOf(map[string]int32{"A": 2, "B": 1, "C": 4})}
	cfg := DefaultShareConfig()
	if change != nil {
		change(&cfg)
	}
	sg, err := NewShareGroups(ShareOptions{
		Clock:  e.clock,
		Broker: cfg,
		Topics: func(name string) (TopicInfo, bool) {
			e.mu.Lock()
			defer e.mu.Unlock()
			info, ok := e.topics[name]
			return info, ok
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sg.Close)
	e.sg = sg
	return e
}

func (e *shareEnv) setPartitions(topic string, n int32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	info := e.topics[topic]
	info.Name, info.ID, info.Partitions = topic, tid(topic), n
	e.topics[topic] = info
}

func (e *shareEnv) hb(in ShareHeartbeatInput) (ShareHeartbeatResult, error) {
	if in.GroupID == "" {
		in.GroupID = "g"
	}
	return e.sg.Heartbeat(in, e.clock.Now())
}

// join joins member to g subscribed to topics and returns its epoch.
func (e *shareEnv) join(member string, topics ...string) ShareHeartbeatResult {
	e.t.Helper()
	res, err := e.hb(ShareHeartbeatInput{MemberID: member, SubscribedTopicNames: topics, ClientID: "client-" + member, ClientHost: "/127.0.0.1"})
	if err != nil {
		e.t.Fatalf("join %s: %v", member, err)
	}
	return res
}

func (e *shareEnv) beat(member string, epoch int32) ShareHeartbeatResult {
	e.t.Helper()
	res, err := e.hb(ShareHeartbeatInput{MemberID: member, MemberEpoch: epoch, ClientID: "client-" + member, ClientHost: "/127.0.0.1"})
	if err != nil {
		e.t.Fatalf("heartbeat %s@%d: %v", member, epoch, err)
	}
	return res
}

func (e *shareEnv) describe(id string) ShareDescribedGroup {
	e.t.Helper()
	d := e.sg.Describe([]string{id})
	if len(d) != 1 {
		e.t.Fatalf("describe returned %d groups", len(d))
	}
	return d[0]
}

// fmtAssignment renders an assignment as "A0,A1,B0", or "nil".
func fmtAssignment(a []TopicPartitions) string {
	if a == nil {
		return "nil"
	}
	var parts []string
	for _, tp := range a {
		for _, p := range tp.Partitions {
			parts = append(parts, fmt.Sprintf("%s%d", tp.Topic, p))
		}
	}
	return strings.Join(parts, ",")
}

func ptr[T any](v T) *T { return &v }

func TestShareHeartbeatValidation(t *testing.T) {
	long := strings.Repeat("m", 37)

	tests := []struct {
		name  string
		setup func(e *shareEnv)
		in    ShareHeartbeatInput
		want  error
	}{
		{"member id empty", nil, ShareHeartbeatInput{GroupID: "g", SubscribedTopicNames: []string{"A"}}, ErrInvalidRequest},
		{"member id too long", nil, ShareHeartbeatInput{GroupID: "g", MemberID: long, SubscribedTopicNames: []string{"A"}}, ErrInvalidRequest},
		{"member id of 36 two-unit runes", nil, ShareHeartbeatInput{GroupID: "g", MemberID: strings.Repeat("\U0001F600", 18) + "x", SubscribedTopicNames: []string{"A"}}, ErrInvalidRequest},
		{"member id blank", nil, ShareHeartbeatInput{GroupID: "g", MemberID: "  ", SubscribedTopicNames: []string{"A"}}, ErrInvalidRequest},
		{"group id empty", nil, ShareHeartbeatInput{MemberID: "m", SubscribedTopicNames: []string{"A"}}, ErrInvalidRequest},
		{"rack blank", nil, ShareHeartbeatInput{GroupID: "g", MemberID: "m", RackID: ptr("  "), SubscribedTopicNames: []string{"A"}}, ErrInvalidRequest},
		{"epoch below -1", nil, ShareHeartbeatInput{GroupID: "g", MemberID: "m", MemberEpoch: -2}, ErrInvalidRequest},
		{"join without topics", nil, ShareHeartbeatInput{GroupID: "g", MemberID: "m"}, ErrInvalidRequest},
		{"join with empty topics", nil, ShareHeartbeatInput{GroupID: "g", MemberID: "m", SubscribedTopicNames: []string{}}, ErrInvalidRequest},
		{"field checks before group type", func(e *shareEnv) { _ = e.sg.Registry().Claim("g", TypeConsumer) },
			ShareHeartbeatInput{GroupID: "g", MemberID: "m"}, ErrInvalidRequest},
		{"join on consumer group id", func(e *shareEnv) { _ = e.sg.Registry().Claim("g", TypeConsumer) },
			ShareHeartbeatInput{GroupID: "g", MemberID: "m", SubscribedTopicNames: []string{"A"}}, ErrGroupIDNotFound},
		{"join on classic group id", func(e *shareEnv) { _ = e.sg.Registry().Claim("g", TypeClassic) },
			ShareHeartbeatInput{GroupID: "g", MemberID: "m", SubscribedTopicNames: []string{"A"}}, ErrGroupIDNotFound},
		{"heartbeat to missing group", nil, ShareHeartbeatInput{GroupID: "g", MemberID: "m", MemberEpoch: 1}, ErrGroupIDNotFound},
		{"leave from missing group", nil, ShareHeartbeatInput{GroupID: "g", MemberID: "m", MemberEpoch: -1}, ErrGroupIDNotFound},
		{"join beyond max size", func(e *shareEnv) { e.join("m1", "A") },
			ShareHeartbeatInput{GroupID: "g", MemberID: "m2", SubscribedTopicNames: []string{"A"}}, ErrGroupMaxSizeReached},
		{"max size before unknown member", func(e *shareEnv) { e.join("m1", "A") },
			ShareHeartbeatInput{GroupID: "g", MemberID: "m2", MemberEpoch: 4}, ErrGroupMaxSizeReached},
		{"leave of unknown member in full group", func(e *shareEnv) { e.join("m1", "A") },
			ShareHeartbeatInput{GroupID: "g", MemberID: "m2", MemberEpoch: -1}, ErrUnknownMemberID},
		{"unknown member", func(e *shareEnv) { e.join("m1", "A"); e.beat("m1", -1) },
			ShareHeartbeatInput{GroupID: "g", MemberID: "m2", MemberEpoch: 1}, ErrUnknownMemberID},
		{"epoch ahead of member", func(e *shareEnv) { e.join("m1", "A") },
			ShareHeartbeatInput{GroupID: "g", MemberID: "m1", MemberEpoch: 2}, ErrFencedMemberEpoch},
		{"epoch behind and not previous", func(e *shareEnv) {
			e.sg.broker.MaxSize = 3
			e.join("m1", "A")
			e.join("m2", "A")
			e.beat("m1", 1) // m1: 1 -> 2, previous 1
			e.join("m3", "A")
			e.beat("m1", 2) // m1: 2 -> 3, previous 2
		}, ShareHeartbeatInput{GroupID: "g", MemberID: "m1", MemberEpoch: 1}, ErrFencedMemberEpoch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newShareEnv(t, func(c *ShareConfig) { c.MaxSize = 1 })
			if tc.setup != nil {
				tc.setup(e)
			}
			_, err := e.sg.Heartbeat(tc.in, e.clock.Now())
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestCheckMemberIDLength(t *testing.T) {
	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{"uuid", "7f1b8c2e-4a3d-4e5f-9a6b-1c2d3e4f5a6b", true},
		{"36 ascii", strings.Repeat("a", 36), true},
		{"37 ascii", strings.Repeat("a", 37), false},
		{"36 bmp runes of 3 bytes", strings.Repeat("\u00e9", 36), true},
		{"18 astral runes", strings.Repeat("\U0001F600", 18), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := CheckMemberID(tc.id); (err == nil) != tc.ok {
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestShareHeartbeatEpochsJoinLeaveRejoin(t *testing.T) {
	e := newShareEnv(t, nil)

	r := e.join("m1", "A", "B")
	if r.MemberEpoch != 1 || r.HeartbeatInterval != 5*time.Second || fmtAssignment(r.Assignment) != "A0,A1,B0" {
		t.Fatalf("m1 join: %+v %s", r, fmtAssignment(r.Assignment))
	}
	// Nothing changed: no assignment in the response.
	if r := e.beat("m1", 1); r.MemberEpoch != 1 || r.Assignment != nil {
		t.Fatalf("m1 steady: %+v", r)
	}

	r = e.join("m2", "A", "B")
	if r.MemberEpoch != 2 || fmtAssignment(r.Assignment) != "B0" {
		t.Fatalf("m2 join: %+v %s", r, fmtAssignment(r.Assignment))
	}
	// m1 is still at epoch 1 with its old partitions until it heartbeats.
	d := e.describe("g")
	if d.GroupEpoch != 2 || d.AssignmentEpoch != 2 || d.Members[0].MemberEpoch != 1 || fmtAssignment(d.Members[0].Assignment) != "A0,A1,B0" {
		t.Fatalf("describe after m2 join: %+v", d)
	}
	r = e.beat("m1", 1)
	if r.MemberEpoch != 2 || fmtAssignment(r.Assignment) != "A0,A1" {
		t.Fatalf("m1 moves to epoch 2: %+v %s", r, fmtAssignment(r.Assignment))
	}
	// The previous epoch is still accepted (a lost response).
	if r := e.beat("m1", 1); r.MemberEpoch != 2 || r.Assignment != nil {
		t.Fatalf("m1 with previous epoch: %+v", r)
	}

	// m2 has moved once since joining (previous epoch 0): a rejoin with
	// epoch 0 is accepted and keeps its epoch; the response is full.
	r = e.join("m2", "A", "B")
	if r.MemberEpoch != 2 || fmtAssignment(r.Assignment) != "B0" {
		t.Fatalf("m2 rejoin: %+v", r)
	}
	// m1's previous epoch is 1: a rejoin with epoch 0 is fenced.
	if _, err := e.hb(ShareHeartbeatInput{MemberID: "m1", SubscribedTopicNames: []string{"A", "B"}}); !errors.Is(err, ErrFencedMemberEpoch) {
		t.Fatalf("m1 rejoin: %v", err)
	}

	// Leave: epoch -1 back, group epoch bumps, target recomputed lazily.
	r = e.beat("m2", -1)
	if r.MemberEpoch != -1 || r.Assignment != nil || r.HeartbeatInterval != 0 {
		t.Fatalf("m2 leave: %+v", r)
	}
	d = e.describe("g")
	if d.GroupEpoch != 3 || d.AssignmentEpoch != 2 || len(d.Members) != 1 {
		t.Fatalf("describe after leave: %+v", d)
	}
	r = e.beat("m1", 2)
	if r.MemberEpoch != 3 || fmtAssignment(r.Assignment) != "A0,A1,B0" {
		t.Fatalf("m1 after m2 left: %+v %s", r, fmtAssignment(r.Assignment))
	}
	// A member that left rejoins with the same ID as a new member.
	if r := e.join("m2", "A", "B"); r.MemberEpoch != 4 {
		t.Fatalf("m2 rejoin after leave: %+v", r)
	}
}

func TestShareHeartbeatPooledAssignment(t *testing.T) {
	e := newShareEnv(t, nil)
	e.setPartitions("A", 1)
	e.join("m1", "A", "B")
	r2 := e.join("m2", "B", "A")
	r1 := e.beat("m1", 1)
	// Kafka pools A and B (kfake would give both members both partitions).
	if fmtAssignment(r1.Assignment) != "A0" || fmtAssignment(r2.Assignment) != "B0" {
		t.Fatalf("m1 %s, m2 %s", fmtAssignment(r1.Assignment), fmtAssignment(r2.Assignment))
	}
}

func TestShareHeartbeatSubscriptionAndMetadataChanges(t *testing.T) {
	e := newShareEnv(t, nil)
	e.join("m1", "A")

	// Same topics in another order with a duplicate: no change, but a
	// full heartbeat still carries the assignment.
	r, err := e.hb(ShareHeartbeatInput{MemberID: "m1", MemberEpoch: 1, SubscribedTopicNames: []string{"A", "A"}})
	if err != nil || r.MemberEpoch != 1 || fmtAssignment(r.Assignment) != "A0,A1" {
		t.Fatalf("same subscription: %+v %v", r, err)
	}
	r, err = e.hb(ShareHeartbeatInput{MemberID: "m1", MemberEpoch: 1, SubscribedTopicNames: []string{"B", "A"}})
	if err != nil || r.MemberEpoch != 2 || fmtAssignment(r.Assignment) != "A0,A1,B0" {
		t.Fatalf("subscribe to B: %+v %v", r, err)
	}
	// Partitions added to A: the next heartbeat sees it.
	e.setPartitions("A", 3)
	r = e.beat("m1", 2)
	if r.MemberEpoch != 3 || fmtAssignment(r.Assignment) != "A0,A1,A2,B0" {
		t.Fatalf("partition added: %+v %s", r, fmtAssignment(r.Assignment))
	}
	// A subscribed topic that does not exist yet is assigned once created.
	r, _ = e.hb(ShareHeartbeatInput{MemberID: "m1", MemberEpoch: 3, SubscribedTopicNames: []string{"D"}})
	if r.MemberEpoch != 4 || fmtAssignment(r.Assignment) != "" || r.Assignment == nil {
		t.Fatalf("subscribe to missing D: %+v", r)
	}
	e.setPartitions("D", 1)
	r = e.beat("m1", 4)
	if r.MemberEpoch != 5 || fmtAssignment(r.Assignment) != "D0" {
		t.Fatalf("D created: %+v %s", r, fmtAssignment(r.Assignment))
	}
	// Rack set, then unchanged when null; blank refused (validation test).
	if _, err := e.hb(ShareHeartbeatInput{MemberID: "m1", MemberEpoch: 5, RackID: ptr("r1")}); err != nil {
		t.Fatal(err)
	}
	e.beat("m1", 5)
	if d := e.describe("g"); d.Members[0].RackID == nil || *d.Members[0].RackID != "r1" || d.GroupEpoch != 5 {
		t.Fatalf("rack: %+v", d.Members[0])
	}
}

func TestShareSessionTimeout(t *testing.T) {
	t.Run("fenced exactly at the timeout", func(t *testing.T) {
		e := newShareEnv(t, nil)
		e.join("m1", "A")
		e.join("m2", "A")
		e.clock.Advance(45*time.Second - time.Millisecond)
		if d := e.describe("g"); len(d.Members) != 2 {
			t.Fatalf("fenced early: %+v", d)
		}
		e.clock.Advance(time.Millisecond)
		d := e.describe("g")
		if len(d.Members) != 0 || d.State != ShareEmpty || d.GroupEpoch != 4 {
			t.Fatalf("after timeout: %+v", d)
		}
		if _, err := e.hb(ShareHeartbeatInput{MemberID: "m1", MemberEpoch: 1}); !errors.Is(err, ErrUnknownMemberID) {
			t.Fatalf("fenced member heartbeat: %v", err)
		}
		// Clients rejoin with epoch 0 and the same ID.
		if r := e.join("m1", "A"); r.MemberEpoch != 5 || fmtAssignment(r.Assignment) != "A0,A1" {
			t.Fatalf("rejoin: %+v", r)
		}
	})
	t.Run("heartbeats keep a member alive", func(t *testing.T) {
		e := newShareEnv(t, nil)
		e.join("m1", "A")
		for i := 0; i < 5; i++ {
			e.clock.Advance(40 * time.Second)
			e.beat("m1", 1)
		}
		e.clock.Advance(45*time.Second - time.Millisecond)
		if d := e.describe("g"); len(d.Members) != 1 {
			t.Fatal("fenced despite heartbeats")
		}
		e.clock.Advance(time.Millisecond)
		if d := e.describe("g"); len(d.Members) != 0 {
			t.Fatal("not fenced")
		}
	})
	t.Run("the remaining member gets the partitions", func(t *testing.T) {
		e := newShareEnv(t, nil)
		e.join("m1", "C")
		e.join("m2", "C")
		if r := e.beat("m1", 1); fmtAssignment(r.Assignment) != "C0,C1" {
			t.Fatalf("m1: %s", fmtAssignment(r.Assignment))
		}
		e.clock.Advance(30 * time.Second)
		e.beat("m1", 2)
		e.clock.Advance(15 * time.Second) // m2 times out
		r := e.beat("m1", 2)
		if r.MemberEpoch != 3 || fmtAssignment(r.Assignment) != "C0,C1,C2,C3" {
			t.Fatalf("m1 after m2 fenced: %+v %s", r, fmtAssignment(r.Assignment))
		}
	})
	t.Run("group config sets timeout and interval", func(t *testing.T) {
		e := newShareEnv(t, nil)
		err := e.sg.Configs().Alter("g", []ConfigOp{
			{Name: "share.session.timeout.ms", Value: "60000"},
			{Name: "share.heartbeat.interval.ms", Value: "7000"},
		}, false)
		if err != nil {
			t.Fatal(err)
		}
		if c := e.sg.EffectiveConfig("g"); c.SessionTimeout != time.Minute || c.HeartbeatInterval != 7*time.Second {
			t.Fatalf("effective %+v", c)
		}
		if r := e.join("m1", "A"); r.HeartbeatInterval != 7*time.Second {
			t.Fatalf("interval %v", r.HeartbeatInterval)
		}
		e.clock.Advance(60*time.Second - time.Millisecond)
		if d := e.describe("g"); len(d.Members) != 1 {
			t.Fatal("fenced before the group's timeout")
		}
		e.clock.Advance(time.Millisecond)
		if d := e.describe("g"); len(d.Members) != 0 {
			t.Fatal("not fenced at the group's timeout")
		}
	})
	t.Run("leave stops the timer", func(t *testing.T) {
		e := newShareEnv(t, nil)
		e.join("m1", "A")
		e.beat("m1", -1)
		if n := e.sg.timers.Len(); n != 0 {
			t.Fatalf("%d session timers after the only member left", n)
		}
		e.clock.Advance(time.Minute)
		if d := e.describe("g"); d.GroupEpoch != 2 {
			t.Fatalf("group epoch %d after the left member's timeout, want 2", d.GroupEpoch)
		}
	})
}

func TestShareDescribeListDelete(t *testing.T) {
	e := newShareEnv(t, nil)
	e.join("m1", "B", "A")
	if _, err := e.hb(ShareHeartbeatInput{GroupID: "h", MemberID: "x", SubscribedTopicNames: []string{"C"}, RackID: ptr("rack-x"), ClientID: "cx", ClientHost: "/10.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	e.beat("m1", 1)
	if err := e.sg.Registry().Claim("consumer", TypeConsumer); err != nil {
		t.Fatal(err)
	}

	got := e.sg.Describe([]string{"g", "", "missing", "consumer", "h"})
	if len(got) != 5 {
		t.Fatalf("%d groups", len(got))
	}
	g := got[0]
	if g.Err != nil || g.GroupID != "g" || g.State != ShareStable || g.GroupEpoch != 1 || g.AssignmentEpoch != 1 || g.AssignorName != "simple" || len(g.Members) != 1 {
		t.Fatalf("g: %+v", g)
	}
	m := g.Members[0]
	if m.MemberID != "m1" || m.MemberEpoch != 1 || m.ClientID != "client-m1" || m.ClientHost != "/127.0.0.1" || m.RackID != nil ||
		strings.Join(m.SubscribedTopicNames, ",") != "A,B" || fmtAssignment(m.Assignment) != "A0,A1,B0" || m.Assignment[0].TopicID != tid("A") {
		t.Fatalf("m1: %+v", m)
	}
	for i, want := range []error{nil, ErrInvalidGroupID, ErrGroupIDNotFound, ErrGroupIDNotFound} {
		if i > 0 && !errors.Is(got[i].Err, want) {
			t.Fatalf("group %d: %v, want %v", i, got[i].Err, want)
		}
	}
	if h := got[4]; h.Members[0].RackID == nil || *h.Members[0].RackID != "rack-x" || h.Members[0].ClientID != "cx" {
		t.Fatalf("h: %+v", h)
	}

	// Delete: only empty share groups.
	if err := e.sg.Delete("g"); !errors.Is(err, ErrNonEmptyGroup) {
		t.Fatalf("delete non-empty: %v", err)
	}
	if err := e.sg.Delete("missing"); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("delete missing: %v", err)
	}
	if err := e.sg.Delete("consumer"); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("delete consumer: %v", err)
	}
	e.beat("m1", -1)
	// An empty group survives until deleted.
	list := e.sg.List()
	if fmt.Sprint(list) != "[{g Empty} {h Stable}]" {
		t.Fatalf("list: %v", list)
	}
	if err := e.sg.Delete("g"); err != nil {
		t.Fatal(err)
	}
	if d := e.describe("g"); !errors.Is(d.Err, ErrGroupIDNotFound) {
		t.Fatalf("describe deleted: %+v", d)
	}
	if _, ok := e.sg.Registry().TypeOf("g"); ok {
		t.Fatal("deleted group still registered")
	}
	if fmt.Sprint(e.sg.List()) != "[{h Stable}]" {
		t.Fatalf("list after delete: %v", e.sg.List())
	}
	// The ID is free for another type now, and a new share group starts
	// at epoch 1 again.
	if r := e.join("m1", "A"); r.MemberEpoch != 1 {
		t.Fatalf("recreated: %+v", r)
	}
}

func TestShareOneKind(t *testing.T) {
	e := newShareEnv(t, nil)
	e.join("m1", "A")
	reg := e.sg.Registry()
	if err := reg.Check("g", TypeClassic); !errors.Is(err, ErrInconsistentGroupProtocol) {
		t.Fatalf("JoinGroup on share group: %v", err)
	}
	if err := reg.Claim("g", TypeConsumer); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("consumer group on share group: %v", err)
	}
	if err := reg.Claim("c", TypeConsumer); err != nil {
		t.Fatal(err)
	}
	if _, err := e.hb(ShareHeartbeatInput{GroupID: "c", MemberID: "m", SubscribedTopicNames: []string{"A"}}); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("share heartbeat on consumer group: %v", err)
	}
	if d := e.describe("c"); !errors.Is(d.Err, ErrGroupIDNotFound) {
		t.Fatalf("describe consumer group: %v", d.Err)
	}
}

func TestNewShareGroupsRejectsBadConfig(t *testing.T) {
	c := DefaultShareConfig()
	c.MaxSize = 0
	if _, err := NewShareGroups(ShareOptions{Clock: locktimer.NewManualClock(t0), Broker: c, Topics: func(string) (TopicInfo, bool) { return TopicInfo{}, false }}); err == nil {
		t.Fatal("accepted max size 0")
	}
	if _, err := NewShareGroups(ShareOptions{Broker: DefaultShareConfig()}); err == nil {
		t.Fatal("accepted no clock")
	}
}

// TestConcurrentHeartbeats exercises the locks under -race: members join,
// heartbeat and leave while the clock fences others.
func TestShareConcurrentHeartbeats(t *testing.T) {
	e := newShareEnv(t, nil)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("m%d", w)
			group := fmt.Sprintf("g%d", w%2)
			for i := 0; i < 50; i++ {
				r, err := e.sg.Heartbeat(ShareHeartbeatInput{GroupID: group, MemberID: id, SubscribedTopicNames: []string{"A", "C"}}, e.clock.Now())
				if err != nil {
					continue // fenced by an epoch race: rejoin next round
				}
				_, _ = e.sg.Heartbeat(ShareHeartbeatInput{GroupID: group, MemberID: id, MemberEpoch: r.MemberEpoch}, e.clock.Now())
				_ = e.sg.Describe([]string{group})
				_ = e.sg.List()
				if i%10 == 0 {
					_, _ = e.sg.Heartbeat(ShareHeartbeatInput{GroupID: group, MemberID: id, MemberEpoch: -1}, e.clock.Now())
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 20; i++ {
			e.clock.Advance(10 * time.Second)
			_ = e.sg.Delete("g0")
		}
	}()
	wg.Wait()
}

func TestShareRequireEmpty(t *testing.T) {
	e := newShareEnv(t, nil)
	s := e.sg
	if err := s.RequireEmpty("", true); !errors.Is(err, ErrInvalidGroupID) {
		t.Fatalf("empty ID: %v", err)
	}
	if err := s.RequireEmpty("missing", false); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("missing group without create: %v", err)
	}
	if err := s.RequireEmpty("created", true); err != nil {
		t.Fatalf("missing group with create: %v", err)
	}
	if got := s.List(); len(got) != 1 || got[0].GroupID != "created" || got[0].State != ShareEmpty {
		t.Fatalf("after create: %+v", got)
	}
	if err := s.RequireEmpty("created", false); err != nil {
		t.Fatalf("existing empty group: %v", err)
	}
	e.join("m1", "A")
	if err := s.RequireEmpty("g", false); !errors.Is(err, ErrNonEmptyGroup) {
		t.Fatalf("group with a member: %v", err)
	}
}
