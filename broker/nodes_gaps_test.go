package broker_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/internal/batchtest"
	"github.com/sharebroker/sharebroker/internal/rawconn"
	"github.com/sharebroker/sharebroker/locktimer"
)

// createTopicWithConfig creates topic (one partition) with one config
// override over c.
func createTopicWithConfig(t *testing.T, c *rawconn.Conn, topic, name, value string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, -1
	rc := kmsg.NewCreateTopicsRequestTopicConfig()
	rc.Name, rc.Value = name, kmsg.StringPtr(value)
	rt.Configs = append(rt.Configs, rc)
	req.Topics = append(req.Topics, rt)
	resp := c.Request(req).(*kmsg.CreateTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %d %v", topic, resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage)
	}
}

// produceRaw sends one batch of n records to partition 0 of topic with
// acks and returns the partition's answer.
func produceRaw(t *testing.T, c *rawconn.Conn, topic string, acks int16, n int) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks, req.TimeoutMillis = acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batchtest.Plain(n).Build()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.Request(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// Rule: min-isr (docs/cluster.md): an acks=-1 Produce to a partition whose
// ISR (the nodes that are up) is smaller than min.insync.replicas answers
// NOT_ENOUGH_REPLICAS and appends nothing; acks=1 is not checked; a
// min.insync.replicas above the replica count is capped at it (Kafka's
// Partition.effectiveMinIsr).
func TestNodesMinInsyncReplicas(t *testing.T) {
	b, model := startNodes(t, 3)
	model.AddPartitions("m", 0, 1)
	model.AddPartitions("big", 0, 1)
	leader, _ := model.Leader("m", 0)
	c := rawconn.Dial(t, nodeListenerAddr(t, b, leader.Leader, "PLAINTEXT"))
	createTopicWithConfig(t, c, "m", "min.insync.replicas", "2")
	createTopicWithConfig(t, c, "big", "min.insync.replicas", "5")
	bl, _ := model.Leader("big", 0)
	cb := rawconn.Dial(t, nodeListenerAddr(t, b, bl.Leader, "PLAINTEXT"))
	if p := produceRaw(t, cb, "big", -1, 1); p.ErrorCode != 0 {
		t.Fatalf("min 5 capped at 3 replicas, all up: %+v", p)
	}

	var stopped []int32
	for id := int32(5); id < 8; id++ {
		if id != leader.Leader {
			stopped = append(stopped, id)
		}
	}
	if err := b.StopNode(stopped[0]); err != nil {
		t.Fatal(err)
	}
	if p := produceRaw(t, c, "m", -1, 1); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("ISR 2, min 2: %+v", p)
	}
	if err := b.StopNode(stopped[1]); err != nil {
		t.Fatal(err)
	}
	p := produceRaw(t, c, "m", -1, 1)
	if p.ErrorCode != kerr.NotEnoughReplicas.Code || p.BaseOffset != -1 || p.ErrorMessage != nil {
		t.Fatalf("ISR 1, min 2, acks=-1: %+v", p)
	}
	if p := produceRaw(t, c, "m", 1, 1); p.ErrorCode != 0 || p.BaseOffset != 1 {
		t.Fatalf("ISR 1, min 2, acks=1 (the refused batch must not be stored): %+v", p)
	}
	if err := b.StartNode(stopped[0]); err != nil {
		t.Fatal(err)
	}
	if p := produceRaw(t, c, "m", -1, 1); p.ErrorCode != 0 || p.BaseOffset != 2 {
		t.Fatalf("ISR 2 again: %+v", p)
	}
}

