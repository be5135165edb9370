package broker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/httpapi"
	"github.com/sharebroker/sharebroker/internal/testbroker"
)

// kgoNodes and kgoSpread are the cluster and the topic of the kgo test.
const kgoNodes, kgoSpread = 3, 6

// Rules: leaders-spread, not-leader, coordinator-by-key: kgo against three
// nodes finds the leaders of a 6-partition topic on all three, produces
// to the leaders, consumes every record once in a consumer group whose
// coordinator may be any node, commits, and a share group consumes and
// accepts everything, fetching from every leader.
func TestNodesKgoProduceConsumeShare(t *testing.T) {
	b, addr := startBroker(t, broker.Config{Nodes: kgoNodes})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic, n = "spread", 600

	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, kgoSpread, kgoNodes, nil, topic); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 3 {
		t.Fatalf("brokers %v", md.Brokers)
	}
	model, _ := cluster.New(0, kgoNodes)
	model.AddPartitions(topic, 0, kgoSpread)
	leaders := map[int32]int{}
	for _, p := range md.Topics[topic].Partitions {
		if want, _ := model.Leader(topic, p.Partition); p.Leader != want.Leader {
			t.Fatalf("partition %d led by %d, want %d (leaders-spread)", p.Partition, p.Leader, want.Leader)
		}
		leaders[p.Leader]++
		if len(p.Replicas) != 3 || len(p.ISR) != 3 {
			t.Fatalf("partition %+v", p)
		}
	}
	if len(leaders) != 3 {
		t.Fatalf("leaders %v, want partitions led by all three nodes", leaders)
	}

	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	produceValues(t, ctx, producer, topic, 0, n)

	// A consumer group: every record once, then the commit.
	const groupID = "readers"
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(groupID),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[string]int{}
	for len(seen) < n && ctx.Err() == nil {
		fs := consumer.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	for v, c := range seen {
		if c != 1 {
			t.Fatalf("%s consumed %d times", v, c)
		}
	}
	if len(seen) != n {
		t.Fatalf("consumed %d of %d", len(seen), n)
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(ctx, groupID)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	committed.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != n {
		t.Fatalf("committed offsets sum to %d, want %d", sum, n)
	}

	// A share group reads everything and accepts it: its member fetches
	// from each partition's leader, one share session per node.
	const shareGroup = "sharers"
	setGroupConfig(t, ctx, admin, shareGroup, "share.auto.offset.reset", "earliest")
	share := newShareConsumer(t, addr, topic, shareGroup)
	got := map[string]bool{}
	accept := func(r *kgo.Record) { got[string(r.Value)] = true; r.Ack(kgo.AckAccept) }
	for len(got) < n && ctx.Err() == nil {
		share.PollFetches(ctx).EachRecord(accept)
		if err := share.FlushAcks(ctx); err != nil && ctx.Err() == nil {
			t.Fatalf("flush acks: %v", err)
		}
	}
	if len(got) != n {
		t.Fatalf("share group got %d of %d", len(got), n)
	}
	// Every record accepted (FlushAcks waited for the answers): each share
	// partition's start has reached the end of its log.
	sg, _ := b.ShareGroup(shareGroup)
	var spso int64
	for _, p := range sg.Partitions {
		spso += p.SPSO
	}
	if len(sg.Partitions) != kgoSpread || spso != n {
		t.Fatalf("share partitions not all accepted: %+v", sg.Partitions)
	}
}

// movesKgo is a three-node broker, an admin client and a test deadline.
type movesKgo struct {
	b    *broker.Broker
	addr string
	adm  *kadm.Client
	ctx  context.Context
}

func newMovesKgo(t *testing.T, topic string, partitions int32) *movesKgo {
	t.Helper()
	b, _ := startMoveNodes(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	m := &movesKgo{b: b, addr: b.NodeAddrs()[0].String(), ctx: ctx}
	cl := m.client(t)
	m.adm = kadm.NewClient(cl)
	if _, err := m.adm.CreateTopic(ctx, partitions, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *movesKgo) client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(m.addr), kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// moveAway moves partition p of topic to the next node and returns it.
func (m *movesKgo) moveAway(t *testing.T, topic string, p int32) int32 {
	t.Helper()
	to := (leaderOf(t, m.b, topic, p).Leader + 1) % 3
	if _, err := m.b.MoveLeader(topic, p, to); err != nil {
		t.Fatal(err)
	}
	return to
}

// readAll reads topic from the start until it holds n records in all and
// returns them by partition.
func (m *movesKgo) readAll(t *testing.T, topic string, n int) map[int32][]*kgo.Record {
	t.Helper()
	cl := m.client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	out := map[int32][]*kgo.Record{}
	for got := 0; got < n && m.ctx.Err() == nil; {
		fs := cl.PollFetches(m.ctx)
		fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { out[r.Partition] = append(out[r.Partition], r); got++ })
	}
	return out
}

// Rules: producer-state-moves, leader-move: an idempotent kgo producer
// writing through two leader moves writes exactly its records, once each,
// in order, and never meets OUT_OF_ORDER_SEQUENCE_NUMBER.
func TestNodesKgoIdempotentProducerThroughMoves(t *testing.T) {
	const topic, n = "idem", 600
	m := newMovesKgo(t, topic, 1)
	prod := m.client(t, kgo.DefaultProduceTopic(topic), kgo.MaxBufferedRecords(50))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range n {
		if i == n/3 || i == 2*n/3 {
			m.moveAway(t, topic, 0)
		}
		wg.Add(1)
		prod.Produce(m.ctx, kgo.StringRecord(fmt.Sprintf("v%d", i)), func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if errors.Is(err, kerr.OutOfOrderSequenceNumber) {
			t.Fatal("OUT_OF_ORDER_SEQUENCE_NUMBER across a move")
		}
		t.Fatalf("produce: %v", err)
	}
	if l := leaderOf(t, m.b, topic, 0); l.LeaderEpoch != 2 {
		t.Fatalf("leadership %+v, want two moves", l)
	}
	recs := m.readAll(t, topic, n)[0]
	if len(recs) != n {
		t.Fatalf("read %d records, want %d", len(recs), n)
	}
	for i, r := range recs {
		if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("v%d", i) {
			t.Fatalf("record %d: offset %d value %s", i, r.Offset, r.Value)
		}
	}
}

// consumeGroup polls a consumer group until it has seen n records,
// committing after every poll and calling at(seen) after each, and returns
// how often each value came.
func (m *movesKgo) consumeGroup(t *testing.T, cl *kgo.Client, n int, at func(seen int)) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for len(seen) < n && m.ctx.Err() == nil {
		fs := cl.PollFetches(m.ctx)
		fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
		if err := cl.CommitUncommittedOffsets(m.ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
		at(len(seen))
	}
	return seen
}

// checkOnceAndCommitted checks every one of n values came once and the
// group's committed offsets are the high watermarks.
func (m *movesKgo) checkOnceAndCommitted(t *testing.T, seen map[string]int, n int, group, topic string) {
	t.Helper()
	for v, c := range seen {
		if c != 1 {
			t.Errorf("%s consumed %d times", v, c)
		}
	}
	if len(seen) != n {
		t.Fatalf("consumed %d of %d", len(seen), n)
	}
	committed, err := m.adm.FetchOffsets(m.ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := m.adm.ListEndOffsets(m.ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if c, ok := committed.Lookup(topic, o.Partition); !ok || c.At != o.Offset {
			t.Errorf("%s-%d: committed %+v, high watermark %d", topic, o.Partition, c, o.Offset)
		}
	})
}

// Rules: leader-move, coordinator-move, offsets-survive: a kgo consumer
// group reads every record once through a leader move and a move of its
// coordinator, and its committed offsets end at the high watermarks.
func TestNodesKgoGroupThroughMoves(t *testing.T) {
	const topic, group, n = "grp", "movers", 900
	m := newMovesKgo(t, topic, 3)
	produceValues(t, m.ctx, m.client(t, kgo.RecordPartitioner(kgo.RoundRobinPartitioner())), topic, 0, n)
	cl := m.client(t, kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(512), kgo.FetchMaxBytes(1024))
	movedLeader, movedCoordinator := false, false
	seen := m.consumeGroup(t, cl, n, func(seen int) {
		if !movedLeader && seen >= n/3 {
			m.moveAway(t, topic, 1)
			movedLeader = true
		}
		if !movedCoordinator && seen >= 2*n/3 {
			to := (m.b.Cluster().Coordinators[0].Node + 1) % 3
			if err := m.b.MoveCoordinator(cluster.Group, group, to); err != nil {
				t.Fatal(err)
			}
			movedCoordinator = true
		}
	})
	if !movedLeader || !movedCoordinator {
		t.Fatalf("read everything before the moves (leader %v, coordinator %v)", movedLeader, movedCoordinator)
	}
	m.checkOnceAndCommitted(t, seen, n, group, topic)
}

// Rules: stop-fails-over, stop-closes-connections, start-as-follower,
// metadata-brokers-live: a kgo producer and consumer group keep working
// while a node leading partitions stops and starts again; Metadata tells
// the truth at each step and the restarted node leads nothing.
func TestNodesKgoStopStart(t *testing.T) {
	const topic, group, n = "stops", "stayers", 600
	m := newMovesKgo(t, topic, 6)
	prod := m.client(t, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	cons := m.client(t, kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	// The node to stop leads some partitions and does not coordinate the
	// group, so the bootstrap node 0 stays up and the group sees only
	// leader changes; node 2 is the one not coordinating it.
	stop := int32(1)
	if coordinatorNode(m.b, group) == 1 {
		stop = 2
	}
	brokers := func(want ...int32) {
		t.Helper()
		// A new client: kgo answers an admin Metadata from its cache
		// for a while.
		md, err := kadm.NewClient(m.client(t)).Metadata(m.ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		ids := md.Brokers.NodeIDs()
		if fmt.Sprint(ids) != fmt.Sprint(want) {
			t.Fatalf("metadata brokers %v, want %v", ids, want)
		}
		for _, p := range md.Topics[topic].Partitions {
			if len(p.ISR) != len(want) || len(p.Replicas) != 3 || len(p.OfflineReplicas) != 3-len(want) {
				t.Fatalf("partition %+v with brokers %v", p, want)
			}
		}
	}
	produceValues(t, m.ctx, prod, topic, 0, n/3)
	stopped, started := false, false
	seen := m.consumeGroup(t, cons, n, func(seen int) {
		switch {
		case !stopped && seen >= n/6:
			if err := m.b.StopNode(stop); err != nil {
				t.Fatal(err)
			}
			stopped = true
			brokers(live(stop)...)
			produceValues(t, m.ctx, prod, topic, n/3, n/3)
		case stopped && !started && seen >= n/2:
			if err := m.b.StartNode(stop); err != nil {
				t.Fatal(err)
			}
			started = true
			brokers(0, 1, 2)
			for _, p := range m.b.Cluster().Partitions {
				if p.Leader == stop {
					t.Fatalf("restarted node %d leads %+v", stop, p)
				}
			}
			produceValues(t, m.ctx, prod, topic, 2*n/3, n/3)
		}
	})
	if !stopped || !started {
		t.Fatalf("stopped %v started %v", stopped, started)
	}
	m.checkOnceAndCommitted(t, seen, n, group, topic)
}

func coordinatorNode(b *broker.Broker, group string) int32 {
	for _, c := range b.Cluster().Coordinators {
		if c.Key == group {
			return c.Node
		}
	}
	return int32(cluster.Slot(group) % 3) // not known yet: its slot's first leader
}

// live is nodes 0..2 without stopped.
func live(stopped int32) []int32 {
	var out []int32
	for id := range int32(3) {
		if id != stopped {
			out = append(out, id)
		}
	}
	return out
}

// shareKgo is the scenario of the share-consumer move tests: two kgo share
// consumers drain a 6-partition topic led by 3 nodes, each holding the
// records of its polls unacknowledged until the test has disturbed the
// cluster, so the disturbance finds records acquired on the nodes it
// touches.
type shareKgo struct {
	b            *broker.Broker
	ctx          context.Context
	admin        *kgo.Client // also the producer
	topic, group string
	produced     int
	mu           sync.Mutex
	seen         map[string]int // value -> deliveries seen by either member
}

// produce writes the next n values, round robin over the partitions.
func (s *shareKgo) produce(t *testing.T, n int) {
	t.Helper()
	produceValues(t, s.ctx, s.admin, s.topic, s.produced, n)
	s.produced += n
}

// accepted is the broker's count of records ever accepted.
func (s *shareKgo) accepted(t *testing.T) float64 {
	t.Helper()
	fams := scrape(t, "http://"+s.b.HTTPAddr().String())
	return metricValue(t, fams, "sharebroker_share_records_acknowledged_total", map[string]string{"type": "accept"})
}

// runShareKgo runs the scenario with the broker properties props (added to
// num.partitions=6): it produces half of n records, calls whileHeld once
// two partitions hold ACQUIRED records, lets the members acknowledge,
// produces the other half, calls afterRelease (which may produce more),
// and waits until the group's share lag is 0. It then asserts what every
// run must show: each record produced was delivered, and the broker
// accepted exactly as many records as were produced — an ACKNOWLEDGED
// record can never be accepted again, so no record was accepted twice.
func runShareKgo(t *testing.T, props map[string]string, n int, whileHeld func(s *shareKgo, held []int32), afterRelease func(s *shareKgo)) *shareKgo {
	t.Helper()
	cfgProps := map[string]string{"num.partitions": "6"}
	for k, v := range props {
		cfgProps[k] = v
	}
	b := testbroker.Start(t, broker.Config{Nodes: 3, HTTP: "127.0.0.1:0", Props: cfgProps})
	var seeds []string
	for _, a := range b.NodeAddrs() {
		seeds = append(seeds, a.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	s := &shareKgo{b: b, ctx: ctx, admin: admin, topic: "moving", group: "movers", seen: map[string]int{}}
	setGroupConfig(t, ctx, admin, s.group, "share.auto.offset.reset", "earliest")
	s.produce(t, 1)
	leaders := map[int32]bool{}
	for _, p := range b.Cluster().Partitions {
		leaders[p.Leader] = true
	}
	if len(leaders) != 3 {
		t.Fatalf("partitions led by %d nodes; want 3", len(leaders))
	}

	consumers := []*kgo.Client{
		newShareConsumer(t, seeds[0], s.topic, s.group, kgo.ShareMaxRecords(20), kgo.ShareMaxRecordsStrict()),
		newShareConsumer(t, seeds[1], s.topic, s.group, kgo.ShareMaxRecords(20), kgo.ShareMaxRecordsStrict()),
	}
	released := make(chan struct{})
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var holding atomic.Int32 // consumers holding a poll's records unacknowledged
	consume := func(cl *kgo.Client) {
		defer wg.Done()
		held := false
		for runCtx.Err() == nil {
			recs := cl.PollFetches(runCtx).Records()
			if len(recs) == 0 {
				continue
			}
			s.mu.Lock()
			for _, r := range recs {
				s.seen[string(r.Value)]++
			}
			s.mu.Unlock()
			if !held {
				held = true
				holding.Add(1)
			}
			select {
			case <-released:
			case <-runCtx.Done():
			}
			for _, r := range recs {
				r.Ack(kgo.AckAccept)
			}
			_ = cl.FlushAcks(runCtx) // acks to an old leader or a stopped node fail, by design
		}
	}
	for _, cl := range consumers {
		wg.Add(1)
		go consume(cl)
	}
	waitForMembers(t, ctx, admin, s.group, 2)
	s.produce(t, n/2-1)
	whileHeld(s, heldPartitions(t, ctx, b, s.group, &holding))
	close(released)
	s.produce(t, n/2)
	if afterRelease != nil {
		afterRelease(s)
	}

	// Wait until the group has nothing left to deliver.
	for ctx.Err() == nil && !drained(t, ctx, admin, s.group, s.topic) {
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond): // polling a condition, bounded by ctx
		}
	}
	stop()
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("not drained before the deadline: %d distinct records seen of %d", len(s.seen), s.produced)
	}
	if got := s.accepted(t); got != float64(s.produced) {
		t.Fatalf("%v records accepted; want each of %d exactly once", got, s.produced)
	}
	if len(s.seen) != s.produced {
		t.Fatalf("saw %d distinct records; want %d", len(s.seen), s.produced)
	}
	return s
}

// redelivered is how many deliveries repeated an earlier one.
func (s *shareKgo) redelivered() int {
	r := 0
	for _, c := range s.seen {
		r += c - 1
	}
	return r
}

// Rules move-frees-acquired and share-ack-after-move with a real client:
// two kgo share consumers drain 6 partitions led by 3 nodes while two
// leaders move under them. Records acquired on an old leader are freed
// and delivered again; the acknowledgements sent for them fail, so every
// record ends accepted exactly once (the broker's accept counter equals
// the records produced; an ACKNOWLEDGED record can never be accepted
// again), and the share lag ends 0.
func TestShareKgoLeaderMoves(t *testing.T) {
	s := runShareKgo(t, nil, 1200, func(s *shareKgo, held []int32) {
		// Move two leaders, each to the next node: the partitions holding
		// acquired records, and another when only one holds any.
		first := s.b.Cluster().Nodes[0].ID
		if len(held) == 1 {
			held = append(held, (held[0]+1)%6)
		}
		for _, p := range held[:2] {
			l := s.b.Cluster().Partitions[p].Leader
			if _, err := s.b.MoveLeader(s.topic, p, first+(l-first+1)%3); err != nil {
				t.Fatal(err)
			}
		}
	}, nil)
	fams := scrape(t, "http://"+s.b.HTTPAddr().String())
	freed := metricValue(t, fams, "sharebroker_share_records_released_on_leader_move_total", nil)
	if freed == 0 {
		t.Fatal("the moves freed no records")
	}
	t.Logf("%d deliveries repeated after the moves; %v records freed by them", s.redelivered(), freed)
}

// membersOn asks node for the group's members (ShareGroupDescribe sent to
// that node, not routed) and returns each member's epoch and the group
// epoch. The node must coordinate the group.
func (s *shareKgo) membersOn(t *testing.T, node int32) (map[string]int32, int32) {
	t.Helper()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{s.group}
	resp, err := req.RequestWith(s.ctx, s.admin.Broker(int(node)))
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("ShareGroupDescribe on node %d: %v %+v", node, err, resp)
	}
	out := map[string]int32{}
	for _, m := range resp.Groups[0].Members {
		out[m.MemberID] = m.MemberEpoch
	}
	return out, resp.Groups[0].GroupEpoch
}

// stableMembersOn waits until every member node describes is at the group
// epoch (the first member catches up with the second's join on its next
// heartbeat) and returns them.
func (s *shareKgo) stableMembersOn(t *testing.T, node int32) map[string]int32 {
	t.Helper()
	for {
		members, epoch := s.membersOn(t, node)
		stable := true
		for _, e := range members {
			stable = stable && e == epoch
		}
		if stable {
			return members
		}
		select {
		case <-s.ctx.Done():
			t.Fatalf("members %v never all at group epoch %d", members, epoch)
		case <-time.After(20 * time.Millisecond): // polling a condition, bounded by ctx
		}
	}
}

// heartbeatsOn is how many ShareGroupHeartbeats node answered without an
// error (the node label of sharebroker_requests_total).
func (s *shareKgo) heartbeatsOn(t *testing.T, node int32) float64 {
	t.Helper()
	fams := scrape(t, "http://"+s.b.HTTPAddr().String())
	return metricValue(t, fams, "sharebroker_requests_total",
		map[string]string{"api": "ShareGroupHeartbeat", "error_code": "0", "node": fmt.Sprint(node)})
}

// Rules coordinator-move, share-group-reload, timers-restart-on-move,
// stop-fails-over, stop-drops-sessions, start-as-follower with real
// clients: two kgo share consumers drain 6 partitions led by 3 nodes
// while, with records acquired and unacknowledged, the group's coordinator
// moves and then a node leading partitions (not the new coordinator)
// stops; later it starts again and a partition's leadership is moved back
// to it. Session timeouts are short (3 s), so a member that did not
// follow its coordinator would be expired: both members stay in the group
// at the same member epochs through more than a session timeout of
// heartbeats answered by the new coordinator. Every record ends accepted
// exactly once and the share lag ends 0.
func TestShareKgoCoordinatorMoveAndNodeStop(t *testing.T) {
	// kgo heartbeats a share member at most once a second, whatever
	// interval the coordinator answers (consumer_share.go: "sanity").
	const session, interval = 3000, 1000 // ms
	props := map[string]string{
		"group.share.min.session.timeout.ms":    "1000",
		"group.share.session.timeout.ms":        fmt.Sprint(session),
		"group.share.min.heartbeat.interval.ms": "1000",
		"group.share.heartbeat.interval.ms":     fmt.Sprint(interval),
	}
	var stopped, coordinator int32
	var members map[string]int32
	s := runShareKgo(t, props, 1200, func(s *shareKgo, held []int32) {
		from := coordinatorNode(s.b, s.group)
		members = s.stableMembersOn(t, from)
		if len(members) != 2 {
			t.Fatalf("members before the move: %v", members)
		}
		// The node to stop leads a partition holding acquired records;
		// the coordinator moves to a node that is neither it nor the old
		// coordinator (or just another one, when the node to stop
		// coordinates the group).
		stopped = leaderOf(t, s.b, s.topic, held[0]).Leader
		coordinator = 3 - from - stopped
		if from == stopped {
			coordinator = (stopped + 1) % 3
		}
		if err := s.b.MoveCoordinator(cluster.Group, s.group, coordinator); err != nil {
			t.Fatal(err)
		}
		// The new coordinator answers heartbeats for longer than a session
		// timeout: of 2*(session/interval)+4 beats from two members beating
		// at most once an interval, one member sent at least
		// session/interval+2, over at least session+interval. Both members
		// are still there, at the epochs they had: neither was expired
		// (its timer restarted in full at the move) nor rejoined, so both
		// found the new coordinator.
		want := s.heartbeatsOn(t, coordinator) + 2*session/interval + 4
		for s.heartbeatsOn(t, coordinator) < want {
			select {
			case <-s.ctx.Done():
				t.Fatalf("node %d answered %v heartbeats, want %v", coordinator, s.heartbeatsOn(t, coordinator), want)
			case <-time.After(50 * time.Millisecond): // polling a condition, bounded by ctx
			}
		}
		if got, _ := s.membersOn(t, coordinator); fmt.Sprint(got) != fmt.Sprint(members) {
			t.Fatalf("members after the coordinator move %v, before %v", got, members)
		}

		if err := s.b.StopNode(stopped); err != nil {
			t.Fatal(err)
		}
	}, func(s *shareKgo) {
		// Once the members have accepted half the records, the node
		// starts again, and the leadership of one partition moves back to
		// it, so the members fetch from it again for the last records.
		for s.accepted(t) < float64(s.produced/2) {
			select {
			case <-s.ctx.Done():
				t.Fatalf("accepted %v of %d before the deadline", s.accepted(t), s.produced)
			case <-time.After(20 * time.Millisecond): // polling a condition, bounded by ctx
			}
		}
		if err := s.b.StartNode(stopped); err != nil {
			t.Fatal(err)
		}
		if _, err := s.b.MoveLeader(s.topic, 0, stopped); err != nil {
			t.Fatal(err)
		}
		s.produce(t, 300)
	})
	if got, _ := s.membersOn(t, coordinator); fmt.Sprint(got) != fmt.Sprint(members) {
		t.Fatalf("members at the end %v, after the coordinator move %v", got, members)
	}
	fams := scrape(t, "http://"+s.b.HTTPAddr().String())
	freed := metricValue(t, fams, "sharebroker_share_records_released_on_leader_move_total", nil)
	if freed == 0 {
		t.Fatalf("node %d stopped leading a partition with acquired records, but none was freed", stopped)
	}
	t.Logf("coordinator moved to node %d; node %d stopped and started; %d deliveries repeated; %v records freed by the stop",
		coordinator, stopped, s.redelivered(), freed)
}

// heldPartitions waits until at least two partitions of the group's share
// state hold ACQUIRED records and returns them.
func heldPartitions(t *testing.T, ctx context.Context, b *broker.Broker, group string, holding *atomic.Int32) []int32 {
	t.Helper()
	// Both consumers hold a poll's records: nothing more is acquired until
	// the test releases them, so the partitions held now stay held. They
	// may be one partition or several: while the second member joins, both
	// can be handed records of the same partition.
	for ctx.Err() == nil {
		g, _ := b.ShareGroup(group)
		var held []int32
		for _, p := range g.Partitions {
			if slices.ContainsFunc(p.Ranges, func(r httpapi.RangeJSON) bool { return r.State == "ACQUIRED" }) {
				held = append(held, p.Partition)
			}
		}
		if len(held) >= 2 || (len(held) == 1 && holding.Load() == 2) {
			return held
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, bounded by ctx
	}
	t.Fatal("no partition with acquired records held by both consumers before the deadline")
	return nil
}

// drained reports whether every partition of topic has share lag 0 for
// group, asking the group's coordinator (kgo routes the request).
func drained(t *testing.T, ctx context.Context, cl *kgo.Client, group, topic string) bool {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Version = 1
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{0, 1, 2, 3, 4, 5}
	g.Topics = append(g.Topics, rt)
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Groups[0].ErrorCode != 0 {
		return false
	}
	for _, p := range resp.Groups[0].Topics[0].Partitions {
		if p.ErrorCode != 0 || p.Lag != 0 {
			return false
		}
	}
	return true
}

// Rules: txn-reload, coordinator-move, unload-answers-parked,
// offsets-survive: two kgo GroupTransactSession members copy a topic
// exactly once on three nodes while, half-way, every transactional ID's
// coordinator and the group's coordinator move to another node: each
// member's next transactional request meets NOT_COORDINATOR, finds the new
// coordinator and goes on, and read_committed shows every input record
// once in the output.
func TestNodesKgoGroupTransactSessionThroughCoordinatorMoves(t *testing.T) {
	moved := 0
	testGroupTransactSessionCopy(t, broker.Config{Nodes: 3}, func(b *broker.Broker) {
		// Half the records may be copied by a before b's session has
		// initialized its transactional ID (CI, loaded): wait, bounded,
		// until the group and both IDs have coordinators to move.
		deadline := time.Now().Add(15 * time.Second)
		for len(b.Cluster().Coordinators) < 3 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond) // polling a condition, bounded by deadline
		}
		for _, c := range b.Cluster().Coordinators {
			typ := cluster.Transaction
			if c.Type == cluster.Group.String() {
				typ = cluster.Group
			}
			if err := b.MoveCoordinator(typ, c.Key, (c.Node+1)%3); err != nil {
				t.Error(err)
			}
			moved++
		}
	})
	if moved != 3 {
		t.Errorf("moved %d coordinators, want the group's and both transactional IDs'", moved)
	}
}

// Rules: leader-move, not-leader, offsets-survive: a sarama consumer group
// on three nodes reads every record once through a move of a partition's
// leader, with records produced before and after the move; its
// auto-committed offsets end at the high watermarks.
func TestNodesSaramaGroupThroughLeaderMove(t *testing.T) {
	const topic, group, n = "sarama-moves", "sarama-movers", 300
	m := newMovesKgo(t, topic, 3)
	prod := m.client(t, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	produceValues(t, m.ctx, prod, topic, 0, n/2)
	msgs, stop := saramaGroup(t, m.addr, group, topic)
	defer stop()
	seen := map[string]int{}
	moved := false
	for len(seen) < n {
		select {
		case sm := <-msgs:
			seen[string(sm.msg.Value)]++
			sm.sess.MarkMessage(sm.msg, "")
		case <-m.ctx.Done():
			t.Fatalf("read %d of %d records before the deadline (moved %v)", len(seen), n, moved)
		}
		if !moved && len(seen) >= n/4 {
			m.moveAway(t, topic, 1)
			moved = true
			produceValues(t, m.ctx, prod, topic, n/2, n/2)
		}
	}
	ends, err := m.adm.ListEndOffsets(m.ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	awaitCommitted(t, m.ctx, m.adm, group, topic, want)
	stop()
	m.checkOnceAndCommitted(t, seen, n, group, topic)
}
