package broker_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

// Classic consumer groups driven by real clients on the real clock, with
// group.initial.rebalance.delay.ms=0 so a lone consumer need not wait.
// Every wait is bounded by a context deadline; nothing sleeps.

const groupTestTimeout = 60 * time.Second

// recKey names a record by partition and offset.
type recKey struct {
	partition int32
	offset    int64
}

func groupBroker(t *testing.T, topic string, partitions int32, records int) (string, context.Context, *kgo.Client, *kadm.Client) {
	t.Helper()
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"group.initial.rebalance.delay.ms": "0"}})
	ctx, cancel := context.WithTimeout(context.Background(), groupTestTimeout)
	t.Cleanup(cancel)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	mustCreate(t, ctx, adm, topic, partitions, nil)
	var rs []*kgo.Record
	for i := range records {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(i) % partitions, Value: fmt.Appendf(nil, "v%d", i)})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return addr, ctx, cl, adm
}

// committedOffsets reads group's committed offsets of topic.
func committedOffsets(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	resps, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	out := map[int32]int64{}
	for p, o := range resps[topic] {
		if o.Err != nil {
			t.Fatalf("fetch offsets p%d: %v", p, o.Err)
		}
		out[p] = o.At
	}
	return out
}

// awaitCommitted polls, bounded by ctx, until group's commits equal want.
func awaitCommitted(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string, want map[int32]int64) {
	t.Helper()
	for {
		got := committedOffsets(t, ctx, adm, group, topic)
		if maps.Equal(got, want) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("commits %v, want %v", got, want)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// resumeRun is what the first consumer of a resume test saw and marked.
type resumeRun struct {
	seen   map[recKey]bool
	marked map[int32]int64 // per partition: the offset after the last marked record
}

// markPoint returns, per partition, the offset after the first half of
// what the partition delivered in seen: the commit the test marks for.
func markPoint(seen map[recKey]bool) map[int32]int64 {
	count := map[int32]int64{}
	for k := range seen {
		count[k.partition]++
	}
	marks := map[int32]int64{}
	for p, n := range count {
		marks[p] = n / 2 // records 0..n/2-1 of each partition are done
	}
	return marks
}

// checkResume checks what the next member saw after the first closed
// without a final commit: it started exactly at the last commit, every
// record was seen at least once, and the duplicates are exactly the first
// member's records at or after the last commit.
func checkResume(t *testing.T, total, perPartition int, first resumeRun, committed map[int32]int64, second map[recKey]bool) {
	t.Helper()
	if !maps.Equal(committed, first.marked) {
		t.Fatalf("commits after close %v, want the marked %v: a final commit happened", committed, first.marked)
	}
	dups := 0
	for p := range int32(total / perPartition) {
		for off := range int64(perPartition) {
			k := recKey{p, off}
			s1, s2 := first.seen[k], second[k]
			switch {
			case !s1 && !s2:
				t.Fatalf("p%d@%d never seen", p, off)
			case s2 && off < committed[p]:
				t.Fatalf("p%d@%d redelivered though committed (commit %d)", p, off, committed[p])
			case s1 && off >= committed[p] && !s2:
				t.Fatalf("p%d@%d seen by the first member after its last commit but not redelivered", p, off)
			case s1 && s2:
				dups++
			}
		}
	}
	if dups == 0 {
		t.Fatal("no duplicates: the first member consumed nothing past its last commit, so the test proved nothing")
	}
	t.Logf("%d records, %d seen twice (after the last commit)", total, dups)
}

// TestKgoGroupResumesFromLastCommit: a kgo consumer group member with
// auto-commit (of marked records) consumes part of a topic and closes
// without a final commit; the next member resumes at the last commit.
func TestKgoGroupResumesFromLastCommit(t *testing.T) {
	const topic, group, parts, per = "resume-kgo", "g-kgo", 3, 30
	addr, ctx, _, adm := groupBroker(t, topic, parts, parts*per)

	c1, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.AutoCommitMarks(), kgo.AutoCommitInterval(100*time.Millisecond),
		kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) {}), // no commit on close
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	first := resumeRun{seen: map[recKey]bool{}}
	byKey := map[recKey]*kgo.Record{}
	poll := func(upTo int) {
		for len(first.seen) < upTo {
			fs := c1.PollRecords(ctx, 10)
			if ctx.Err() != nil {
				t.Fatalf("first member saw %d records before the deadline", len(first.seen))
			}
			fs.EachRecord(func(r *kgo.Record) {
				k := recKey{r.Partition, r.Offset}
				first.seen[k], byKey[k] = true, r
			})
		}
	}
	poll(30)
	first.marked = markPoint(first.seen)
	for p, at := range first.marked {
		if at > 0 {
			c1.MarkCommitRecords(byKey[recKey{p, at - 1}])
		} else {
			delete(first.marked, p)
		}
	}
	awaitCommitted(t, ctx, adm, group, topic, first.marked) // the auto-commit loop did it
	poll(60)
	c1.Close()

	committed := committedOffsets(t, ctx, adm, group, topic)
	want := 0
	for p := range int32(parts) {
		want += per - int(committed[p])
	}
	c2, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	second := map[recKey]bool{}
	for len(second) < want {
		fs := c2.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("second member saw %d of %d records before the deadline", len(second), want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			k := recKey{r.Partition, r.Offset}
			if second[k] {
				t.Fatalf("p%d@%d delivered twice to the second member", k.partition, k.offset)
			}
			second[k] = true
		})
	}
	checkResume(t, parts*per, per, first, committed, second)
}

