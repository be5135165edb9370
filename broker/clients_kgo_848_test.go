package broker_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/locktimer"
)

// KIP-848 consumer groups driven by kgo (kgo.ServerSideBalancer: the
// broker assigns, members heartbeat with ConsumerGroupHeartbeat). The
// broker runs on an OffsetClock: real time, so fetch waits and heartbeats
// pass on their own, which the test jumps forward for session timeouts.
// The heartbeat interval is 100 ms so rebalances settle fast. Every wait is
// bounded by the test context; nothing sleeps.

// holders tracks which member the clients themselves believe owns each
// partition, from kgo's assign, revoke and lose callbacks. A partition
// assigned to a member while another still holds it breaks
// 848-revoke-first.
type holders struct {
	mu         sync.Mutex
	owner      map[int32]string
	violations []string
}

func (h *holders) assigned(member string, ps map[string][]int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range ps["t"] {
		if o, ok := h.owner[p]; ok && o != member {
			h.violations = append(h.violations, fmt.Sprintf("partition %d assigned to %s while %s holds it", p, member, o))
		}
		h.owner[p] = member
	}
}

func (h *holders) released(member string, ps map[string][]int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range ps["t"] {
		if h.owner[p] == member {
			delete(h.owner, p)
		}
	}
}

func (h *holders) snapshot() (map[int32]string, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.owner), slices.Clone(h.violations)
}

// member848 is one kgo consumer of the group with its polled records.
type member848 struct {
	name       string
	cl         *kgo.Client
	heartbeats atomic.Int64 // ConsumerGroupHeartbeat responses read
	mu         sync.Mutex
	records    []*kgo.Record
	done       chan struct{}
}

func (m *member848) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 68 && err == nil {
		m.heartbeats.Add(1)
	}
}

func (m *member848) polled() []*kgo.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.records)
}

func startMember848(t *testing.T, addr, name string, h *holders, balancer kgo.GroupBalancer) *member848 {
	t.Helper()
	m := &member848{name: name, done: make(chan struct{})}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ClientID(name),
		kgo.ConsumerGroup("g848"),
		kgo.ConsumeTopics("t"),
		kgo.ServerSideBalancer(),
		kgo.Balancers(balancer),
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.WithHooks(m),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { h.assigned(name, ps) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { h.released(name, ps) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { h.released(name, ps) }),
	)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	go func() {
		defer close(m.done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			m.mu.Lock()
			m.records = append(m.records, fs.Records()...)
			m.mu.Unlock()
		}
	}()
	t.Cleanup(m.close)
	return m
}

// close leaves the group (kgo sends epoch -1) and waits for the poll loop.
func (m *member848) close() {
	m.cl.Close()
	<-m.done
}