// Rule: fetch-from-follower (docs/cluster.md): a consumer's Fetch v11+ to
// a node that does not lead the partition is served from the replica —
// records, high watermark, PreferredReadReplica -1, no CurrentLeader —
// as Kafka serves it when FetchParams.fetchOnlyLeader is false (client
// metadata present, no replica selector); a long poll there wakes on an
// append through the leader; v10 and a follower broker's fetch still
// answer NOT_LEADER_OR_FOLLOWER.
func TestNodesFetchFromFollower(t *testing.T) {
	// The manual clock tells when the long poll below is parked: it arms
	// a timer for its MaxWaitMs (the retention loop holds one more, and
	// each node's idle sweep one, once that node has a connection).
	clock := locktimer.NewManualClock(time.UnixMilli(1_700_000_000_000))
	s := newLeaderSetup(t, clock)
	waitPending(t, clock, 4)
	if r := s.produce(t, s.leader(0), 10, 0, 3).Topics[0].Partitions[0]; r.ErrorCode != 0 {
		t.Fatalf("produce: %+v", r)
	}
	f := s.follower(0)
	for _, v := range []int16{11, 12, 13, 16, 18} {
		resp := s.fetch(t, f, v, 0, 0)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != 3 || p.LastStableOffset != 3 || p.LogStartOffset != 0 ||
			p.PreferredReadReplica != -1 || p.CurrentLeader.LeaderID != -1 || len(resp.Brokers) != 0 {
			t.Fatalf("v%d on a follower: %+v brokers %+v", v, p, resp.Brokers)
		}
	}
	if p := s.fetch(t, f, 10, 0, 0).Topics[0].Partitions[0]; p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("v10 on a follower: %+v", p)
	}
	if p := s.fetchAs(t, f, f, 16, 0, 0).Topics[0].Partitions[0]; p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != s.leader(0) {
		t.Fatalf("a follower broker's fetch: %+v", p)
	}

	// A long poll on the follower wakes when the leader appends.
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.MaxBytes, req.MinBytes, req.MaxWaitMillis = 1<<20, 1, 10000
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes, rp.FetchOffset, rp.CurrentLeaderEpoch = 0, 1<<20, 3, 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	poller := rawconn.Dial(t, nodeListenerAddr(t, s.b, f, "OTHER"))
	corr := poller.Send(req)
	waitPending(t, clock, 5)
	start := time.Now()
	if r := s.produce(t, s.leader(0), 10, 0, 1).Topics[0].Partitions[0]; r.ErrorCode != 0 {
		t.Fatalf("produce: %+v", r)
	}
	resp := poller.Recv(req, corr, 20*time.Second).(*kmsg.FetchResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != 4 || time.Since(start) > 5*time.Second {
		t.Fatalf("long poll on the follower: %+v after %v", p, time.Since(start))
	}

	// After a move the old leader is a follower: served with the new
	// epoch, fenced with the old one.
	old := s.leader(0)
	if _, err := s.b.MoveLeader("t", 0, f); err != nil {
		t.Fatal(err)
	}
	if p := s.fetch(t, old, 16, 1, 0).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.HighWatermark != 4 {
		t.Fatalf("old leader, new epoch: %+v", p)
	}
	if p := s.fetch(t, old, 16, 0, 0).Topics[0].Partitions[0]; p.ErrorCode != kerr.FencedLeaderEpoch.Code || p.CurrentLeader.LeaderID != f || p.CurrentLeader.LeaderEpoch != 1 {
		t.Fatalf("old leader, old epoch: %+v", p)
	}
}

// createAssigned creates topic with an explicit replica assignment (one
// list per partition) and returns the topic's answer.
func createAssigned(t *testing.T, c *rawconn.Conn, topic string, rf int16, parts int32, lists ...[]int32) kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, parts, rf
	for i, l := range lists {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), l
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	return c.Request(req).(*kmsg.CreateTopicsResponse).Topics[0]
}

// wantPlacement checks Metadata's leader, epoch, replicas and offline
// replicas for one partition.
func wantPlacement(t *testing.T, c *rawconn.Conn, topic string, p int32, leader, epoch int32, replicas, offline []int32) {
	t.Helper()
	md := metadataV12(t, c, topic).Topics[0]
	for _, mp := range md.Partitions {
		if mp.Partition != p {
			continue
		}
		if mp.ErrorCode != 0 || mp.Leader != leader || mp.LeaderEpoch != epoch || !slices.Equal(mp.Replicas, replicas) || !slices.Equal(mp.OfflineReplicas, offline) {
			t.Fatalf("%s-%d: leader %d epoch %d replicas %v offline %v, want %d %d %v %v", topic, p, mp.Leader, mp.LeaderEpoch, mp.Replicas, mp.OfflineReplicas, leader, epoch, replicas, offline)
		}
		return
	}
	t.Fatalf("%s-%d: not in metadata %+v", topic, p, md)
}

