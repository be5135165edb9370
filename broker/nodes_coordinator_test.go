package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/cluster"
)

// Rule: not-coordinator (docs/cluster.md): a node that does not
// coordinate a group answers every group API for it with NOT_COORDINATOR —
// per group where the request names several — and the coordinator serves
// it; ListGroups on each node lists only the groups it coordinates.
func TestNodesGroupAPIsNotCoordinator(t *testing.T) {
	const g = "g"
	s, coord, other := coordinatorSetup(t, cluster.Group, g)
	c, nc := s.conns[other], kerr.NotCoordinator.Code

	join := kmsg.NewPtrJoinGroupRequest()
	join.Version = 9
	join.Group, join.MemberID, join.ProtocolType = g, "m", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 30000, 30000
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version = 5
	sync.Group, sync.MemberID, sync.Generation = g, "m", 1
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version = 4
	hb.Group, hb.MemberID, hb.Generation = g, "m", 1
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version = 4
	leave.Group = g
	commit := simpleCommit(g)
	fetchOld := kmsg.NewPtrOffsetFetchRequest()
	fetchOld.Version = 7
	fetchOld.Group = g
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 8
	for _, id := range []string{g, "elsewhere-0"} {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = id
		fetch.Groups = append(fetch.Groups, rg)
	}
	odel := kmsg.NewPtrOffsetDeleteRequest()
	odel.Group = g
	cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgh.Group, cgh.MemberID, cgh.MemberEpoch = g, "m", 0
	cgh.RebalanceTimeoutMillis, cgh.SubscribedTopicNames = 30000, []string{"t"}
	sgh := kmsg.NewPtrShareGroupHeartbeatRequest()
	sgh.Version = 1
	sgh.GroupID, sgh.MemberID, sgh.MemberEpoch, sgh.SubscribedTopicNames = g, "m", 0, []string{"t"}
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = g
	sdel := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	sdel.GroupID = g
	toc := kmsg.NewPtrTxnOffsetCommitRequest()
	toc.Version = 3
	toc.TransactionalID, toc.Group, toc.ProducerID, toc.ProducerEpoch, toc.Generation = "x", g, 1, 0, -1
	tt := kmsg.NewTxnOffsetCommitRequestTopic()
	tt.Topic = "t"
	tt.Partitions = append(tt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
	toc.Topics = append(toc.Topics, tt)

	single := []struct {
		name string
		req  kmsg.Request
		code func(kmsg.Response) int16
	}{
		{"JoinGroup", join, func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode }},
		{"SyncGroup", sync, func(r kmsg.Response) int16 { return r.(*kmsg.SyncGroupResponse).ErrorCode }},
		{"Heartbeat", hb, func(r kmsg.Response) int16 { return r.(*kmsg.HeartbeatResponse).ErrorCode }},
		{"LeaveGroup", leave, func(r kmsg.Response) int16 { return r.(*kmsg.LeaveGroupResponse).ErrorCode }},
		{"OffsetCommit", commit, func(r kmsg.Response) int16 { return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode }},
		{"OffsetFetch v7", fetchOld, func(r kmsg.Response) int16 { return r.(*kmsg.OffsetFetchResponse).ErrorCode }},
		{"OffsetFetch v8", fetch, func(r kmsg.Response) int16 { return r.(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode }},
		{"OffsetDelete", odel, func(r kmsg.Response) int16 { return r.(*kmsg.OffsetDeleteResponse).ErrorCode }},
		{"ConsumerGroupHeartbeat", cgh, func(r kmsg.Response) int16 { return r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode }},
		{"ShareGroupHeartbeat", sgh, func(r kmsg.Response) int16 { return r.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode }},
		{"AlterShareGroupOffsets", alter, func(r kmsg.Response) int16 { return r.(*kmsg.AlterShareGroupOffsetsResponse).ErrorCode }},
		{"DeleteShareGroupOffsets", sdel, func(r kmsg.Response) int16 { return r.(*kmsg.DeleteShareGroupOffsetsResponse).ErrorCode }},
		{"TxnOffsetCommit", toc, func(r kmsg.Response) int16 {
			return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
		}},
	}
	for _, tc := range single {
		if code := tc.code(c.Request(tc.req)); code != nc {
			t.Errorf("%s on node %d: error %d, want NOT_COORDINATOR", tc.name, other, code)
		}
	}
	// OffsetFetch v8 answers per group: the other group may be ours.
	if resp := c.Request(fetch).(*kmsg.OffsetFetchResponse); s.model.Coordinator(cluster.Group, "elsewhere-0") == other && resp.Groups[1].ErrorCode != 0 {
		t.Errorf("OffsetFetch v8, a group node %d coordinates: %+v", other, resp.Groups[1])
	}

	// Per-group describes and deletes: g refused, a group the node
	// coordinates answered.
	var mine string
	for i := 0; mine == ""; i++ {
		if id := "mine-" + string(rune('a'+i)); s.model.Coordinator(cluster.Group, id) == other {
			mine = id
		}
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version = 5
	dg.Groups = []string{g, mine}
	if r := c.Request(dg).(*kmsg.DescribeGroupsResponse); r.Groups[0].ErrorCode != nc || r.Groups[1].ErrorCode != 0 {
		t.Errorf("DescribeGroups: %+v", r.Groups)
	}
	cgd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cgd.Groups = []string{g, mine}
	if r := c.Request(cgd).(*kmsg.ConsumerGroupDescribeResponse); r.Groups[0].ErrorCode != nc || r.Groups[1].ErrorCode == nc {
		t.Errorf("ConsumerGroupDescribe: %+v", r.Groups)
	}
	sgd := &kmsg.ShareGroupDescribeRequest{Version: 1, GroupIDs: []string{g, mine}}
	if r := c.Request(sgd).(*kmsg.ShareGroupDescribeResponse); r.Groups[0].ErrorCode != nc || r.Groups[1].ErrorCode == nc {
		t.Errorf("ShareGroupDescribe: %+v", r.Groups)
	}
	dso := &kmsg.DescribeShareGroupOffsetsRequest{Groups: []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: g}, {GroupID: mine}}}
	if r := c.Request(dso).(*kmsg.DescribeShareGroupOffsetsResponse); r.Groups[0].ErrorCode != nc || r.Groups[1].ErrorCode != 0 {
		t.Errorf("DescribeShareGroupOffsets: %+v", r.Groups)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version = 2
	del.Groups = []string{g, mine}
	if r := c.Request(del).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != nc || r.Groups[1].ErrorCode == nc {
		t.Errorf("DeleteGroups: %+v", r.Groups)
	}

	// The coordinator serves g: a simple commit makes the group, which
	// ListGroups then shows on the coordinator only.
	if code := single[4].code(s.conns[coord].Request(commit)); code != 0 {
		t.Fatalf("OffsetCommit on the coordinator: %d", code)
	}
	for node, conn := range s.conns {
		lg := kmsg.NewPtrListGroupsRequest()
		lg.Version = 5
		resp := conn.Request(lg).(*kmsg.ListGroupsResponse)
		listed := len(resp.Groups) == 1 && resp.Groups[0].Group == g
		if listed != (node == coord) || (node != coord && len(resp.Groups) != 0) {
			t.Errorf("ListGroups on node %d (coordinator %d): %+v", node, coord, resp.Groups)
		}
	}
}

// Rule: not-coordinator: a node that does not coordinate a transactional
// ID answers the transaction APIs for it with NOT_COORDINATOR;
// InitProducerId without one is answered anywhere; ListTransactions on
// each node lists only its own.
func TestNodesTxnAPIsNotCoordinator(t *testing.T) {
	const x = "x"
	s, coord, other := coordinatorSetup(t, cluster.Transaction, x)
	c, nc := s.conns[other], kerr.NotCoordinator.Code

	init := &kmsg.InitProducerIDRequest{Version: 4, TransactionalID: kmsg.StringPtr(x), TransactionTimeoutMillis: 60000, ProducerID: -1, ProducerEpoch: -1}
	if r := c.Request(init).(*kmsg.InitProducerIDResponse); r.ErrorCode != nc || r.ProducerID != -1 || r.ProducerEpoch != -1 {
		t.Errorf("InitProducerId elsewhere: %+v", r)
	}
	idem := kmsg.NewPtrInitProducerIDRequest()
	idem.Version = 4
	if r := c.Request(idem).(*kmsg.InitProducerIDResponse); r.ErrorCode != 0 {
		t.Errorf("idempotent InitProducerId: %+v", r)
	}
	r := s.conns[coord].Request(init).(*kmsg.InitProducerIDResponse)
	if r.ErrorCode != 0 {
		t.Fatalf("InitProducerId on the coordinator: %+v", r)
	}
	apt := kmsg.NewPtrAddPartitionsToTxnRequest()
	apt.Version = 3
	apt.TransactionalID, apt.ProducerID, apt.ProducerEpoch = x, r.ProducerID, r.ProducerEpoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "t", []int32{0}
	apt.Topics = append(apt.Topics, at)
	if resp := c.Request(apt).(*kmsg.AddPartitionsToTxnResponse); resp.Topics[0].Partitions[0].ErrorCode != nc {
		t.Errorf("AddPartitionsToTxn elsewhere: %+v", resp.Topics)
	}
	aot := kmsg.NewPtrAddOffsetsToTxnRequest()
	aot.Version = 3
	aot.TransactionalID, aot.ProducerID, aot.ProducerEpoch, aot.Group = x, r.ProducerID, r.ProducerEpoch, "g"
	if resp := c.Request(aot).(*kmsg.AddOffsetsToTxnResponse); resp.ErrorCode != nc {
		t.Errorf("AddOffsetsToTxn elsewhere: %+v", resp)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.Version = 3
	end.TransactionalID, end.ProducerID, end.ProducerEpoch = x, r.ProducerID, r.ProducerEpoch
	if resp := c.Request(end).(*kmsg.EndTxnResponse); resp.ErrorCode != nc {
		t.Errorf("EndTxn elsewhere: %+v", resp)
	}
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{x}
	if resp := c.Request(dt).(*kmsg.DescribeTransactionsResponse); resp.TransactionStates[0].ErrorCode != nc {
		t.Errorf("DescribeTransactions elsewhere: %+v", resp.TransactionStates)
	}
	if resp := s.conns[coord].Request(dt).(*kmsg.DescribeTransactionsResponse); resp.TransactionStates[0].ErrorCode != 0 {
		t.Errorf("DescribeTransactions on the coordinator: %+v", resp.TransactionStates)
	}
	for node, conn := range s.conns {
		lt := kmsg.NewPtrListTransactionsRequest()
		resp := conn.Request(lt).(*kmsg.ListTransactionsResponse)
		if listed := len(resp.TransactionStates) == 1; listed != (node == coord) {
			t.Errorf("ListTransactions on node %d (coordinator %d): %+v", node, coord, resp.TransactionStates)
		}
	}
}

// coordinatorSetup is a leaderSetup with the node that coordinates key and
// one that does not.
func coordinatorSetup(t *testing.T, typ cluster.CoordinatorType, key string) (s *leaderSetup, coord, other int32) {
	t.Helper()
	s = newLeaderSetup(t)
	coord = s.model.Coordinator(typ, key)
	return s, coord, 5 + (coord-5+1)%3
}
