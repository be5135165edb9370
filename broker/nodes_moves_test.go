package broker_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/httpapi"
	"github.com/sharebroker/sharebroker/internal/rawconn"
	"github.com/sharebroker/sharebroker/internal/testbroker"
	"github.com/sharebroker/sharebroker/locktimer"
)

// startMoveNodes runs n nodes (IDs 0..n-1) with the HTTP server and the
// test API, and returns the broker and the HTTP base URL.
func startMoveNodes(t *testing.T, n int) (*broker.Broker, string) {
	t.Helper()
	b := testbroker.Start(t, broker.Config{Nodes: n, HTTP: "127.0.0.1:0", EnableTestAPI: true})
	return b, "http://" + b.HTTPAddr().String()
}

// clusterNow is GET /v1/cluster, raw: equal bytes mean nothing changed.
func clusterNow(t *testing.T, base string) string {
	t.Helper()
	status, body := httpGet(t, base+"/v1/cluster")
	if status != http.StatusOK {
		t.Fatalf("GET /v1/cluster: %d %s", status, body)
	}
	return string(body)
}

// leaderOf is partition p's entry in b.Cluster().
func leaderOf(t *testing.T, b *broker.Broker, topic string, p int32) httpapi.LeadershipJSON {
	t.Helper()
	for _, l := range b.Cluster().Partitions {
		if l.Topic == topic && l.Partition == p {
			return l
		}
	}
	t.Fatalf("%s-%d not in the cluster", topic, p)
	return httpapi.LeadershipJSON{}
}