// Rule: replication-factor, explicit-assignment, create-while-down
// (docs/cluster.md): a replication factor must be -1 or 1 to N, and the
// topic gets N replicas in replica-order whatever it is; an explicit
// assignment must list every node once per partition, and its order is
// the replica list Metadata reports, its first live node the leader and
// the failover order; CreatePartitions honours it the same way.
func TestNodesReplicationFactorAndAssignment(t *testing.T) {
	b, _ := startNodes(t, 3)
	c := rawconn.Dial(t, nodeListenerAddr(t, b, 5, "PLAINTEXT"))

	for _, rf := range []int16{4, 0, -2} {
		if st := createAssigned(t, c, "rf", rf, 1); st.ErrorCode != kerr.InvalidReplicationFactor.Code || st.ErrorMessage == nil {
			t.Fatalf("replication factor %d: %d %v", rf, st.ErrorCode, st.ErrorMessage)
		}
	}
	if st := createAssigned(t, c, "rf", 4, 1); st.ErrorMessage == nil || !strings.Contains(*st.ErrorMessage, "3 brokers") {
		t.Fatalf("replication factor 4: message %v does not name the 3 brokers", st.ErrorMessage)
	}
	for _, rf := range []int16{1, 2, 3} {
		topic := fmt.Sprintf("rf%d", rf)
		if st := createAssigned(t, c, topic, rf, 1); st.ErrorCode != 0 || st.ReplicationFactor != 3 {
			t.Fatalf("replication factor %d: %+v", rf, st)
		}
		model, _ := cluster.New(5, 3)
		want := model.Replicas(topic, 0)
		wantPlacement(t, c, topic, 0, want[0], 0, want, []int32{})
	}

	for _, bad := range [][]int32{{5, 6}, {5, 5, 6}, {5, 6, 7, 8}, {5, 6, 9}} {
		if st := createAssigned(t, c, "bad", -1, -1, bad); st.ErrorCode != kerr.InvalidReplicaAssignment.Code {
			t.Fatalf("assignment %v: %d %v", bad, st.ErrorCode, st.ErrorMessage)
		}
	}
	if st := createAssigned(t, c, "a", -1, -1, []int32{7, 5, 6}, []int32{6, 7, 5}); st.ErrorCode != 0 || st.NumPartitions != 2 || st.ReplicationFactor != 3 {
		t.Fatalf("assigned: %+v", st)
	}
	wantPlacement(t, c, "a", 0, 7, 0, []int32{7, 5, 6}, []int32{})
	wantPlacement(t, c, "a", 1, 6, 0, []int32{6, 7, 5}, []int32{})

	// CreatePartitions with an assignment.
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "a", 3
	cpa := kmsg.NewCreatePartitionsRequestTopicAssignment()
	cpa.Replicas = []int32{5, 6}
	cpt.Assignment = append(cpt.Assignment, cpa)
	cp.Topics = append(cp.Topics, cpt)
	if st := c.Request(cp).(*kmsg.CreatePartitionsResponse).Topics[0]; st.ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("CreatePartitions with two of three nodes: %+v", st)
	}
	cp.Topics[0].Assignment[0].Replicas = []int32{5, 7, 6}
	if st := c.Request(cp).(*kmsg.CreatePartitionsResponse).Topics[0]; st.ErrorCode != 0 {
		t.Fatalf("CreatePartitions: %+v", st)
	}
	wantPlacement(t, c, "a", 2, 5, 0, []int32{5, 7, 6}, []int32{})

	// Failover follows the assigned order; a topic created while a node
	// is down is led by the first live node of its list.
	if err := b.StopNode(7); err != nil {
		t.Fatal(err)
	}
	wantPlacement(t, c, "a", 0, 5, 1, []int32{7, 5, 6}, []int32{7})
	wantPlacement(t, c, "a", 1, 6, 0, []int32{6, 7, 5}, []int32{7})
	if st := createAssigned(t, c, "down", -1, -1, []int32{7, 6, 5}); st.ErrorCode != 0 {
		t.Fatalf("create while down: %+v", st)
	}
	wantPlacement(t, c, "down", 0, 6, 0, []int32{7, 6, 5}, []int32{7})
}

