package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

// classicEnv is a ClassicGroups on a manual clock with topics t (3 partitions) and
// u (1 partition), and member IDs client-1, client-2, ... in order.
type classicEnv struct {
	t     *testing.T
	clock *locktimer.ManualClock
	cg    *ClassicGroups
	reg   *Registry
}

func newClassicEnv(t *testing.T, change func(*ClassicConfig)) *classicEnv {
	t.Helper()
	cfg := DefaultClassicConfig()
	if change != nil {
		change(&cfg)
	}
	e := &classicEnv{t: t, clock: locktimer.NewManualClock(t0), reg: NewRegistry()}
	var mu sync.Mutex
	n := 0
	cg, err := NewClassicGroups(ClassicOptions{
		Clock:    e.clock,
		Config:   cfg,
		Registry: e.reg,
		Topics: func(name string) (TopicInfo, bool) {
			parts := map[string]int32{"t": 3, "u": 1}[name]
			return TopicInfo{Name: name, Partitions: parts}, parts > 0
		},
		NewID: func() string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprint(n)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cg.Close)
	e.cg = cg
	return e
}

// subscription is a consumer protocol subscription (v0) of topics.
func subscription(topics ...string) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(topics)))
	for _, t := range topics {
		b = binary.BigEndian.AppendUint16(b, uint16(len(t)))
		b = append(b, t...)
	}
	return binary.BigEndian.AppendUint32(b, 0xffffffff) // null user data
}

// joinIn is a consumer's JoinGroup with protocol "range" on topic t.
func joinIn(group, member string) ClassicJoinInput {
	return ClassicJoinInput{
		GroupID: group, MemberID: member, ClientID: "client",
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 30 * time.Second,
		ProtocolType: "consumer", Protocols: []ClassicProtocol{{Name: "range", Metadata: subscription("t")}},
	}
}

// ready returns the answer waiting on ch, failing if there is none yet.
func ready[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	default:
		t.Fatal("no answer yet")
	}
	panic("unreachable")
}

func waiting[T any](t *testing.T, ch <-chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("answered early: %+v", v)
	default:
	}
}

// stable forms group g of n dynamic members (pre-v4 joins at once, the
// initial delay passes, the leader assigns "a-<id>") and returns their IDs,
// leader first.
func (e *classicEnv) stable(g string, n int) []string {
	e.t.Helper()
	var chans []<-chan ClassicJoinOutcome
	for range n {
		chans = append(chans, e.cg.Join(joinIn(g, "")))
	}
	// Joiners after the first extend the initial delay once.
	e.clock.Advance(2 * e.cg.cfg.InitialRebalanceDelay)
	var ids []string
	var syncs []<-chan ClassicSyncOutcome
	for _, ch := range chans {
		out := ready(e.t, ch)
		if out.Err != nil {
			e.t.Fatalf("join: %v", out.Err)
		}
		ids = append(ids, out.MemberID)
	}
	gen := e.generation(g)
	assign := map[string][]byte{}
	for _, id := range ids {
		assign[id] = []byte("a-" + id)
	}
	for i, id := range ids {
		in := ClassicSyncInput{GroupID: g, MemberID: id, Generation: gen}
		if i == 0 {
			in.Assignments = assign
		}
		syncs = append(syncs, e.cg.Sync(in))
	}
	for _, ch := range syncs {
		if out := ready(e.t, ch); out.Err != nil {
			e.t.Fatalf("sync: %v", out.Err)
		}
	}
	return ids
}

func (e *classicEnv) group(id string) *classicGroup {
	e.cg.mu.Lock()
	defer e.cg.mu.Unlock()
	return e.cg.groups[id]
}

func (e *classicEnv) generation(id string) int32 {
	g := e.group(id)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.generation
}

func (e *classicEnv) state(id string) ClassicGroupState {
	return e.cg.Describe(id).State
}