// Rules: leader-move, coordinator-move, last-node-stays (docs/cluster.md
// §8): every test endpoint answers 200 with the changed entry, and every
// refusal answers its status with a message and changes nothing.
func TestNodesMoveAPI(t *testing.T) {
	b, base := startMoveNodes(t, 3)
	c := rawconn.Dial(t, b.NodeAddrs()[0].String())
	createTopicRaw(t, c, "t", 3)

	for _, tc := range []struct {
		path, body string
		status     int
	}{
		{"/v1/test/leaders", `not json`, http.StatusBadRequest},
		{"/v1/test/leaders", `{"topic":"t","partition":0,"node":1,"extra":1}`, http.StatusBadRequest},
		{"/v1/test/leaders", `{"topic":"t","node":1}`, http.StatusBadRequest},
		{"/v1/test/leaders", `{"partition":0,"node":1}`, http.StatusBadRequest},
		{"/v1/test/leaders", `{"topic":"t","partition":0}`, http.StatusBadRequest},
		{"/v1/test/leaders", `{"topic":"t","partition":-1,"node":1}`, http.StatusBadRequest},
		{"/v1/test/leaders", `{"topic":"nope","partition":0,"node":1}`, http.StatusNotFound},
		{"/v1/test/leaders", `{"topic":"t","partition":3,"node":1}`, http.StatusNotFound},
		{"/v1/test/leaders", `{"topic":"t","partition":0,"node":3}`, http.StatusNotFound},
		{"/v1/test/coordinators", `{"node":1}`, http.StatusBadRequest},
		{"/v1/test/coordinators", `{"group":"g","transactional_id":"x","node":1}`, http.StatusBadRequest},
		{"/v1/test/coordinators", `{"group":"g"}`, http.StatusBadRequest},
		{"/v1/test/coordinators", `{"group":"","node":1}`, http.StatusBadRequest},
		{"/v1/test/coordinators", `{"group":"g","node":-1}`, http.StatusNotFound},
		{"/v1/test/coordinators", `{"transactional_id":"x","node":9}`, http.StatusNotFound},
		{"/v1/test/nodes/x/stop", ``, http.StatusBadRequest},
		{"/v1/test/nodes/3/stop", ``, http.StatusNotFound},
		{"/v1/test/nodes/1/start", ``, http.StatusConflict}, // running
	} {
		before := clusterNow(t, base)
		status, body := httpPost(t, base+tc.path, tc.body)
		var msg map[string]string
		if status != tc.status || json.Unmarshal(body, &msg) != nil || msg["error"] == "" {
			t.Errorf("POST %s %s: %d %s, want %d with a message", tc.path, tc.body, status, body, tc.status)
		}
		if after := clusterNow(t, base); after != before {
			t.Errorf("POST %s %s changed the cluster:\n%s\n%s", tc.path, tc.body, before, after)
		}
	}

	// 200s, each with the changed entry.
	from := leaderOf(t, b, "t", 0)
	to := (from.Leader + 1) % 3
	var l httpapi.LeadershipJSON
	postOK(t, base+"/v1/test/leaders", fmt.Sprintf(`{"topic":"t","partition":0,"node":%d}`, to), &l)
	if l != (httpapi.LeadershipJSON{Topic: "t", Partition: 0, Leader: to, LeaderEpoch: 1}) {
		t.Fatalf("moved: %+v", l)
	}
	var co httpapi.CoordinatorJSON
	postOK(t, base+"/v1/test/coordinators", `{"group":"g","node":2}`, &co)
	if co != (httpapi.CoordinatorJSON{Key: "g", Type: "group", Node: 2}) {
		t.Fatalf("group moved: %+v", co)
	}
	postOK(t, base+"/v1/test/coordinators", `{"transactional_id":"x","node":1}`, &co)
	if co != (httpapi.CoordinatorJSON{Key: "x", Type: "transaction", Node: 1}) {
		t.Fatalf("transactional ID moved: %+v", co)
	}
	var n httpapi.NodeJSON
	postOK(t, base+"/v1/test/nodes/1/stop", ``, &n)
	if n.ID != 1 || n.Up || n.Addr != b.Cluster().Nodes[1].Addr {
		t.Fatalf("stopped: %+v", n)
	}
	postOK(t, base+"/v1/test/nodes/0/stop", ``, &n)

	// 409s: a stopped node, the last live node, a node already stopped.
	for _, tc := range []struct{ path, body string }{
		{"/v1/test/leaders", `{"topic":"t","partition":0,"node":1}`},
		{"/v1/test/coordinators", `{"group":"g","node":0}`},
		{"/v1/test/nodes/2/stop", ``},
		{"/v1/test/nodes/1/stop", ``},
	} {
		before := clusterNow(t, base)
		if status, body := httpPost(t, base+tc.path, tc.body); status != http.StatusConflict {
			t.Errorf("POST %s %s: %d %s, want 409", tc.path, tc.body, status, body)
		}
		if after := clusterNow(t, base); after != before {
			t.Errorf("POST %s %s changed the cluster", tc.path, tc.body)
		}
	}
	postOK(t, base+"/v1/test/nodes/1/start", ``, &n)
	if n.ID != 1 || !n.Up {
		t.Fatalf("started: %+v", n)
	}
	for _, p := range b.Cluster().Partitions {
		if p.Leader != 2 {
			t.Errorf("%+v: everything should be on node 2, the only node up through both stops", p)
		}
	}
}

func postOK(t *testing.T, url, body string, out any) {
	t.Helper()
	status, got := httpPost(t, url, body)
	if status != http.StatusOK {
		t.Fatalf("POST %s %s: %d %s", url, body, status, got)
	}
	if err := json.Unmarshal(got, out); err != nil {
		t.Fatalf("POST %s: %v in %s", url, err, got)
	}
}

// Without --enable-test-api the move endpoints do not exist.
func TestNodesMoveAPINeedsTestAPI(t *testing.T) {
	b := testbroker.Start(t, broker.Config{Nodes: 2, HTTP: "127.0.0.1:0"})
	base := "http://" + b.HTTPAddr().String()
	for _, path := range []string{"/v1/test/leaders", "/v1/test/coordinators", "/v1/test/nodes/0/stop", "/v1/test/nodes/0/start"} {
		if status, _ := httpPost(t, base+path, `{}`); status != http.StatusNotFound {
			t.Errorf("POST %s: %d, want 404", path, status)
		}
	}
}

