package broker_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/httpapi"
	"github.com/sharebroker/sharebroker/internal/batchtest"
	"github.com/sharebroker/sharebroker/internal/rawconn"
	"github.com/sharebroker/sharebroker/internal/testbroker"
	"github.com/sharebroker/sharebroker/locktimer"
)

// leaderSetup is a 3-node broker with topic "t" of 3 partitions, one led
// by each node, and a connection on each node's OTHER listener.
type leaderSetup struct {
	b     *broker.Broker
	model *cluster.Cluster
	conns map[int32]*rawconn.Conn
	id    [16]byte
}

func newLeaderSetup(t *testing.T, clock ...locktimer.Clock) *leaderSetup {
	t.Helper()
	b, model := startNodes(t, 3, clock...)
	s := &leaderSetup{b: b, model: model, conns: map[int32]*rawconn.Conn{}}
	for id := int32(5); id < 8; id++ {
		s.conns[id] = rawconn.Dial(t, nodeListenerAddr(t, b, id, "OTHER"))
	}
	createTopicRaw(t, s.conns[5], "t", 3)
	model.AddPartitions("t", 0, 3)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("t")
	req.Topics = append(req.Topics, rt)
	s.id = s.conns[5].Request(req).(*kmsg.MetadataResponse).Topics[0].TopicID
	return s
}

// leader is the node leading partition p; follower one that does not.
func (s *leaderSetup) leader(p int32) int32 {
	l, _ := s.model.Leader("t", p)
	return l.Leader
}

func (s *leaderSetup) follower(p int32) int32 {
	return 5 + (s.leader(p)-5+1)%3
}

func (s *leaderSetup) produce(t *testing.T, node int32, version int16, p int32, n int) *kmsg.ProduceResponse {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = "t", s.id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = p
	rp.Records = batchtest.Plain(n).Build()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return s.conns[node].Request(req).(*kmsg.ProduceResponse)
}

func (s *leaderSetup) fetch(t *testing.T, node int32, version int16, epoch int32, parts ...int32) *kmsg.FetchResponse {
	t.Helper()
	return s.fetchAs(t, -1, node, version, epoch, parts...)
}