func TestClassicMemberIDRequired(t *testing.T) {
	e := newClassicEnv(t, nil)
	in := joinIn("g", "")
	in.RequireKnownMemberID = true
	out := ready(t, e.cg.Join(in))
	if !errors.Is(out.Err, ErrMemberIDRequired) || out.MemberID != "client-1" || out.Generation != -1 {
		t.Fatalf("v4 join without member ID: %+v", out)
	}
	if st := e.state("g"); st != ClassicEmpty {
		t.Fatalf("state after MEMBER_ID_REQUIRED = %s, want Empty", st)
	}
	in.MemberID = out.MemberID
	ch := e.cg.Join(in)
	waiting(t, ch)
	e.clock.Advance(3 * time.Second)
	out = ready(t, ch)
	if out.Err != nil || out.MemberID != "client-1" || out.Generation != 1 || out.LeaderID != "client-1" || len(out.Members) != 1 {
		t.Fatalf("join with the given ID: %+v", out)
	}
	// A member ID the group never handed out.
	in.MemberID = "made-up"
	if out := ready(t, e.cg.Join(in)); !errors.Is(out.Err, ErrUnknownMemberID) {
		t.Fatalf("unknown member ID: %v", out.Err)
	}
}

func TestClassicMemberIDAssignedBeforeV4(t *testing.T) {
	e := newClassicEnv(t, nil)
	ch := e.cg.Join(joinIn("g", ""))
	waiting(t, ch)
	e.clock.Advance(3 * time.Second)
	if out := ready(t, ch); out.Err != nil || out.MemberID != "client-1" || out.Generation != 1 {
		t.Fatalf("pre-v4 join: %+v", out)
	}
}

func TestClassicProtocolType(t *testing.T) {
	tests := []struct {
		name   string
		change func(*ClassicJoinInput)
	}{
		{"other protocol type", func(in *ClassicJoinInput) { in.ProtocolType = "connect" }},
		{"no protocol in common", func(in *ClassicJoinInput) { in.Protocols = []ClassicProtocol{{Name: "sticky"}} }},
		{"no protocol type", func(in *ClassicJoinInput) { in.ProtocolType = "" }},
		{"no protocols", func(in *ClassicJoinInput) { in.Protocols = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newClassicEnv(t, nil)
			e.stable("g", 1)
			in := joinIn("g", "")
			tt.change(&in)
			if out := ready(t, e.cg.Join(in)); !errors.Is(out.Err, ErrInconsistentGroupProtocol) {
				t.Fatalf("got %v, want INCONSISTENT_GROUP_PROTOCOL", out.Err)
			}
		})
	}
}

func TestClassicProtocolChoice(t *testing.T) {
	tests := []struct {
		name  string
		prefs [][]string
		want  string
	}{
		{"one member", [][]string{{"range", "sticky"}}, "range"},
		{"majority first choice", [][]string{{"range", "sticky"}, {"sticky", "range"}, {"sticky"}}, "sticky"},
		{"only common protocol counts", [][]string{{"coop", "range"}, {"range", "coop"}, {"range"}}, "range"},
		{"tie goes to the first joiner's preference", [][]string{{"range", "sticky"}, {"sticky", "range"}}, "range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newClassicEnv(t, nil)
			var chans []<-chan ClassicJoinOutcome
			for _, p := range tt.prefs {
				in := joinIn("g", "")
				in.Protocols = nil
				for _, name := range p {
					in.Protocols = append(in.Protocols, ClassicProtocol{Name: name, Metadata: []byte(name)})
				}
				chans = append(chans, e.cg.Join(in))
			}
			e.clock.Advance(6 * time.Second)
			for _, ch := range chans {
				if out := ready(t, ch); out.Err != nil || out.Protocol != tt.want {
					t.Fatalf("protocol %q (err %v), want %q", out.Protocol, out.Err, tt.want)
				}
			}
		})
	}
}

func TestClassicTimeouts(t *testing.T) {
	tests := []struct {
		session time.Duration
		ok      bool
	}{
		{5999 * time.Millisecond, false},
		{6 * time.Second, true},
		{30 * time.Minute, true},
		{30*time.Minute + time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.session.String(), func(t *testing.T) {
			e := newClassicEnv(t, nil)
			in := joinIn("g", "")
			in.SessionTimeout = tt.session
			ch := e.cg.Join(in)
			if tt.ok {
				waiting(t, ch)
				return
			}
			if out := ready(t, ch); !errors.Is(out.Err, ErrInvalidSessionTimeout) {
				t.Fatalf("got %v, want INVALID_SESSION_TIMEOUT", out.Err)
			}
		})
	}
}