// Rules: stop-fails-over, start-as-follower, stop-closes-connections,
// metadata-partition: stopping a node fails over every partition it led —
// also of a topic no client ever asked about — at the next epoch, with
// the new epoch in the history; its connections close and its port
// refuses; Metadata lists it nowhere but OfflineReplicas. Started again,
// it is back on the same port and leads nothing.
func TestNodesStopStart(t *testing.T) {
	b, _ := startMoveNodes(t, 3)
	addrs := b.NodeAddrs()
	c0 := rawconn.Dial(t, addrs[0].String())
	createTopicRaw(t, c0, "cold", 6) // never looked up before the stop
	model, _ := cluster.New(0, 3)
	model.AddPartitions("cold", 0, 6)
	on1 := rawconn.Dial(t, addrs[1].String())

	if err := b.StopNode(1); err != nil {
		t.Fatal(err)
	}
	on1.ExpectClosed()
	if nc, err := net.DialTimeout("tcp", addrs[1].String(), rawconn.IOTimeout); err == nil {
		nc.Close()
		t.Fatal("a stopped node accepted a connection")
	}
	moved := 0
	for p := range int32(6) {
		want, _ := model.Leader("cold", p)
		got := leaderOf(t, b, "cold", p)
		if want.Leader == 1 {
			moved++
			if got.Leader != model.Replicas("cold", p)[1] || got.LeaderEpoch != 1 {
				t.Errorf("cold-%d: %+v, want the next replica at epoch 1", p, got)
			}
		} else if got.Leader != want.Leader || got.LeaderEpoch != 0 {
			t.Errorf("cold-%d: %+v, want %+v", p, got, want)
		}
	}
	if moved != 2 {
		t.Fatalf("%d partitions of cold were on node 1, want 2", moved)
	}
	md := metadataV12(t, c0, "cold")
	if len(md.Brokers) != 2 || md.Brokers[0].NodeID != 0 || md.Brokers[1].NodeID != 2 {
		t.Fatalf("brokers %+v", md.Brokers)
	}
	for _, p := range md.Topics[0].Partitions {
		if len(p.Replicas) != 3 || len(p.ISR) != 2 || len(p.OfflineReplicas) != 1 || p.OfflineReplicas[0] != 1 || p.Leader == 1 {
			t.Errorf("partition %+v", p)
		}
	}
	if err := b.StartNode(1); err != nil {
		t.Fatal(err)
	}
	if got := b.NodeAddrs()[1].String(); got != addrs[1].String() {
		t.Fatalf("node 1 came back on %s, not %s", got, addrs[1])
	}
	back := rawconn.Dial(t, addrs[1].String())
	md = metadataV12(t, back, "cold")
	if len(md.Brokers) != 3 {
		t.Fatalf("brokers after start %+v", md.Brokers)
	}
	for _, p := range md.Topics[0].Partitions {
		if p.Leader == 1 || len(p.ISR) != 3 || len(p.OfflineReplicas) != 0 {
			t.Errorf("after start: %+v", p)
		}
	}
	// epoch-cache: the failover's epoch starts at the log end (0).
	olr := kmsg.NewPtrOffsetForLeaderEpochRequest()
	olr.Version, olr.ReplicaID = 4, -1
	ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ot.Topic = "cold"
	for p := range int32(6) {
		op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		op.Partition, op.CurrentLeaderEpoch, op.LeaderEpoch = p, -1, 0
		ot.Partitions = append(ot.Partitions, op)
	}
	olr.Topics = append(olr.Topics, ot)
	for id, conn := range map[int32]*rawconn.Conn{0: c0, 2: rawconn.Dial(t, addrs[2].String())} {
		for _, p := range conn.Request(olr).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions {
			if l := leaderOf(t, b, "cold", p.Partition); l.Leader == id && (p.ErrorCode != 0 || p.LeaderEpoch != 0 || p.EndOffset != 0) {
				t.Errorf("node %d, cold-%d epoch 0: %+v", id, p.Partition, p)
			}
		}
	}
}

func metadataV12(t *testing.T, c *rawconn.Conn, topic string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	return c.Request(req).(*kmsg.MetadataResponse)
}

