package broker_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/internal/rawconn"
	"github.com/sharebroker/sharebroker/internal/testbroker"
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
func leaderOf(t *testing.T, b *broker.Broker, topic string, p int32) broker.LeadershipJSON {
	t.Helper()
	for _, l := range b.Cluster().Partitions {
		if l.Topic == topic && l.Partition == p {
			return l
		}
	}
	t.Fatalf("%s-%d not in the cluster", topic, p)
	return broker.LeadershipJSON{}
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
	var l broker.LeadershipJSON
	postOK(t, base+"/v1/test/leaders", fmt.Sprintf(`{"topic":"t","partition":0,"node":%d}`, to), &l)
	if l != (broker.LeadershipJSON{Topic: "t", Partition: 0, Leader: to, LeaderEpoch: 1}) {
		t.Fatalf("moved: %+v", l)
	}
	var co broker.CoordinatorJSON
	postOK(t, base+"/v1/test/coordinators", `{"group":"g","node":2}`, &co)
	if co != (broker.CoordinatorJSON{Key: "g", Type: "group", Node: 2}) {
		t.Fatalf("group moved: %+v", co)
	}
	postOK(t, base+"/v1/test/coordinators", `{"transactional_id":"x","node":1}`, &co)
	if co != (broker.CoordinatorJSON{Key: "x", Type: "transaction", Node: 1}) {
		t.Fatalf("transactional ID moved: %+v", co)
	}
	var n broker.NodeJSON
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
// minute, nothing to read) answers NOT_LEADER_OR_FOLLOWER with the new
// leader as soon as the partition moves, well before its wait is up; the
// connection stays open (move-keeps-connections).
func TestNodesMoveWakesFetch(t *testing.T) {
	b, _ := startMoveNodes(t, 3)
	c0 := rawconn.Dial(t, b.NodeAddrs()[0].String())
	createTopicRaw(t, c0, "t", 1)
	leader := leaderOf(t, b, "t", 0).Leader
	c := rawconn.Dial(t, b.NodeAddrs()[leader].String())

	req := kmsg.NewPtrFetchRequest()
	req.Version = 16
	req.ReplicaID, req.MaxBytes, req.MinBytes, req.MaxWaitMillis = -1, 1<<20, 1, 60_000
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = metadataV12(t, c0, "t").Topics[0].TopicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1 // with 0 the answer is FENCED_LEADER_EPOCH
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	corr := c.Send(req)
	if _, err := c.TryRecv(req, corr, 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the fetch answered before the move: %v", err)
	}
	to := (leader + 1) % 3
	if _, err := b.MoveLeader("t", 0, to); err != nil {
		t.Fatal(err)
	}
	resp := c.Recv(req, corr, 10*time.Second).(*kmsg.FetchResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != to || p.CurrentLeader.LeaderEpoch != 1 {
		t.Fatalf("woken fetch: %+v", p)
	}
	c.ExpectOpen()
}