func TestClassicInitialDelay(t *testing.T) {
	e := newClassicEnv(t, nil) // delay 3 s, rebalance timeout 30 s
	a := e.cg.Join(joinIn("g", ""))
	e.clock.Advance(2 * time.Second)
	b := e.cg.Join(joinIn("g", ""))
	e.clock.Advance(time.Second) // the first delay ends; b joined meanwhile
	waiting(t, a)
	waiting(t, b)
	e.clock.Advance(3*time.Second - time.Millisecond)
	waiting(t, a)
	e.clock.Advance(time.Millisecond)
	outA, outB := ready(t, a), ready(t, b)
	if outA.Generation != 1 || outB.Generation != 1 || len(outA.Members) != 2 {
		t.Fatalf("one rebalance for both: %+v %+v", outA, outB)
	}

	// Joiners every 2 s keep extending, but never past the rebalance
	// timeout.
	e2 := newClassicEnv(t, func(c *ClassicConfig) { c.InitialRebalanceDelay = 3 * time.Second })
	in := joinIn("h", "")
	in.RebalanceTimeout = 7 * time.Second
	first := e2.cg.Join(in)
	for i := 0; i < 5; i++ {
		e2.clock.Advance(2 * time.Second)
		select {
		case out := <-first:
			if got := e2.clock.Now().Sub(t0); got > 7*time.Second+2*time.Second {
				t.Fatalf("round ended after %v", got)
			}
			if out.Err != nil {
				t.Fatal(out.Err)
			}
			return
		default:
		}
		e2.cg.Join(in)
	}
	t.Fatal("the initial delay never ended")
}

func TestClassicRoundCompletes(t *testing.T) {
	e := newClassicEnv(t, nil)
	ids := e.stable("g", 2)
	leader, other := ids[0], ids[1]
	c := e.cg.Join(joinIn("g", "")) // a new member starts a round
	if st := e.state("g"); st != ClassicPreparingRebalance {
		t.Fatalf("state %s", st)
	}
	if err := e.cg.Heartbeat(ClassicHeartbeatInput{GroupID: "g", MemberID: other, Generation: 1}); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("heartbeat during the round: %v", err)
	}
	a := e.cg.Join(joinIn("g", leader))
	waiting(t, a)
	// other keeps its session with heartbeats but never rejoins: the
	// rebalance timeout (30 s) removes it.
	for range 3 {
		e.clock.Advance(9 * time.Second)
		if err := e.cg.Heartbeat(ClassicHeartbeatInput{GroupID: "g", MemberID: other, Generation: 1}); !errors.Is(err, ErrRebalanceInProgress) {
			t.Fatalf("heartbeat during the round: %v", err)
		}
	}
	e.clock.Advance(3*time.Second - time.Millisecond)
	waiting(t, a)
	e.clock.Advance(time.Millisecond)
	outA, outC := ready(t, a), ready(t, c)
	if outA.Generation != 2 || outA.LeaderID != leader || len(outA.Members) != 2 || outC.Members != nil || outC.LeaderID != leader {
		t.Fatalf("round end: leader %+v, new member %+v", outA, outC)
	}
	if err := e.cg.Heartbeat(ClassicHeartbeatInput{GroupID: "g", MemberID: other, Generation: 1}); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("removed member's heartbeat: %v", err)
	}
	// In CompletingRebalance a rejoin with the same protocols is given the
	// round's answer again.
	if again := ready(t, e.cg.Join(joinIn("g", outC.MemberID))); again.Generation != 2 {
		t.Fatalf("rejoin in CompletingRebalance: %+v", again)
	}
	ready(t, e.cg.Sync(ClassicSyncInput{GroupID: "g", MemberID: leader, Generation: 2}))
	// The leader's join starts a round; everyone rejoining completes it at
	// once.
	y := e.cg.Join(joinIn("g", leader))
	waiting(t, y)
	x := e.cg.Join(joinIn("g", outC.MemberID))
	if ready(t, x).Generation != 3 || ready(t, y).Generation != 3 {
		t.Fatal("a round where everyone rejoined did not complete at once")
	}
}