// Rule: move-wakes-polls: a Fetch parked on the leader (MaxWaitMs a
// minute, nothing to read) answers FENCED_LEADER_EPOCH with the new
// leader as soon as the partition moves, well before its wait is up; one
// sent without an epoch keeps waiting, since the old leader, now a
// follower, serves it (fetch-from-follower; Kafka's DelayedFetch
// completes early only on an error); the connection stays open
// (move-keeps-connections).
func TestNodesMoveWakesFetch(t *testing.T) {
	// On the manual clock each parked fetch arms a timer for its
	// MaxWaitMs (the retention loop holds one more), so the test knows
	// both fetches wait before it moves the leader.
	clock := locktimer.NewManualClock(time.UnixMilli(1_700_000_000_000))
	// No idle sweep (connections-max-idle): its timer would count too.
	b := testbroker.Start(t, broker.Config{Nodes: 3, Clock: clock, Props: map[string]string{"connections.max.idle.ms": "-1"}})
	waitPending(t, clock, 1)
	c0 := rawconn.Dial(t, b.NodeAddrs()[0].String())
	createTopicRaw(t, c0, "t", 1)
	leader := leaderOf(t, b, "t", 0).Leader
	c := rawconn.Dial(t, b.NodeAddrs()[leader].String())
	cAny := rawconn.Dial(t, b.NodeAddrs()[leader].String())

	fetch := func(epoch int32) *kmsg.FetchRequest {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 16
		req.ReplicaID, req.MaxBytes, req.MinBytes, req.MaxWaitMillis = -1, 1<<20, 1, 60_000
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = metadataV12(t, c0, "t").Topics[0].TopicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, epoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	req, reqAny := fetch(0), fetch(-1)
	corr, corrAny := c.Send(req), cAny.Send(reqAny)
	waitPending(t, clock, 3)
	to := (leader + 1) % 3
	if _, err := b.MoveLeader("t", 0, to); err != nil {
		t.Fatal(err)
	}
	resp := c.Recv(req, corr, 10*time.Second).(*kmsg.FetchResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != kerr.FencedLeaderEpoch.Code || p.CurrentLeader.LeaderID != to || p.CurrentLeader.LeaderEpoch != 1 {
		t.Fatalf("woken fetch: %+v", p)
	}
	// The fetch without an epoch is served by the old leader as a
	// follower (fetch-from-follower): it is still parked, its timer armed.
	if n := clock.Pending(); n != 2 {
		t.Fatalf("%d timers pending after the move; want the retention loop's and the epoch-less fetch's", n)
	}
	if _, err := cAny.TryRecv(reqAny, corrAny, 100*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the fetch without an epoch answered after the move: %v", err)
	}
	c.ExpectOpen()
}

// movedGroup is the group the tests below move; it starts pinned to node 0
// and moves to node 1.
const movedGroup = "moved"

// manualNodes is three nodes (IDs 0-2) on a manual clock, so that no
// round, session or initial delay ends unless the test advances it, with
// movedGroup pinned to node 0 and a raw connection to each node.
type manualNodes struct {
	b     *broker.Broker
	clk   *locktimer.ManualClock
	conns []*rawconn.Conn
	// parked receives once each time a JoinGroup or SyncGroup waits.
	parked chan struct{}
}

func startManualNodes(t *testing.T, props map[string]string) *manualNodes {
	t.Helper()
	n := &manualNodes{clk: locktimer.NewManualClock(time.Unix(1_700_000_000, 0)), parked: make(chan struct{}, 64)}
	b, err := broker.New(broker.Config{Nodes: 3, Listen: "127.0.0.1:0", Clock: n.clk, Props: props, Logger: testbroker.Logger(t, slog.LevelInfo)})
	if err != nil {
		t.Fatal(err)
	}
	broker.SetAwaitHook(b, func(func() bool) { n.parked <- struct{}{} })
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := testbroker.Close(b); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	n.b = b
	for _, a := range b.NodeAddrs() {
		n.conns = append(n.conns, rawconn.Dial(t, a.String()))
	}
	createTopicRaw(t, n.conns[0], "t", 1)
	if err := b.MoveCoordinator(cluster.Group, movedGroup, 0); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitParked waits, bounded, until a JoinGroup or SyncGroup is waiting.
func (n *manualNodes) waitParked(t *testing.T, what string) {
	t.Helper()
	select {
	case <-n.parked:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: not waiting within 5s", what)
	}
}

func classicJoin(memberID string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 3 // before KIP-394: no MEMBER_ID_REQUIRED round trip
	req.Group, req.MemberID, req.ProtocolType = movedGroup, memberID, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 60000
	meta := kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", meta.AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	return req
}

// recvJoin waits, bounded by d, for the answer to a JoinGroup sent with
// corr; a missing answer fails the test with what it means.
func recvJoin(t *testing.T, c *rawconn.Conn, req kmsg.Request, corr int32, d time.Duration, what string) kmsg.Response {
	t.Helper()
	resp, err := c.TryRecv(req, corr, d)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: no answer within %v", what, d)
	}
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Rules: unload-answers-parked, coordinator-move (docs/cluster.md §4.2,
// §4.3): a JoinGroup waiting for its round on the
// coordinator answers NOT_COORDINATOR as soon as the group moves, without
// waiting for the round to end (here the initial delay of a new group,
// which the manual clock never ends); the member then joins on the new
// coordinator and the round completes there.
func TestNodesParkedJoinAnswersNotCoordinatorOnMove(t *testing.T) {
	n := startManualNodes(t, map[string]string{"group.initial.rebalance.delay.ms": "3000"})
	join := classicJoin("")
	corr := n.conns[0].Send(join)
	n.waitParked(t, "JoinGroup of a new group")
	if err := n.b.MoveCoordinator(cluster.Group, movedGroup, 1); err != nil {
		t.Fatal(err)
	}
	resp := recvJoin(t, n.conns[0], join, corr, 5*time.Second, "parked JoinGroup after the move").(*kmsg.JoinGroupResponse)
	if resp.ErrorCode != kerr.NotCoordinator.Code || resp.MemberID == "" {
		t.Fatalf("parked JoinGroup after the move: error %d, member %q; want NOT_COORDINATOR with the member ID", resp.ErrorCode, resp.MemberID)
	}
	// The group was never stored (classic-reload-stored), so the new
	// coordinator does not know the member: its rejoin is
	// UNKNOWN_MEMBER_ID, and it joins afresh, the round ending there.
	again := classicJoin(resp.MemberID)
	if got := n.conns[1].Request(again).(*kmsg.JoinGroupResponse); got.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("rejoin with the old member ID on the new coordinator: %+v", got)
	}
	fresh := classicJoin("")
	corr = n.conns[1].Send(fresh)
	n.waitParked(t, "JoinGroup on the new coordinator")
	n.clk.Advance(6 * time.Second) // the initial delay
	got := recvJoin(t, n.conns[1], fresh, corr, 5*time.Second, "JoinGroup on the new coordinator").(*kmsg.JoinGroupResponse)
	if got.ErrorCode != 0 || got.MemberID == "" || got.LeaderID != got.MemberID || got.Generation != 1 {
		t.Fatalf("JoinGroup on the new coordinator: %+v", got)
	}
}

// joinTwo joins a leader (on a connection of its own) and a follower
// (on n.conns[0]) to movedGroup on node 0 and returns the leader's
// connection and both answers, generation 1.
func (n *manualNodes) joinTwo(t *testing.T) (*rawconn.Conn, *kmsg.JoinGroupResponse, *kmsg.JoinGroupResponse) {
	t.Helper()
	leaderConn := rawconn.Dial(t, n.b.NodeAddrs()[0].String())
	lj, fj := classicJoin(""), classicJoin("")
	lc := leaderConn.Send(lj)
	n.waitParked(t, "leader's JoinGroup")
	fc := n.conns[0].Send(fj)
	n.waitParked(t, "follower's JoinGroup")
	n.clk.Advance(6 * time.Second) // two initial delays: the follower joined during the first
	l := recvJoin(t, leaderConn, lj, lc, 5*time.Second, "leader's JoinGroup").(*kmsg.JoinGroupResponse)
	f := recvJoin(t, n.conns[0], fj, fc, 5*time.Second, "follower's JoinGroup").(*kmsg.JoinGroupResponse)
	if l.ErrorCode != 0 || f.ErrorCode != 0 || l.LeaderID != l.MemberID || f.MemberID == l.MemberID {
		t.Fatalf("joins: leader %+v, follower %+v", l, f)
	}
	return leaderConn, l, f
}

// Rule: unload-answers-parked: a follower's SyncGroup waiting
// for the leader's assignment answers NOT_COORDINATOR as soon as the group
// moves, not when the leader syncs or the sync timeout ends.
func TestNodesParkedSyncAnswersNotCoordinatorOnMove(t *testing.T) {
	n := startManualNodes(t, map[string]string{"group.initial.rebalance.delay.ms": "3000"})
	_, _, f := n.joinTwo(t)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version = 3
	sync.Group, sync.MemberID, sync.Generation = movedGroup, f.MemberID, f.Generation
	sc := n.conns[0].Send(sync)
	n.waitParked(t, "follower's SyncGroup before the leader's")
	if err := n.b.MoveCoordinator(cluster.Group, movedGroup, 1); err != nil {
		t.Fatal(err)
	}
	resp := recvJoin(t, n.conns[0], sync, sc, 5*time.Second, "parked SyncGroup after the move").(*kmsg.SyncGroupResponse)
	if resp.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("parked SyncGroup after the move: error %d, want NOT_COORDINATOR", resp.ErrorCode)
	}
}

func coordinatorOf(c httpapi.ClusterJSON, group string) int32 {
	for _, co := range c.Coordinators {
		if co.Type == "group" && co.Key == group {
			return co.Node
		}
	}
	return -1
}

// Rule: timers-restart-on-move (docs/cluster.md §4.2): after a group's
// coordinator moves, each member has its full session timeout again, on
// the new coordinator, whatever time passed on the old one — for classic,
// KIP-848 and share groups — and a member silent for a whole session
// after that is removed as usual. The move is a test move or the stop of
// the coordinator's node.
func TestNodesSessionTimersRestartOnMove(t *testing.T) {
	type kind struct {
		name    string
		session time.Duration
		// join adds a member on node c; beat heartbeats it on c and
		// returns the error code.
		join func(t *testing.T, c *rawconn.Conn)
		beat func(t *testing.T, c *rawconn.Conn) int16
	}
	var classicMember string
	var memberEpoch int32
	const shareMember = "share-member-1"
	kinds := []kind{
		{
			name: "classic", session: 10 * time.Second,
			join: func(t *testing.T, c *rawconn.Conn) {
				r := c.Request(classicJoin("")).(*kmsg.JoinGroupResponse)
				if r.ErrorCode != 0 {
					t.Fatalf("JoinGroup: %d", r.ErrorCode)
				}
				classicMember = r.MemberID
				s := kmsg.NewPtrSyncGroupRequest()
				s.Version = 3
				s.Group, s.MemberID, s.Generation = movedGroup, r.MemberID, r.Generation
				a := kmsg.NewSyncGroupRequestGroupAssignment()
				a.MemberID = r.MemberID
				s.GroupAssignment = append(s.GroupAssignment, a)
				if sr := c.Request(s).(*kmsg.SyncGroupResponse); sr.ErrorCode != 0 {
					t.Fatalf("SyncGroup: %d", sr.ErrorCode)
				}
			},
			beat: func(t *testing.T, c *rawconn.Conn) int16 {
				hb := kmsg.NewPtrHeartbeatRequest()
				hb.Version = 3
				hb.Group, hb.MemberID, hb.Generation = movedGroup, classicMember, 1
				return c.Request(hb).(*kmsg.HeartbeatResponse).ErrorCode
			},
		},
		{
			name: "consumer", session: 45 * time.Second,
			join: func(t *testing.T, c *rawconn.Conn) {
				req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				req.Group, req.MemberEpoch, req.RebalanceTimeoutMillis = movedGroup, 0, 60000
				req.SubscribedTopicNames = []string{"t"}
				r := c.Request(req).(*kmsg.ConsumerGroupHeartbeatResponse)
				if r.ErrorCode != 0 || r.MemberID == nil {
					t.Fatalf("ConsumerGroupHeartbeat join: %+v", r)
				}
				classicMember, memberEpoch = *r.MemberID, r.MemberEpoch
			},
			beat: func(t *testing.T, c *rawconn.Conn) int16 {
				req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				req.Group, req.MemberID, req.MemberEpoch = movedGroup, classicMember, memberEpoch
				return c.Request(req).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode
			},
		},
		{
			name: "share", session: 45 * time.Second,
			join: func(t *testing.T, c *rawconn.Conn) {
				req := kmsg.NewPtrShareGroupHeartbeatRequest()
				req.Version = 1
				req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = movedGroup, shareMember, 0, []string{"t"}
				r := c.Request(req).(*kmsg.ShareGroupHeartbeatResponse)
				if r.ErrorCode != 0 {
					t.Fatalf("ShareGroupHeartbeat join: %+v", r)
				}
				memberEpoch = r.MemberEpoch
			},
			beat: func(t *testing.T, c *rawconn.Conn) int16 {
				req := kmsg.NewPtrShareGroupHeartbeatRequest()
				req.Version = 1
				req.GroupID, req.MemberID, req.MemberEpoch = movedGroup, shareMember, memberEpoch
				return c.Request(req).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode
			},
		},
	}
	for _, k := range kinds {
		for _, how := range []string{"move", "stop"} {
			t.Run(k.name+"/"+how, func(t *testing.T) {
				n := startManualNodes(t, nil)
				b, clk, conns := n.b, n.clk, n.conns
				k.join(t, conns[0])
				// Most of the session passes on node 0, silent.
				clk.Advance(k.session - time.Second)
				if how == "move" {
					if err := b.MoveCoordinator(cluster.Group, movedGroup, 1); err != nil {
						t.Fatal(err)
					}
				} else if err := b.StopNode(0); err != nil {
					t.Fatal(err)
				}
				to := coordinatorOf(b.Cluster(), movedGroup)
				if to < 1 {
					t.Fatalf("the group is on node %d after the %s", to, how)
				}
				// Past the old deadline, well within a new session.
				clk.Advance(2 * time.Second)
				if code := k.beat(t, conns[to]); code != 0 {
					t.Fatalf("heartbeat on node %d, 1s after the old session would have ended: error %d (%s), want 0",
						to, code, kerr.ErrorForCode(code))
				}
				// A whole silent session later the member is gone.
				clk.Advance(k.session + time.Second)
				if code := k.beat(t, conns[to]); code != kerr.UnknownMemberID.Code {
					t.Fatalf("heartbeat after a silent session on node %d: error %d, want UNKNOWN_MEMBER_ID", to, code)
				}
			})
		}
	}
}

// Rule: describe-cluster-fenced (docs/cluster.md §2, KIP-1073):
// DescribeCluster v2 with IncludeFencedBrokers lists a stopped node too,
// with IsFenced true; without the flag, or before v2, only live nodes.
func TestNodesDescribeClusterIncludeFenced(t *testing.T) {
	n := startManualNodes(t, nil)
	b, conns := n.b, n.conns
	if err := b.StopNode(1); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		id     int32
		fenced bool
	}
	describe := func(version int16, include bool) []seen {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.EndpointType, req.IncludeFencedBrokers = version, 1, include
		resp := conns[0].Request(req).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("DescribeCluster v%d: %d", version, resp.ErrorCode)
		}
		var out []seen
		for _, br := range resp.Brokers {
			out = append(out, seen{br.NodeID, br.IsFenced})
			if br.Host == "" || br.Port == 0 {
				t.Errorf("DescribeCluster v%d: broker %d without an address", version, br.NodeID)
			}
		}
		return out
	}
	live := []seen{{0, false}, {2, false}}
	for _, tc := range []struct {
		version int16
		include bool
		want    []seen
	}{
		{2, true, []seen{{0, false}, {1, true}, {2, false}}},
		{2, false, live},
		{1, false, live},
	} {
		if got := describe(tc.version, tc.include); !slices.Equal(got, tc.want) {
			t.Errorf("DescribeCluster v%d IncludeFencedBrokers=%v: %v, want %v", tc.version, tc.include, got, tc.want)
		}
	}
}