// fetchAs is fetch with a replica ID: -1 a consumer, a node ID a follower
// broker replicating (ReplicaID before v15, ReplicaState from v15).
func (s *leaderSetup) fetchAs(t *testing.T, replica, node int32, version int16, epoch int32, parts ...int32) *kmsg.FetchResponse {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.ReplicaID, req.ReplicaState.ID = replica, replica
	req.MaxBytes, req.MinBytes, req.MaxWaitMillis = 1<<20, 0, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "t", s.id
	for _, p := range parts {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, 1<<20, epoch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return s.conns[node].Request(req).(*kmsg.FetchResponse)
}

// wantEndpoint checks that endpoints (NodeID, Host, Port triples) list
// exactly leader, at its OTHER listener.
func (s *leaderSetup) wantEndpoint(t *testing.T, leader int32, ids []int32, hosts []string, ports []int32) {
	t.Helper()
	host, port := splitAddr(t, nodeListenerAddr(t, s.b, leader, "OTHER"))
	if len(ids) != 1 || ids[0] != leader || hosts[0] != host || ports[0] != port {
		t.Fatalf("node endpoints %v %v %v, want node %d at %s:%d", ids, hosts, ports, leader, host, port)
	}
}

// Rule: not-leader (docs/cluster.md): Produce to a node that does
// not lead the partition answers NOT_LEADER_OR_FOLLOWER; from v10
// (KIP-951) with the current leader and its endpoint at the listener the
// request came on.
func TestNodesProduceNotLeader(t *testing.T) {
	s := newLeaderSetup(t)
	f := s.follower(0)
	old := s.produce(t, f, 9, 0, 1).Topics[0].Partitions[0]
	if old.ErrorCode != kerr.NotLeaderForPartition.Code || old.BaseOffset != -1 {
		t.Fatalf("v9 on a follower: %+v", old)
	}
	resp := s.produce(t, f, 10, 0, 1)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != s.leader(0) || p.CurrentLeader.LeaderEpoch != 0 || p.ErrorMessage != nil {
		t.Fatalf("v10 on a follower: %+v", p)
	}
	var ids, ports []int32
	var hosts []string
	for _, n := range resp.Brokers {
		ids, hosts, ports = append(ids, n.NodeID), append(hosts, n.Host), append(ports, n.Port)
	}
	s.wantEndpoint(t, s.leader(0), ids, hosts, ports)
	if p := s.produce(t, s.leader(0), 10, 0, 2).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 0 || p.CurrentLeader.LeaderID != -1 {
		t.Fatalf("on the leader: %+v", p)
	}
}

// Rule: not-leader, epoch-check: a fetch that only the leader may serve (a
// follower broker's, fetch-from-follower) answers NOT_LEADER_OR_FOLLOWER
// on another node, with CurrentLeader and NodeEndpoints from v16; the
// answer still carries the records of a partition the node leads (the
// spliced encoder falls back to kmsg for the tagged fields).
func TestNodesFetchNotLeaderAndEpochs(t *testing.T) {
	s := newLeaderSetup(t)
	for p := range int32(3) {
		if r := s.produce(t, s.leader(p), 10, p, 2).Topics[0].Partitions[0]; r.ErrorCode != 0 {
			t.Fatalf("produce %d: %+v", p, r)
		}
	}
	node := s.leader(0)
	other := int32(-1)
	for p := int32(1); p < 3; p++ {
		if s.leader(p) != node {
			other = p
		}
	}
	replica := s.follower(other) // a broker that replicates other, not node
	if replica == node {
		replica = 5 + (node-5+2)%3
	}
	resp := s.fetchAs(t, replica, node, 16, -1, 0, other)
	ps := resp.Topics[0].Partitions
	if ps[0].ErrorCode != 0 || len(ps[0].RecordBatches) == 0 || ps[0].HighWatermark != 2 || ps[0].CurrentLeader.LeaderID != -1 {
		t.Fatalf("led partition: %+v", ps[0])
	}
	if ps[1].ErrorCode != kerr.NotLeaderForPartition.Code || ps[1].CurrentLeader.LeaderID != s.leader(other) || ps[1].CurrentLeader.LeaderEpoch != 0 || len(ps[1].RecordBatches) != 0 || ps[1].RecordBatches == nil {
		t.Fatalf("partition %d led elsewhere: %+v", other, ps[1])
	}
	var ids, ports []int32
	var hosts []string
	for _, n := range resp.Brokers {
		ids, hosts, ports = append(ids, n.NodeID), append(hosts, n.Host), append(ports, n.Port)
	}
	s.wantEndpoint(t, s.leader(other), ids, hosts, ports)
	if old := s.fetchAs(t, replica, node, 15, -1, other).Topics[0].Partitions[0]; old.ErrorCode != kerr.NotLeaderForPartition.Code || old.CurrentLeader.LeaderID != -1 {
		t.Fatalf("v15: %+v", old)
	}
	if old := s.fetch(t, node, 10, -1, other).Topics[0].Partitions[0]; old.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("v10 consumer: %+v", old)
	}

	// The epoch: move partition 0's leader twice (epoch 2), then ask with
	// older, newer, the current and no epoch.
	next := s.follower(0)
	if _, err := s.b.MoveLeader("t", 0, next); err != nil {
		t.Fatal(err)
	}
	if l, err := s.b.MoveLeader("t", 0, next); err != nil || l.Epoch != 1 || l.Leader != next { // leader-move: to its own leader changes nothing
		t.Fatalf("move to its own leader: %+v %v", l, err)
	}
	next = 5 + (next-5+1)%3
	if l, err := s.b.MoveLeader("t", 0, next); err != nil || l.Epoch != 2 || l.Leader != next {
		t.Fatalf("move: %+v %v", l, err)
	}
	for _, tc := range []struct {
		node  int32
		epoch int32
		want  int16
	}{
		{next, 1, kerr.FencedLeaderEpoch.Code},
		{next, 3, kerr.UnknownLeaderEpoch.Code},
		{next, 2, 0},
		{next, -1, 0},
		{node, 2, 0},                           // fetch-from-follower: the current epoch is served by a follower
		{node, 1, kerr.FencedLeaderEpoch.Code}, // the epoch is checked first, as Kafka's Partition.getLocalLog
	} {
		p := s.fetch(t, tc.node, 16, tc.epoch, 0).Topics[0].Partitions[0]
		if p.ErrorCode != tc.want {
			t.Fatalf("node %d epoch %d: error %d, want %d", tc.node, tc.epoch, p.ErrorCode, tc.want)
		}
		wantLeader := int32(-1)
		if tc.want == kerr.FencedLeaderEpoch.Code {
			wantLeader = next
		}
		if p.CurrentLeader.LeaderID != wantLeader || (wantLeader >= 0 && p.CurrentLeader.LeaderEpoch != 2) {
			t.Fatalf("node %d epoch %d: current leader %+v", tc.node, tc.epoch, p.CurrentLeader)
		}
	}
}