// awaitStable848 waits until ConsumerGroupDescribe shows the group Stable
// with exactly the named members, every partition of t in exactly one
// member's assignment, and the clients' own view (h) agreeing with it. It
// returns partitions per member.
func awaitStable848(t *testing.T, ctx context.Context, adm *kgo.Client, h *holders, members ...string) map[string]int {
	t.Helper()
	var last string
	for {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"g848"}
		resp, err := req.RequestWith(ctx, adm)
		if err != nil {
			t.Fatalf("describe: %v (last seen: %s)", err, last)
		}
		d := resp.Groups[0]
		owners := map[int32]string{}
		perMember := map[string]int{}
		twice := false
		var names []string
		for _, m := range d.Members {
			names = append(names, m.ClientID)
			for _, tp := range m.Assignment.TopicPartitions {
				for _, p := range tp.Partitions {
					if _, dup := owners[p]; dup {
						twice = true
					}
					owners[p] = m.ClientID
					perMember[m.ClientID]++
				}
			}
		}
		slices.Sort(names)
		clientView, violations := h.snapshot()
		if len(violations) > 0 {
			t.Fatalf("revoke-first broken: %v", violations)
		}
		if twice {
			t.Fatalf("a partition is in two members' assignments: %+v", d.Members)
		}
		if d.State == "Stable" && slices.Equal(names, members) && len(owners) == 6 && maps.Equal(owners, clientView) {
			return perMember
		}
		last = fmt.Sprintf("state %s members %v broker view %v client view %v", d.State, names, owners, clientView)
		select {
		case <-ctx.Done():
			t.Fatalf("group never settled with members %v; last seen: %s", members, last)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// awaitRecords waits until m has polled n records.
func awaitRecords(t *testing.T, ctx context.Context, m *member848, n int) []*kgo.Record {
	t.Helper()
	for {
		if rs := m.polled(); len(rs) >= n {
			return rs
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s polled %d records, want %d", m.name, len(m.polled()), n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// awaitHeartbeat waits until every member read one more heartbeat answer.
func awaitHeartbeat(t *testing.T, ctx context.Context, ms ...*member848) {
	t.Helper()
	base := make([]int64, len(ms))
	for i, m := range ms {
		base[i] = m.heartbeats.Load()
	}
	for i, m := range ms {
		for m.heartbeats.Load() <= base[i] {
			select {
			case <-ctx.Done():
				t.Fatalf("%s sent no heartbeat", m.name)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

// Three kgo members join and leave a KIP-848 group over six partitions;
// after every rebalance each partition is owned by exactly one member, as
// the broker and the clients both see it (848-revoke-first). A silent
// member is removed by its session timeout (848-timeouts), and offsets
// committed with member epochs are resumed by a new member. kgo asks for
// the uniform assignor with its sticky balancers and range with its range
// balancer.
func TestKgoConsumerGroup848JoinLeaveResume(t *testing.T) {
	for _, tc := range []struct {
		assignor string
		balancer kgo.GroupBalancer
	}{
		{"uniform", kgo.CooperativeStickyBalancer()},
		{"range", kgo.RangeBalancer()},
	} {
		t.Run(tc.assignor, func(t *testing.T) { testKgo848JoinLeaveResume(t, tc.assignor, tc.balancer) })
	}
}

func testKgo848JoinLeaveResume(t *testing.T, assignor string, balancer kgo.GroupBalancer) {
	clock := locktimer.NewOffsetClock()
	_, addr := startBroker(t, broker.Config{Clock: clock, Props: map[string]string{
		"group.consumer.heartbeat.interval.ms":     "100",
		"group.consumer.min.heartbeat.interval.ms": "10",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	mustCreate(t, ctx, kadm.NewClient(adm), "t", 6, nil)
	produce := func(perPartition int) {
		var rs []*kgo.Record
		for p := range int32(6) {
			for i := range perPartition {
				rs = append(rs, &kgo.Record{Topic: "t", Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i)})
			}
		}
		if err := adm.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	produce(10)
	h := &holders{owner: map[int32]string{}}

	// One member takes everything, reads it all and commits with its epoch.
	m1 := startMember848(t, addr, "m1", h, balancer)
	if got := awaitStable848(t, ctx, adm, h, "m1"); got["m1"] != 6 {
		t.Fatalf("m1 alone: %v", got)
	}
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{"g848"}
	if resp, err := req.RequestWith(ctx, adm); err != nil || resp.Groups[0].AssignorName != assignor {
		t.Fatalf("assignor: %v %+v", err, resp)
	}
	awaitRecords(t, ctx, m1, 60)
	if err := m1.cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	want := map[int32]int64{0: 10, 1: 10, 2: 10, 3: 10, 4: 10, 5: 10}
	if got := committedOffsets(t, ctx, kadm.NewClient(adm), "g848", "t"); !maps.Equal(got, want) {
		t.Fatalf("committed %v, want %v", got, want)
	}

	// Join, join, leave.
	m2 := startMember848(t, addr, "m2", h, balancer)
	if got := awaitStable848(t, ctx, adm, h, "m1", "m2"); got["m1"] != 3 || got["m2"] != 3 {
		t.Fatalf("two members: %v", got)
	}
	m3 := startMember848(t, addr, "m3", h, balancer)
	if got := awaitStable848(t, ctx, adm, h, "m1", "m2", "m3"); got["m1"] != 2 || got["m2"] != 2 || got["m3"] != 2 {
		t.Fatalf("three members: %v", got)
	}
	m3.close()
	if got := awaitStable848(t, ctx, adm, h, "m1", "m2"); got["m1"] != 3 || got["m2"] != 3 {
		t.Fatalf("after m3 left: %v", got)
	}

	// A member that stops heartbeating without leaving: the broker clock
	// jumps 50 s in 10 s steps, the kgo members heartbeating after each.
	silent := &cgMember{id: "silent"}
	for {
		if resp := cgBeat(t, ctx, adm, "g848", silent); resp.ErrorCode != 0 {
			t.Fatalf("silent member heartbeat: code %d", resp.ErrorCode)
		}
		if ownedCount(silent) == 2 && silent.epoch > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the raw member never received its share")
		case <-time.After(20 * time.Millisecond):
		}
	}
	for range 5 {
		clock.Advance(10 * time.Second)
		awaitHeartbeat(t, ctx, m1, m2)
	}
	if got := awaitStable848(t, ctx, adm, h, "m1", "m2"); got["m1"] != 3 || got["m2"] != 3 {
		t.Fatalf("after the silent member timed out: %v", got)
	}
	if len(m1.polled())+len(m2.polled()) != 60 {
		t.Fatalf("records redelivered without new commits: m1 %d, m2 %d", len(m1.polled()), len(m2.polled()))
	}

	// Everyone leaves; a new member resumes from the commits.
	m1.close()
	m2.close()
	produce(1)
	m4 := startMember848(t, addr, "m4", h, balancer)
	awaitStable848(t, ctx, adm, h, "m4")
	rs := awaitRecords(t, ctx, m4, 6)
	for _, r := range rs {
		if r.Offset != 10 {
			t.Fatalf("m4 polled %s-%d@%d, want only offset 10", r.Topic, r.Partition, r.Offset)
		}
	}
	if len(rs) != 6 {
		t.Fatalf("m4 polled %d records, want 6", len(rs))
	}
}

// A kgo member subscribing by regex (SubscribedTopicRegex) gets exactly
// the matching topics, including one created while it runs.
func TestKgoConsumerGroup848Regex(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{
		"group.consumer.heartbeat.interval.ms":     "100",
		"group.consumer.min.heartbeat.interval.ms": "10",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	kadmin := kadm.NewClient(adm)
	for _, topic := range []string{"r-1", "r-2", "other"} {
		mustCreate(t, ctx, kadmin, topic, 1, nil)
		if err := adm.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(topic)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]int{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("g-regex"), kgo.ConsumeRegex(), kgo.ConsumeTopics("^r-.*"),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.MetadataMinAge(50*time.Millisecond),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	await := func(want map[string]int) {
		t.Helper()
		for {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("polled %v, want %v", got, want)
			}
			fs.EachRecord(func(r *kgo.Record) { got[r.Topic]++ })
			if maps.Equal(got, want) {
				return
			}
		}
	}
	await(map[string]int{"r-1": 1, "r-2": 1})
	mustCreate(t, ctx, kadmin, "r-3", 1, nil)
	if err := adm.ProduceSync(ctx, &kgo.Record{Topic: "r-3", Value: []byte("r-3")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	await(map[string]int{"r-1": 1, "r-2": 1, "r-3": 1})

	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{"g-regex"}
	resp, err := req.RequestWith(ctx, adm)
	if err != nil || len(resp.Groups) != 1 || len(resp.Groups[0].Members) != 1 || resp.Groups[0].Members[0].SubscribedTopicRegex == nil {
		t.Fatalf("describe: %v %+v", err, resp)
	}
}