// Rule: metadata-v0-filter (docs/cluster.md): with a node stopped,
// Metadata v0 lists only the live replicas and ISR, in replica order,
// and answers each partition REPLICA_NOT_AVAILABLE with its leader still
// given (Kafka's KRaftMetadataCache.maybeFilterAliveReplicas); v1 lists
// every replica and answers NONE.
func TestNodesMetadataV0FiltersStoppedReplicas(t *testing.T) {
	b, _ := startNodes(t, 3)
	c := rawconn.Dial(t, nodeListenerAddr(t, b, 5, "PLAINTEXT"))
	if st := createAssigned(t, c, "v0", -1, -1, []int32{6, 7, 5}); st.ErrorCode != 0 {
		t.Fatalf("create: %+v", st)
	}
	md := func(version int16) kmsg.MetadataResponseTopicPartition {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = version
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("v0")
		req.Topics = append(req.Topics, rt)
		return c.Request(req).(*kmsg.MetadataResponse).Topics[0].Partitions[0]
	}
	if p := md(0); p.ErrorCode != 0 || !slices.Equal(p.Replicas, []int32{6, 7, 5}) || !slices.Equal(p.ISR, []int32{6, 7, 5}) {
		t.Fatalf("v0, all up: %+v", p)
	}
	if err := b.StopNode(7); err != nil {
		t.Fatal(err)
	}
	if p := md(0); p.ErrorCode != kerr.ReplicaNotAvailable.Code || p.Leader != 6 || !slices.Equal(p.Replicas, []int32{6, 5}) || !slices.Equal(p.ISR, []int32{6, 5}) {
		t.Fatalf("v0, node 7 stopped: %+v", p)
	}
	if p := md(1); p.ErrorCode != 0 || p.Leader != 6 || !slices.Equal(p.Replicas, []int32{6, 7, 5}) || !slices.Equal(p.ISR, []int32{6, 5}) {
		t.Fatalf("v1, node 7 stopped: %+v", p)
	}
}