func TestClassicMaxSize(t *testing.T) {
	e := newClassicEnv(t, func(c *ClassicConfig) { c.MaxSize = 2 })
	e.stable("g", 2)
	if out := ready(t, e.cg.Join(joinIn("g", ""))); !errors.Is(out.Err, ErrGroupMaxSizeReached) || out.MemberID != "" {
		t.Fatalf("third member: %+v", out)
	}
	// During the initial delay, too.
	e.cg.Join(joinIn("h", ""))
	e.cg.Join(joinIn("h", ""))
	if out := ready(t, e.cg.Join(joinIn("h", ""))); !errors.Is(out.Err, ErrGroupMaxSizeReached) {
		t.Fatalf("third member in a round: %v", out.Err)
	}
}

// max-size in a round: once as many members await the round as the group
// may hold, a member that has not rejoined yet is turned away too, so the
// round cannot end with more members than group.max.size.
func TestClassicMaxSizeRejoinInRound(t *testing.T) {
	e := newClassicEnv(t, func(c *ClassicConfig) { c.MaxSize = 2 })
	first := e.stable("g", 1)[0]
	second, third := e.cg.Join(joinIn("g", "")), e.cg.Join(joinIn("g", ""))
	waiting(t, second)
	waiting(t, third)
	if out := ready(t, e.cg.Join(joinIn("g", first))); !errors.Is(out.Err, ErrGroupMaxSizeReached) {
		t.Fatalf("rejoin of %s with two members awaiting the round: %+v", first, out)
	}
	// Without the first member the round is complete.
	for _, ch := range []<-chan ClassicJoinOutcome{second, third} {
		if out := ready(t, ch); out.Err != nil || out.Generation != 2 {
			t.Fatalf("joiner: %+v", out)
		}
	}
	if d := e.cg.Describe("g"); len(d.Members) != 2 {
		t.Fatalf("%d members, group.max.size is 2", len(d.Members))
	}
	if err := e.cg.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestClassicSync(t *testing.T) {
	e := newClassicEnv(t, nil)
	a := e.cg.Join(joinIn("g", ""))
	b := e.cg.Join(joinIn("g", ""))
	e.clock.Advance(6 * time.Second)
	leader, follower := ready(t, a), ready(t, b)
	fs := e.cg.Sync(ClassicSyncInput{GroupID: "g", MemberID: follower.MemberID, Generation: 1})
	waiting(t, fs) // a follower waits for the leader
	consumer, rng, other := "consumer", "range", "sticky"
	errTests := []struct {
		name string
		in   ClassicSyncInput
		want error
	}{
		{"wrong generation", ClassicSyncInput{GroupID: "g", MemberID: leader.MemberID, Generation: 7}, ErrIllegalGeneration},
		{"unknown member", ClassicSyncInput{GroupID: "g", MemberID: "nobody", Generation: 1}, ErrUnknownMemberID},
		{"unknown group", ClassicSyncInput{GroupID: "nope", MemberID: "nobody", Generation: 1}, ErrUnknownMemberID},
		{"protocol mismatch (v5)", ClassicSyncInput{GroupID: "g", MemberID: leader.MemberID, Generation: 1, ProtocolType: &consumer, Protocol: &other}, ErrInconsistentGroupProtocol},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			if out := ready(t, e.cg.Sync(tt.in)); !errors.Is(out.Err, tt.want) {
				t.Fatalf("got %v, want %v", out.Err, tt.want)
			}
		})
	}
	ls := e.cg.Sync(ClassicSyncInput{GroupID: "g", MemberID: leader.MemberID, Generation: 1, ProtocolType: &consumer, Protocol: &rng,
		Assignments: map[string][]byte{leader.MemberID: []byte("L"), follower.MemberID: []byte("F")}})
	if out := ready(t, ls); out.Err != nil || string(out.Assignment) != "L" || out.Protocol != "range" || out.ProtocolType != "consumer" {
		t.Fatalf("leader sync: %+v", out)
	}
	if out := ready(t, fs); out.Err != nil || string(out.Assignment) != "F" {
		t.Fatalf("follower sync: %+v", out)
	}
	if st := e.state("g"); st != ClassicStable {
		t.Fatalf("state %s, want Stable", st)
	}
	// A late sync in Stable gets the stored assignment at once.
	if out := ready(t, e.cg.Sync(ClassicSyncInput{GroupID: "g", MemberID: follower.MemberID, Generation: 1})); string(out.Assignment) != "F" {
		t.Fatalf("sync in Stable: %+v", out)
	}
	// During PreparingRebalance.
	e.cg.Join(joinIn("g", ""))
	if out := ready(t, e.cg.Sync(ClassicSyncInput{GroupID: "g", MemberID: follower.MemberID, Generation: 1})); !errors.Is(out.Err, ErrRebalanceInProgress) {
		t.Fatalf("sync during a rebalance: %v", out.Err)
	}
}