// saramaHandler hands each claimed message, with its session, to the test.
type saramaHandler struct{ msgs chan saramaMsg }

type saramaMsg struct {
	sess sarama.ConsumerGroupSession
	msg  *sarama.ConsumerMessage
}

func (saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			select {
			case h.msgs <- saramaMsg{sess, m}:
			case <-sess.Context().Done():
				return nil
			}
		case <-sess.Context().Done():
			return nil
		}
	}
}

// saramaGroup runs a sarama consumer group member until stop is called,
// which closes it and waits for it.
func saramaGroup(t *testing.T, addr, group, topic string) (msgs <-chan saramaMsg, stop func()) {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.ClientID = "sarama-group"
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = true
	cfg.Consumer.Offsets.AutoCommit.Interval = 20 * time.Millisecond
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatalf("NewConsumerGroup: %v", err)
	}
	h := saramaHandler{msgs: make(chan saramaMsg)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil {
				return
			}
		}
	}()
	go func() {
		for err := range cg.Errors() {
			t.Logf("sarama group error: %v", err)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			if err := cg.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return h.msgs, stop
}

// TestSaramaGroupResumesFromLastCommit is the kgo test with a sarama
// consumer group: auto-commit of marked messages, a member that closes
// with unmarked messages consumed, and a next member that resumes at the
// last commit.
func TestSaramaGroupResumesFromLastCommit(t *testing.T) {
	const topic, group, parts, per = "resume-sarama", "g-sarama", 3, 30
	addr, ctx, _, adm := groupBroker(t, topic, parts, parts*per)

	msgs, stop := saramaGroup(t, addr, group, topic)
	first := resumeRun{seen: map[recKey]bool{}}
	byKey := map[recKey]saramaMsg{}
	recv := func(upTo int) {
		for len(first.seen) < upTo {
			select {
			case m := <-msgs:
				k := recKey{m.msg.Partition, m.msg.Offset}
				first.seen[k], byKey[k] = true, m
			case <-ctx.Done():
				t.Fatalf("first member saw %d records before the deadline", len(first.seen))
			}
		}
	}
	recv(30)
	first.marked = markPoint(first.seen)
	for p, at := range first.marked {
		if at > 0 {
			m := byKey[recKey{p, at - 1}]
			m.sess.MarkMessage(m.msg, "")
		} else {
			delete(first.marked, p)
		}
	}
	awaitCommitted(t, ctx, adm, group, topic, first.marked)
	recv(60)
	stop()

	committed := committedOffsets(t, ctx, adm, group, topic)
	want := 0
	for p := range int32(parts) {
		want += per - int(committed[p])
	}
	msgs2, stop2 := saramaGroup(t, addr, group, topic)
	defer stop2()
	second := map[recKey]bool{}
	for len(second) < want {
		select {
		case m := <-msgs2:
			k := recKey{m.msg.Partition, m.msg.Offset}
			if second[k] {
				t.Fatalf("p%d@%d delivered twice to the second member", k.partition, k.offset)
			}
			second[k] = true
		case <-ctx.Done():
			t.Fatalf("second member saw %d of %d records before the deadline", len(second), want)
		}
	}
	checkResume(t, parts*per, per, first, committed, second)
}

// groupView is the broker's view of a classic group: its state and each
// member's assigned partitions of one topic.
type groupView struct {
	state  string
	owners map[int32][]string // partition → members that hold it
	byID   map[string][]int32
}

func describeView(t *testing.T, ctx context.Context, cl *kgo.Client, group, topic string) groupView {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	g := resp.Groups[0]
	v := groupView{state: g.State, owners: map[int32][]string{}, byID: map[string][]int32{}}
	for _, m := range g.Members {
		var a kmsg.ConsumerMemberAssignment
		if len(m.MemberAssignment) > 0 {
			if err := a.ReadFrom(m.MemberAssignment); err != nil {
				t.Fatalf("member %s: assignment: %v", m.MemberID, err)
			}
		}
		v.byID[m.MemberID] = nil
		for _, at := range a.Topics {
			if at.Topic != topic {
				continue
			}
			for _, p := range at.Partitions {
				v.owners[p] = append(v.owners[p], m.MemberID)
				v.byID[m.MemberID] = append(v.byID[m.MemberID], p)
			}
		}
	}
	return v
}

// member is one kgo group member with its own view of what it owns.
type member struct {
	cl    *kgo.Client
	mu    sync.Mutex
	owned map[int32]bool
	moves int // assignment callbacks after the first
}

func startMember(t *testing.T, addr, group, topic string, opts ...kgo.Opt) *member {
	t.Helper()
	m := &member{owned: map[int32]bool{}}
	first := true
	update := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if !first || !add {
				m.moves++
			}
			first = false
			for _, p := range ps[topic] {
				if add {
					m.owned[p] = true
				} else {
					delete(m.owned, p)
				}
			}
		}
	}
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.HeartbeatInterval(100 * time.Millisecond), kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.OnPartitionsAssigned(update(true)), kgo.OnPartitionsRevoked(update(false)), kgo.OnPartitionsLost(update(false))}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	// Poll in the background so the client runs its group loop; the
	// records themselves do not matter here.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	t.Cleanup(func() { cancel(); <-done; cl.Close() })
	return m
}