// Rule: describe-configs-broker-id (docs/cluster.md): a BROKER resource
// names the node asked or, empty, the cluster default; another node's ID
// answers INVALID_REQUEST in DescribeConfigs, AlterConfigs and
// IncrementalAlterConfigs, as Kafka's ConfigHelper.describeConfigs and
// ConfigAdminManager.validateResourceNameIsCurrentNodeId do.
func TestNodesBrokerConfigResourceIsTheNodeAsked(t *testing.T) {
	b, _ := startNodes(t, 3)
	c := rawconn.Dial(t, nodeListenerAddr(t, b, 6, "PLAINTEXT"))
	describe := func(name string) kmsg.DescribeConfigsResponseResource {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = 4
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, name
		req.Resources = append(req.Resources, rr)
		return c.Request(req).(*kmsg.DescribeConfigsResponse).Resources[0]
	}
	if r := describe("6"); r.ErrorCode != 0 || len(r.Configs) == 0 {
		t.Fatalf("own ID: %d %v, %d configs", r.ErrorCode, r.ErrorMessage, len(r.Configs))
	}
	if r := describe(""); r.ErrorCode != 0 {
		t.Fatalf("cluster default: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	for _, name := range []string{"5", "7"} {
		if r := describe(name); r.ErrorCode != kerr.InvalidRequest.Code || len(r.Configs) != 0 || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "6") {
			t.Fatalf("describe another node %s: %d %v", name, r.ErrorCode, r.ErrorMessage)
		}
	}

	alterCode := func(name string, incremental bool) int16 {
		if incremental {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, name
			req.Resources = append(req.Resources, rr)
			return c.Request(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
		}
		req := kmsg.NewPtrAlterConfigsRequest()
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, name
		req.Resources = append(req.Resources, rr)
		return c.Request(req).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode
	}
	for _, incremental := range []bool{false, true} {
		if code := alterCode("5", incremental); code != kerr.InvalidRequest.Code {
			t.Fatalf("alter (incremental %v) another node: %d", incremental, code)
		}
		if code := alterCode("6", incremental); code != 0 {
			t.Fatalf("alter (incremental %v) own ID, no change: %d", incremental, code)
		}
	}
}

// Rule: classic-reload-stored (docs/cluster.md §4.2): a classic group
// caught in a round when its coordinator moves appears on the new one as
// its last stored generation — Stable with the members and assignments of
// the last completed sync — so the old members' heartbeats go on with
// that generation, and a member that only joined during the round is
// unknown there.
func TestNodesClassicGroupReloadsStoredGeneration(t *testing.T) {
	n := startManualNodes(t, map[string]string{"group.initial.rebalance.delay.ms": "3000"})
	leaderConn, l, f := n.joinTwo(t)
	if l.Generation != 1 {
		t.Fatalf("leader's join: %+v", l)
	}
	sync := func(c *rawconn.Conn, member string, assign bool) int16 {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version = 3
		req.Group, req.MemberID, req.Generation = movedGroup, member, 1
		if assign {
			for _, m := range []string{l.MemberID, f.MemberID} {
				a := kmsg.NewSyncGroupRequestGroupAssignment()
				a.MemberID, a.MemberAssignment = m, []byte{0, 1}
				req.GroupAssignment = append(req.GroupAssignment, a)
			}
		}
		return c.Request(req).(*kmsg.SyncGroupResponse).ErrorCode
	}
	if code := sync(leaderConn, l.MemberID, true); code != 0 {
		t.Fatalf("leader's SyncGroup: %d", code)
	}
	if code := sync(n.conns[0], f.MemberID, false); code != 0 {
		t.Fatalf("follower's SyncGroup: %d", code)
	}
	heartbeat := func(c *rawconn.Conn, member string) int16 {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version = 3
		req.Group, req.MemberID, req.Generation = movedGroup, member, 1
		return c.Request(req).(*kmsg.HeartbeatResponse).ErrorCode
	}
	for len(n.parked) > 0 {
		<-n.parked
	}

	// A third member starts a round; the group is caught in it.
	third := classicJoin("")
	third.Version = 4 // MEMBER_ID_REQUIRED hands it an ID first
	id := n.conns[0].Request(third).(*kmsg.JoinGroupResponse)
	if id.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("third member's first JoinGroup: %+v", id)
	}
	third.MemberID = id.MemberID
	tc := n.conns[0].Send(third)
	n.waitParked(t, "third member's JoinGroup")
	if code := heartbeat(leaderConn, l.MemberID); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat during the round: %d", code)
	}
	if err := n.b.MoveCoordinator(cluster.Group, movedGroup, 1); err != nil {
		t.Fatal(err)
	}
	if resp := recvJoin(t, n.conns[0], third, tc, 5*time.Second, "third member's JoinGroup after the move").(*kmsg.JoinGroupResponse); resp.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("parked JoinGroup after the move: %+v", resp)
	}

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{movedGroup}
	g := n.conns[1].Request(dg).(*kmsg.DescribeGroupsResponse).Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != 2 {
		t.Fatalf("group on the new coordinator: state %s, %d members, error %d", g.State, len(g.Members), g.ErrorCode)
	}
	for _, m := range []string{l.MemberID, f.MemberID} {
		if code := heartbeat(n.conns[1], m); code != 0 {
			t.Fatalf("heartbeat of stored member %s on the new coordinator: %d", m, code)
		}
	}
	if code := sync(n.conns[1], f.MemberID, false); code != 0 {
		t.Fatalf("follower's SyncGroup (stored assignment) on the new coordinator: %d", code)
	}
	third.Version = 4
	if resp := n.conns[1].Request(third).(*kmsg.JoinGroupResponse); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("third member's rejoin on the new coordinator: %+v", resp)
	}
}