func TestClassicSyncTimeout(t *testing.T) {
	e := newClassicEnv(t, nil)
	a := e.cg.Join(joinIn("g", ""))
	b := e.cg.Join(joinIn("g", ""))
	e.clock.Advance(6 * time.Second)
	leader, follower := ready(t, a), ready(t, b)
	fs := e.cg.Sync(ClassicSyncInput{GroupID: "g", MemberID: follower.MemberID, Generation: 1})
	// The leader never syncs: after the rebalance timeout it is removed,
	// and the waiting follower is told to rejoin.
	e.clock.Advance(30 * time.Second)
	if out := ready(t, fs); !errors.Is(out.Err, ErrRebalanceInProgress) {
		t.Fatalf("waiting follower: %v", out.Err)
	}
	if err := e.cg.Heartbeat(ClassicHeartbeatInput{GroupID: "g", MemberID: leader.MemberID, Generation: 1}); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("leader after the sync timeout: %v", err)
	}
}

func TestClassicHeartbeat(t *testing.T) {
	e := newClassicEnv(t, nil)
	ids := e.stable("g", 1)
	inst := "i-1"
	tests := []struct {
		name string
		in   ClassicHeartbeatInput
		want error
	}{
		{"current generation", ClassicHeartbeatInput{GroupID: "g", MemberID: ids[0], Generation: 1}, nil},
		{"wrong generation", ClassicHeartbeatInput{GroupID: "g", MemberID: ids[0], Generation: 0}, ErrIllegalGeneration},
		{"unknown member", ClassicHeartbeatInput{GroupID: "g", MemberID: "x", Generation: 1}, ErrUnknownMemberID},
		{"unknown group", ClassicHeartbeatInput{GroupID: "x", MemberID: "x", Generation: 1}, ErrUnknownMemberID},
		{"unknown instance", ClassicHeartbeatInput{GroupID: "g", MemberID: ids[0], InstanceID: &inst, Generation: 1}, ErrUnknownMemberID},
		{"empty group ID", ClassicHeartbeatInput{MemberID: ids[0], Generation: 1}, ErrInvalidGroupID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := e.cg.Heartbeat(tt.in); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestClassicSessionExpiry(t *testing.T) {
	e := newClassicEnv(t, nil)
	ids := e.stable("g", 2) // session timeout 10 s
	hb := ClassicHeartbeatInput{GroupID: "g", MemberID: ids[0], Generation: 1}
	e.clock.Advance(9 * time.Second)
	if err := e.cg.Heartbeat(hb); err != nil || e.state("g") != ClassicStable {
		t.Fatalf("heartbeat within the session: %v", err)
	}
	e.clock.Advance(time.Second - time.Millisecond)
	if st := e.state("g"); st != ClassicStable {
		t.Fatalf("expired early: %s", st)
	}
	// ids[1] never heartbeated: it expires 10 s after its sync, and a
	// round starts; the live member is told to rejoin.
	e.clock.Advance(time.Millisecond)
	if err := e.cg.Heartbeat(hb); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("heartbeat after the expiry: %v", err)
	}
	ch := e.cg.Join(joinIn("g", ids[0]))
	out := ready(t, ch)
	if out.Generation != 2 || len(out.Members) != 1 {
		t.Fatalf("after the expiry: %+v", out)
	}
}

func TestClassicLeave(t *testing.T) {
	e := newClassicEnv(t, nil)
	ids := e.stable("g", 3)
	errs, err := e.cg.Leave("g", []ClassicLeavingMember{{MemberID: ids[1]}, {MemberID: "nobody"}, {MemberID: ids[2]}})
	if err != nil || errs[0] != nil || !errors.Is(errs[1], ErrUnknownMemberID) || errs[2] != nil {
		t.Fatalf("batch leave: %v %v", errs, err)
	}
	if st := e.state("g"); st != ClassicPreparingRebalance {
		t.Fatalf("state after leave: %s", st)
	}
	ready(t, e.cg.Join(joinIn("g", ids[0])))
	if _, err := e.cg.Leave("g", []ClassicLeavingMember{{MemberID: ids[0]}}); err != nil {
		t.Fatal(err)
	}
	if st, gen := e.state("g"), e.generation("g"); st != ClassicEmpty || gen != 3 {
		t.Fatalf("after the last leave: %s generation %d, want Empty 3", st, gen)
	}
	if _, err := e.cg.Leave("nope", []ClassicLeavingMember{{MemberID: "x"}}); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("leave of an unknown group: %v", err)
	}
}

// staticJoin is joinIn with a group instance ID.
func staticJoin(group, member, instance string) ClassicJoinInput {
	in := joinIn(group, member)
	in.InstanceID = &instance
	in.RequireKnownMemberID = true // static members skip MEMBER_ID_REQUIRED
	return in
}

func TestClassicStaticRejoin(t *testing.T) {
	e := newClassicEnv(t, nil)
	a := e.cg.Join(staticJoin("g", "", "ia"))
	b := e.cg.Join(staticJoin("g", "", "ib"))
	e.clock.Advance(6 * time.Second)
	oa, ob := ready(t, a), ready(t, b)
	if oa.Err != nil || oa.MemberID != "ia-1" {
		t.Fatalf("static join: %+v", oa)
	}
	ready(t, e.cg.Sync(ClassicSyncInput{GroupID: "g", MemberID: oa.MemberID, Generation: 1,
		Assignments: map[string][]byte{oa.MemberID: []byte("A"), ob.MemberID: []byte("B")}}))
	// ib restarts: empty member ID, same instance ID, within its session.
	e.clock.Advance(5 * time.Second)
	out := ready(t, e.cg.Join(staticJoin("g", "", "ib")))
	if out.Err != nil || out.Generation != 1 || out.MemberID == ob.MemberID || out.Members != nil {
		t.Fatalf("static rejoin: %+v", out)
	}
	if st := e.state("g"); st != ClassicStable {
		t.Fatalf("static rejoin caused a rebalance: %s", st)
	}
	if s := ready(t, e.cg.Sync(ClassicSyncInput{GroupID: "g", MemberID: out.MemberID, Generation: 1})); string(s.Assignment) != "B" {
		t.Fatalf("assignment after the rejoin: %q", s.Assignment)
	}
	// static-fenced: the old member ID with the instance ID.
	ib := "ib"
	if err := e.cg.Heartbeat(ClassicHeartbeatInput{GroupID: "g", MemberID: ob.MemberID, InstanceID: &ib, Generation: 1}); !errors.Is(err, ErrFencedInstanceID) {
		t.Fatalf("old member ID: %v", err)
	}
	// The leader restarting gets the member list but must not assign.
	lo := ready(t, e.cg.Join(staticJoin("g", "", "ia")))
	if !lo.SkipAssignment || len(lo.Members) != 2 || lo.LeaderID != lo.MemberID || lo.Generation != 1 {
		t.Fatalf("static leader rejoin: %+v", lo)
	}
}

func TestClassicStaticLeave(t *testing.T) {
	e := newClassicEnv(t, nil)
	a := e.cg.Join(staticJoin("g", "", "ia"))
	e.clock.Advance(3 * time.Second)
	oa := ready(t, a)
	ready(t, e.cg.Sync(ClassicSyncInput{GroupID: "g", MemberID: oa.MemberID, Generation: 1}))
	ia, ix := "ia", "ix"
	errs, _ := e.cg.Leave("g", []ClassicLeavingMember{{InstanceID: &ix}, {MemberID: "ia-old", InstanceID: &ia}, {InstanceID: &ia}})
	if !errors.Is(errs[0], ErrUnknownMemberID) || !errors.Is(errs[1], ErrFencedInstanceID) || errs[2] != nil {
		t.Fatalf("leave by instance ID: %v", errs)
	}
	if st := e.state("g"); st != ClassicEmpty {
		t.Fatalf("state %s, want Empty", st)
	}
}

func TestClassicConcurrentJoins(t *testing.T) {
	e := newClassicEnv(t, nil)
	var wg sync.WaitGroup
	chans := make([]<-chan ClassicJoinOutcome, 20)
	for i := range chans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			chans[i] = e.cg.Join(joinIn("g", ""))
		}()
	}
	wg.Wait()
	e.clock.Advance(6 * time.Second)
	seen := map[string]bool{}
	for _, ch := range chans {
		out := ready(t, ch)
		if out.Err != nil || out.Generation != 1 || seen[out.MemberID] {
			t.Fatalf("%+v", out)
		}
		seen[out.MemberID] = true
	}
}