// Rule: epoch-stamp, epoch-history: batches carry the leader epoch they
// were appended in, ListOffsets and OffsetForLeaderEpoch answer from the
// history, and both check the current epoch and the leader.
func TestNodesEpochHistoryOverTheWire(t *testing.T) {
	s := newLeaderSetup(t)
	first := s.leader(0)
	s.produce(t, first, 10, 0, 3) // epoch 0: 0-2
	next := s.follower(0)
	if _, err := s.b.MoveLeader("t", 0, next); err != nil { // epoch 1 from 3, no records
		t.Fatal(err)
	}
	if _, err := s.b.MoveLeader("t", 0, first); err != nil { // epoch 2 from 3
		t.Fatal(err)
	}
	s.produce(t, first, 10, 0, 2) // epoch 2: 3-4

	resp := s.fetch(t, first, 16, 2, 0)
	var epochs []int32
	for rec := resp.Topics[0].Partitions[0].RecordBatches; len(rec) > 0; {
		epochs = append(epochs, int32(binary.BigEndian.Uint32(rec[12:])))
		rec = rec[12+binary.BigEndian.Uint32(rec[8:]):]
	}
	if len(epochs) != 2 || epochs[0] != 0 || epochs[1] != 2 {
		t.Fatalf("stamped leader epochs %v, want [0 2]", epochs)
	}

	ofe := func(node, current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
		req := &kmsg.OffsetForLeaderEpochRequest{Version: 4, ReplicaID: -1, Topics: []kmsg.OffsetForLeaderEpochRequestTopic{
			{Topic: "t", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: current, LeaderEpoch: epoch}}},
		}}
		return s.conns[node].Request(req).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
	}
	for _, tc := range []struct {
		node, current, epoch int32
		code                 int16
		wantEpoch            int32
		wantEnd              int64
	}{
		{first, 2, 0, 0, 0, 3},
		{first, 2, 1, 0, 0, 3}, // no records in 1: the epoch below, ending where 2 starts
		{first, -1, 2, 0, 2, 5},
		{first, 2, 3, 0, -1, -1},
		{first, -1, -1, 0, -1, -1},
		{first, 1, 0, kerr.FencedLeaderEpoch.Code, -1, -1},
		{first, 3, 0, kerr.UnknownLeaderEpoch.Code, -1, -1},
		{next, -1, 0, kerr.NotLeaderForPartition.Code, -1, -1},
	} {
		p := ofe(tc.node, tc.current, tc.epoch)
		if p.ErrorCode != tc.code || p.LeaderEpoch != tc.wantEpoch || p.EndOffset != tc.wantEnd {
			t.Errorf("node %d current %d epoch %d: %+v, want code %d epoch %d end %d", tc.node, tc.current, tc.epoch, p, tc.code, tc.wantEpoch, tc.wantEnd)
		}
	}

	lo := func(node, current int32, ts int64) kmsg.ListOffsetsResponseTopicPartition {
		req := &kmsg.ListOffsetsRequest{Version: 7, ReplicaID: -1, Topics: []kmsg.ListOffsetsRequestTopic{
			{Topic: "t", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: current, Timestamp: ts, MaxNumOffsets: 1}}},
		}}
		return s.conns[node].Request(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	}
	if p := lo(first, 2, -1); p.ErrorCode != 0 || p.Offset != 5 || p.LeaderEpoch != 2 {
		t.Errorf("latest: %+v", p)
	}
	if p := lo(first, -1, -2); p.ErrorCode != 0 || p.Offset != 0 || p.LeaderEpoch != 0 {
		t.Errorf("earliest: %+v", p)
	}
	if p := lo(first, 0, -1); p.ErrorCode != kerr.FencedLeaderEpoch.Code || p.Offset != -1 {
		t.Errorf("old epoch: %+v", p)
	}
	if p := lo(first, 7, -1); p.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Errorf("new epoch: %+v", p)
	}
	if p := lo(next, -1, -1); p.ErrorCode != kerr.NotLeaderForPartition.Code || p.LeaderEpoch != -1 {
		t.Errorf("follower: %+v", p)
	}

	dr := &kmsg.DeleteRecordsRequest{Version: 2, TimeoutMillis: 5000, Topics: []kmsg.DeleteRecordsRequestTopic{
		{Topic: "t", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 1}}},
	}}
	if p := s.conns[next].Request(dr).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.NotLeaderForPartition.Code || p.LowWatermark != -1 {
		t.Errorf("delete records on a follower: %+v", p)
	}
	if p := s.conns[first].Request(dr).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.LowWatermark != 1 {
		t.Errorf("delete records on the leader: %+v", p)
	}
}