func (m *member) ownedSorted() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.owned))
}

// awaitBalanced polls, bounded by ctx, until the broker shows group Stable
// with exactly members, every partition owned by exactly one of them, and
// each member's own view agrees. At every poll no partition may be owned
// by two members, whatever the state.
func awaitBalanced(t *testing.T, ctx context.Context, cl *kgo.Client, group, topic string, parts int32, members map[string]*member) groupView {
	t.Helper()
	for {
		v := describeView(t, ctx, cl, group, topic)
		for p, owners := range v.owners {
			if len(owners) > 1 {
				t.Fatalf("p%d owned by %v at once", p, owners)
			}
		}
		ok := v.state == "Stable" && len(v.byID) == len(members) && len(v.owners) == int(parts)
		for id, m := range members {
			got, want := m.ownedSorted(), slices.Sorted(slices.Values(v.byID[id]))
			ok = ok && slices.Equal(got, want)
		}
		if ok {
			return v
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group never balanced: broker %+v", v)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// memberID is a kgo member's ID as the group knows it.
func memberID(m *member) string {
	id, _ := m.cl.GroupMetadata()
	return id
}

// TestKgoGroupJoinLeaveSixPartitions: three kgo members join, then leave,
// a classic group consuming six partitions; after every rebalance each
// partition is owned by exactly one member (round-completes, leave).
func TestKgoGroupJoinLeaveSixPartitions(t *testing.T) {
	const topic, group, parts = "six", "g-six", 6
	addr, ctx, cl, _ := groupBroker(t, topic, parts, 60)
	live := map[string]*member{}
	var order []*member
	add := func() {
		m := startMember(t, addr, group, topic)
		order = append(order, m)
		// The member ID is known once the member joined; wait for it.
		for memberID(m) == "" || slices.Contains(slices.Collect(maps.Keys(live)), memberID(m)) {
			select {
			case <-ctx.Done():
				t.Fatal("member never joined")
			case <-time.After(10 * time.Millisecond):
			}
		}
		live = map[string]*member{}
		for _, m := range order {
			live[memberID(m)] = m
		}
		awaitBalanced(t, ctx, cl, group, topic, parts, live)
	}
	remove := func(i int) {
		m := order[i]
		id := memberID(m)
		m.cl.Close() // leaves the group
		order = slices.Delete(order, i, i+1)
		delete(live, id)
		if len(live) > 0 {
			awaitBalanced(t, ctx, cl, group, topic, parts, live)
		}
	}
	add()
	add()
	add()
	v := awaitBalanced(t, ctx, cl, group, topic, parts, live)
	for id, ps := range v.byID {
		if len(ps) != 2 {
			t.Fatalf("member %s owns %v; three members share six partitions two each", id, ps)
		}
	}
	remove(1)
	remove(0)
	remove(0)
	if v := describeView(t, ctx, cl, group, topic); v.state != "Empty" || len(v.byID) != 0 {
		t.Fatalf("after every member left: %+v", v)
	}
}

// TestKgoStaticMemberRestart: static members (kgo InstanceID) restart
// within their session timeout without a rebalance: the generation stays,
// the other member's assignment never moves (static-rejoin), the leader's
// restart included (KIP-814's SkipAssignment).
//
// The members use the range balancer: a restarted kgo leader recomputes
// the plan and rejoins if its own part differs from the assignment the
// group kept, and a cooperative-sticky plan made from fresh subscriptions
// (which list no owned partitions) differs, so it would rebalance against
// Kafka as well. Range gives the same plan whatever the new member IDs,
// since static IDs start with the instance ID.
func TestKgoStaticMemberRestart(t *testing.T) {
	const topic, group, parts = "static", "g-static", 4
	addr, ctx, cl, _ := groupBroker(t, topic, parts, 8)
	rng := kgo.Balancers(kgo.RangeBalancer())
	a := startMember(t, addr, group, topic, rng, kgo.InstanceID("a"))
	awaitMember := func(m *member) {
		for memberID(m) == "" {
			select {
			case <-ctx.Done():
				t.Fatal("member never joined")
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	awaitMember(a)
	awaitBalanced(t, ctx, cl, group, topic, parts, map[string]*member{memberID(a): a})
	b := startMember(t, addr, group, topic, rng, kgo.InstanceID("b"))
	awaitMember(b)
	awaitBalanced(t, ctx, cl, group, topic, parts, map[string]*member{memberID(a): a, memberID(b): b})
	_, gen := a.cl.GroupMetadata()
	if _, genB := b.cl.GroupMetadata(); genB != gen {
		t.Fatalf("members at generations %d and %d", gen, genB)
	}
	a.mu.Lock()
	aMoves := a.moves
	a.mu.Unlock()

	restart := func(old *member, instance string, other *member) *member {
		oldID, oldOwned := memberID(old), old.ownedSorted()
		old.cl.Close() // a static member does not leave
		if v := describeView(t, ctx, cl, group, topic); v.state != "Stable" || len(v.byID) != 2 {
			t.Fatalf("after %s closed: %+v", instance, v)
		}
		n := startMember(t, addr, group, topic, rng, kgo.InstanceID(instance))
		awaitMember(n)
		v := awaitBalanced(t, ctx, cl, group, topic, parts, map[string]*member{memberID(n): n, memberID(other): other})
		if memberID(n) == oldID {
			t.Fatalf("restarted %s kept member ID %s", instance, oldID)
		}
		if _, g := n.cl.GroupMetadata(); g != gen {
			t.Fatalf("restarted %s at generation %d, want %d (no rebalance)", instance, g, gen)
		}
		if _, g := other.cl.GroupMetadata(); g != gen {
			t.Fatalf("the other member moved to generation %d, want %d", g, gen)
		}
		if got := slices.Sorted(slices.Values(v.byID[memberID(n)])); !slices.Equal(got, oldOwned) {
			t.Fatalf("restarted %s owns %v, had %v", instance, got, oldOwned)
		}
		return n
	}
	b = restart(b, "b", a)
	a.mu.Lock()
	if a.moves != aMoves {
		t.Fatalf("member a's assignment moved %d times during b's restart", a.moves-aMoves)
	}
	a.mu.Unlock()
	restart(a, "a", b) // the leader
}