func TestClassicOneKind(t *testing.T) {
	e := newClassicEnv(t, nil)
	if err := e.reg.Claim("sg", TypeShare); err != nil {
		t.Fatal(err)
	}
	if out := ready(t, e.cg.Join(joinIn("sg", ""))); !errors.Is(out.Err, ErrInconsistentGroupProtocol) {
		t.Fatalf("join on a share group: %v", out.Err)
	}
	if _, err := e.cg.Commit(CommitInput{GroupID: "sg", Generation: -1}); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("commit on a share group: %v", err)
	}
	if _, err := e.cg.Fetch("sg", nil); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("fetch on a share group: %v", err)
	}
	if _, err := e.cg.DeleteOffsets("sg", nil); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("offset delete on a share group: %v", err)
	}
	if d := e.cg.Describe("sg"); !errors.Is(d.Err, ErrGroupIDNotFound) || d.State != ClassicDead {
		t.Fatalf("describe a share group: %+v", d)
	}
	e.stable("cg", 1)
	if tp, _ := e.reg.TypeOf("cg"); tp != TypeClassic {
		t.Fatalf("registry has %v for a classic group", tp)
	}
}

func TestClassicDescribeListDelete(t *testing.T) {
	e := newClassicEnv(t, nil)
	ids := e.stable("g", 2)
	d := e.cg.Describe("g")
	if d.Err != nil || d.State != ClassicStable || d.ProtocolType != "consumer" || d.Protocol != "range" || len(d.Members) != 2 ||
		string(d.Members[1].Assignment) != "a-"+ids[1] || len(d.Members[0].Metadata) == 0 {
		t.Fatalf("describe: %+v", d)
	}
	if d := e.cg.Describe("nope"); !errors.Is(d.Err, ErrGroupIDNotFound) || d.State != ClassicDead {
		t.Fatalf("describe unknown: %+v", d)
	}
	if err := e.cg.Delete("g"); !errors.Is(err, ErrNonEmptyGroup) {
		t.Fatalf("delete with members: %v", err)
	}
	e.cg.Leave("g", []ClassicLeavingMember{{MemberID: ids[0]}, {MemberID: ids[1]}})
	if l := e.cg.List(); len(l) != 1 || l[0] != (ClassicListedGroup{GroupID: "g", ProtocolType: "consumer", State: ClassicEmpty}) {
		t.Fatalf("list: %+v", l)
	}
	if err := e.cg.Delete("g"); err != nil {
		t.Fatal(err)
	}
	if err := e.cg.Delete("g"); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	if _, ok := e.reg.TypeOf("g"); ok {
		t.Fatal("deleted group still in the registry")
	}
}

func TestConsumerSubscriptionTopics(t *testing.T) {
	if got, ok := consumerSubscriptionTopics(subscription("a", "bb")); !ok || len(got) != 2 || got[1] != "bb" {
		t.Fatalf("got %v %v", got, ok)
	}
	for _, bad := range [][]byte{nil, {0, 0, 0, 0, 0, 9}, {0, 0, 0, 0, 0, 1, 0, 5, 'a'}} {
		if _, ok := consumerSubscriptionTopics(bad); ok {
			t.Fatalf("%x parsed", bad)
		}
	}
}