// Rule: not-leader: ShareFetch answers a partition another node leads with
// NOT_LEADER_OR_FOLLOWER, its CurrentLeader and the leader's
// NodeEndpoints; acknowledgements there answer UNKNOWN_TOPIC_OR_PARTITION
// (share-ack-after-move), and the node's own partitions are served in the
// same request.
func TestNodesShareNotLeader(t *testing.T) {
	s := newLeaderSetup(t)
	node := s.leader(0)
	other := int32(-1)
	for p := int32(1); p < 3; p++ {
		if s.leader(p) != node {
			other = p
		}
	}
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 1
	req.GroupID, req.MemberID = kmsg.StringPtr("sg"), kmsg.StringPtr("member-0000000000000000000001")
	req.ShareSessionEpoch, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 0, 0, 1, 1<<20, 100, 100
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = s.id
	for _, p := range []int32{0, other} {
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	// The first fetch makes the share partitions, at the log end
	// (share.auto.offset.reset=latest); the records come after it.
	resp := s.conns[node].Request(req).(*kmsg.ShareFetchResponse)
	s.produce(t, node, 10, 0, 1)
	s.produce(t, s.leader(other), 10, other, 1)
	req.ShareSessionEpoch, req.Topics = 1, nil
	resp2 := s.conns[node].Request(req).(*kmsg.ShareFetchResponse)
	if resp2.ErrorCode != 0 || len(resp2.Topics) != 1 || len(resp2.Topics[0].Partitions) == 0 {
		t.Fatalf("second share fetch: %+v", resp2)
	}
	if p := resp2.Topics[0].Partitions[0]; p.Partition != 0 || p.ErrorCode != 0 || len(p.AcquiredRecords) != 1 {
		t.Fatalf("second share fetch, led partition: %+v", p)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 {
		t.Fatalf("share fetch: %+v", resp)
	}
	byPart := map[int32]kmsg.ShareFetchResponseTopicPartition{}
	for _, p := range resp.Topics[0].Partitions {
		byPart[p.Partition] = p
	}
	if p := byPart[0]; p.ErrorCode != 0 {
		t.Fatalf("led partition: %+v", p)
	}
	if p := byPart[other]; p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != s.leader(other) || p.CurrentLeader.LeaderEpoch != 0 || len(p.AcquiredRecords) != 0 {
		t.Fatalf("partition led elsewhere: %+v", p)
	}
	var ids, ports []int32
	var hosts []string
	for _, n := range resp.NodeEndpoints {
		ids, hosts, ports = append(ids, n.NodeID), append(hosts, n.Host), append(ports, n.Port)
	}
	s.wantEndpoint(t, s.leader(other), ids, hosts, ports)

	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.Version = 1
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = req.GroupID, req.MemberID, 2
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = s.id
	for _, p := range []int32{0, other} {
		ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
		ap.Partition = p
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = 0, 0, []int8{1}
		ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, b)
		at.Partitions = append(at.Partitions, ap)
	}
	ack.Topics = append(ack.Topics, at)
	aresp := s.conns[node].Request(ack).(*kmsg.ShareAcknowledgeResponse)
	if aresp.ErrorCode != 0 {
		t.Fatalf("share acknowledge: %+v", aresp)
	}
	aps := aresp.Topics[0].Partitions
	if aps[0].ErrorCode != 0 {
		t.Fatalf("ack on the leader: %+v", aps[0])
	}
	// share-ack-after-move: the node holds no share partition for what it
	// does not lead, so Kafka answers UNKNOWN_TOPIC_OR_PARTITION there,
	// without CurrentLeader or endpoints.
	if aps[1].ErrorCode != kerr.UnknownTopicOrPartition.Code || aps[1].CurrentLeader.LeaderID == s.leader(other) {
		t.Fatalf("ack elsewhere: %+v", aps[1])
	}
	if len(aresp.NodeEndpoints) != 0 {
		t.Fatalf("ack elsewhere named endpoints: %+v", aresp.NodeEndpoints)
	}
}

// moveSetup is a 3-node broker on a manual clock with topic "t" (one
// partition) holding n records and group "g" reading from the earliest
// with 15 s locks; raw members can speak to any node.
type moveSetup struct {
	t       *testing.T
	b       *broker.Broker
	clock   *locktimer.ManualClock
	ctx     context.Context
	cl      *kgo.Client
	base    string
	addrs   map[int32]string
	topicID [16]byte
}

func newMoveSetup(t *testing.T, n int) *moveSetup {
	t.Helper()
	clock := locktimer.NewManualClock(time.Unix(1_700_000_000, 0))
	b := testbroker.Start(t, broker.Config{Nodes: 3, Clock: clock, HTTP: "127.0.0.1:0"})
	s := &moveSetup{t: t, b: b, clock: clock, base: "http://" + b.HTTPAddr().String(), addrs: map[int32]string{}}
	var seeds []string
	for i, a := range b.NodeAddrs() {
		s.addrs[b.Cluster().Nodes[i].ID] = a.String()
		seeds = append(seeds, a.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	s.ctx, s.cl = ctx, cl
	s.topicID = seedShareTopic(t, ctx, cl, n)
	setGroupConfig(t, ctx, cl, "g", "share.record.lock.duration.ms", "15000")
	return s
}

// member is a raw share member talking to node.
func (s *moveSetup) member(node int32) *rawShare {
	return &rawShare{t: s.t, c: dialRaw(s.t, s.addrs[node]), group: "g", topicID: s.topicID}
}

func (s *moveSetup) leader() int32 {
	for _, p := range s.b.Cluster().Partitions {
		if p.Topic == "t" && p.Partition == 0 {
			return p.Leader
		}
	}
	s.t.Fatal("no partition t-0")
	return -1
}

// window returns the share partition of t-0 as GET /v1/share-groups/g
// shows it.
func (s *moveSetup) window() httpapi.SharePartitionJSON {
	s.t.Helper()
	g, ok := s.b.ShareGroup("g")
	if !ok || len(g.Partitions) != 1 {
		s.t.Fatalf("share group g: %+v", g)
	}
	return g.Partitions[0]
}

func wantRange(t *testing.T, w httpapi.SharePartitionJSON, state, owner string, count int16) {
	t.Helper()
	if len(w.Ranges) != 1 || w.Ranges[0].FirstOffset != 0 || w.Ranges[0].LastOffset != 2 ||
		w.Ranges[0].State != state || w.Ranges[0].Owner != owner || w.Ranges[0].DeliveryCount != count {
		t.Fatalf("window %+v; want 0-2 %s owner %q count %d", w, state, owner, count)
	}
}

// Rules move-frees-acquired, share-fetch-not-leader, share-ack-after-move,
// renew-after-move, locks-die-with-leadership (docs/cluster.md §5.2).
func TestShareLeaderMoveHandsOver(t *testing.T) {
	s := newMoveSetup(t, 3)
	a := s.leader()
	bNode := s.b.Cluster().Nodes[0].ID
	if bNode == a {
		bNode = s.b.Cluster().Nodes[1].ID
	}
	onA := s.member(a)
	acquired := func(resp *kmsg.ShareFetchResponse, count int16) {
		t.Helper()
		p := partitionOf(t, resp)
		if p.ErrorCode != 0 || p.AcknowledgeErrorCode != 0 || len(p.AcquiredRecords) != 1 ||
			p.AcquiredRecords[0].FirstOffset != 0 || p.AcquiredRecords[0].LastOffset != 2 || p.AcquiredRecords[0].DeliveryCount != count {
			t.Fatalf("want 0-2 acquired at count %d: %+v", count, p)
		}
	}
	// m1 on A: a first delivery, released (Kafka persists AVAILABLE@1),
	// and a second delivery in the same request (not persisted).
	acquired(onA.fetch(2, "m1", 0, nil, nil), 1)
	acquired(onA.fetch(2, "m1", 1, []ackSpec{{0, 2, []int8{2}}}, nil), 2)
	if w := s.window(); w.Leader != a {
		t.Fatalf("leader %d; want %d", w.Leader, a)
	}
	wantRange(t, s.window(), "ACQUIRED", "m1", 2)

	if _, err := s.b.MoveLeader("t", 0, bNode); err != nil {
		t.Fatal(err)
	}
	w := s.window()
	wantRange(t, w, "AVAILABLE", "", 1)
	if w.Leader != bNode || w.SPSO != 0 || w.SPEO != 2 {
		t.Fatalf("after the move: %+v", w)
	}

	// The old leader holds no share partition for t-0 any more.
	ar := onA.ack(2, "m1", 2, false, []ackSpec{{0, 2, []int8{1}}})
	if ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("ACCEPT on the old leader: %+v", ar)
	}
	rr := onA.ack(2, "m1", 3, true, []ackSpec{{0, 2, []int8{4}}})
	if rr.ErrorCode != 0 || rr.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("RENEW on the old leader: %+v", rr)
	}
	// share-fetch-not-leader: the partition stays in A's session and
	// answers NOT_LEADER_OR_FOLLOWER with the new leader.
	nl := onA.fetch(2, "m1", 4, nil, func(r *kmsg.ShareFetchRequest) { r.Topics = nil })
	if p := partitionOf(t, nl); p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != bNode || len(p.AcquiredRecords) != 0 {
		t.Fatalf("share fetch on the old leader: %+v", p)
	}

	// The new leader hands them out again, at the count Kafka would.
	s.clock.Advance(10 * time.Second)
	onB := s.member(bNode)
	acquired(onB.fetch(2, "m2", 0, nil, nil), 2)
	// locks-die-with-leadership: m1's lock (due at +15 s) never fires.
	s.clock.Advance(6 * time.Second)
	wantRange(t, s.window(), "ACQUIRED", "m2", 2)
	fams := scrape(t, s.base)
	if got := metricValue(t, fams, "sharebroker_share_lock_expirations_total", nil); got != 0 {
		t.Fatalf("%v lock expirations; want 0", got)
	}
	if got := metricValue(t, fams, "sharebroker_share_records_released_on_leader_move_total", nil); got != 3 {
		t.Fatalf("%v records released on the move; want 3", got)
	}
	if got := metricValue(t, fams, "sharebroker_share_sessions", map[string]string{"node": fmt.Sprint(a)}); got != 1 {
		t.Fatalf("%v sessions on node %d; want 1", got, a)
	}

	// m1's acknowledgement of what it acquired on A fails on B too: the
	// records are m2's now. m2's succeeds.
	m1OnB := s.member(bNode)
	if p := partitionOf(t, m1OnB.fetch(2, "m1", 0, nil, nil)); len(p.AcquiredRecords) != 0 {
		t.Fatalf("m1 on the new leader: %+v", p)
	}
	if r := m1OnB.ack(2, "m1", 1, false, []ackSpec{{0, 2, []int8{1}}}); r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRecordState.Code {
		t.Fatalf("m1's ACCEPT on the new leader: %+v", r)
	}
	if r := onB.ack(2, "m2", 1, false, []ackSpec{{0, 2, []int8{1}}}); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("m2's ACCEPT on the new leader: %+v", r)
	}
	// The group's coordinator answers DescribeShareGroupOffsets (kgo
	// routes it there): nothing left to deliver.
	if start, lag := s.shareOffset("g"); start != 3 || lag != 0 {
		t.Fatalf("start %d lag %d; want 3 and 0", start, lag)
	}
}

// shareOffset returns the start offset and lag of t-0 for group, asking
// the group's coordinator.
func (s *moveSetup) shareOffset(group string) (start, lag int64) {
	s.t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Version = 1
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic, rt.Partitions = "t", []int32{0}
	g.Topics = append(g.Topics, rt)
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(s.ctx, s.cl)
	if err != nil || resp.Groups[0].ErrorCode != 0 {
		s.t.Fatalf("describe share group offsets: %v %+v", err, resp)
	}
	p := resp.Groups[0].Topics[0].Partitions[0]
	return p.StartOffset, p.Lag
}

// stop-fails-over with move-frees-acquired: a node that stops while it
// has records acquired hands its share partitions over like a move: the
// failover leader holds them AVAILABLE at the persisted count, and the
// stopped node's lock never fires.
func TestShareNodeStopHandsOver(t *testing.T) {
	s := newMoveSetup(t, 3)
	a := s.leader()
	onA := s.member(a)
	if p := partitionOf(t, onA.fetch(2, "m1", 0, nil, nil)); len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].DeliveryCount != 1 {
		t.Fatalf("m1 on node %d: %+v", a, p)
	}
	wantRange(t, s.window(), "ACQUIRED", "m1", 1)
	if err := s.b.StopNode(a); err != nil {
		t.Fatal(err)
	}
	w := s.window()
	if w.Leader == a {
		t.Fatalf("the stopped node %d still leads t-0", a)
	}
	// Acquiring is not persisted: the records were never delivered as far
	// as the failover leader knows, so they are not in flight at all and
	// come from the log again.
	if w.SPSO != 0 || len(w.Ranges) != 0 {
		t.Fatalf("after the stop: %+v; want SPSO 0 and nothing in flight", w)
	}
	s.clock.Advance(20 * time.Second) // past m1's 15 s lock: it never fires
	if w := s.window(); len(w.Ranges) != 0 {
		t.Fatalf("after the old lock's deadline: %+v", w)
	}
	if p := partitionOf(t, s.member(w.Leader).fetch(2, "m2", 0, nil, nil)); len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].DeliveryCount != 1 {
		t.Fatalf("m2 on the failover leader %d: %+v", w.Leader, p)
	}
}
