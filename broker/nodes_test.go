package broker_test

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/internal/rawconn"
	"github.com/sharebroker/sharebroker/internal/testbroker"
	"github.com/sharebroker/sharebroker/locktimer"
)

// startNodes runs a broker of n nodes, first node ID 5, with two named
// listeners (PLAINTEXT and OTHER) on free loopback ports and the HTTP
// server, and returns it with its placement model for predictions.
//
// A clock, when given, is the broker's (a manual one, for tests that must
// know a request is parked); otherwise real time.
func startNodes(t *testing.T, n int, clock ...locktimer.Clock) (*broker.Broker, *cluster.Cluster) {
	t.Helper()
	var c locktimer.Clock
	if len(clock) > 0 {
		c = clock[0]
	}
	b := testbroker.Start(t, broker.Config{
		Clock:  c,
		NodeID: 5,
		Nodes:  n,
		HTTP:   "127.0.0.1:0",
		Listeners: []broker.ListenerConfig{
			{Name: "PLAINTEXT", Listen: "127.0.0.1:0"},
			{Name: "OTHER", Listen: "127.0.0.1:0"},
		},
	})
	model, err := cluster.New(5, n)
	if err != nil {
		t.Fatal(err)
	}
	return b, model
}

// nodeListenerAddr is the address of node id's listener named name.
func nodeListenerAddr(t *testing.T, b *broker.Broker, id int32, name string) string {
	t.Helper()
	a := b.NodeListenerAddr(id, name)
	if a == nil {
		t.Fatalf("node %d has no listener %s", id, name)
	}
	return a.String()
}

func createTopicRaw(t *testing.T, c *rawconn.Conn, topic string, partitions int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, -1
	req.Topics = append(req.Topics, rt)
	resp := c.Request(req).(*kmsg.CreateTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %d %v", topic, resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage)
	}
}

// Rule: metadata-truth (docs/cluster.md): Metadata and
// DescribeCluster list every live node at its listener of the name the
// request came on; partitions carry the placed leader and epoch, every
// node as a replica and the live ones in sync; the controller is the first
// live node.
func TestNodesMetadataTruth(t *testing.T) {
	b, model := startNodes(t, 3)
	c := rawconn.Dial(t, nodeListenerAddr(t, b, 6, "OTHER"))
	createTopicRaw(t, c, "t", 6)
	model.AddPartitions("t", 0, 6)

	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	resp := c.Request(req).(*kmsg.MetadataResponse)
	if len(resp.Brokers) != 3 || resp.ControllerID != 5 {
		t.Fatalf("brokers %+v controller %d", resp.Brokers, resp.ControllerID)
	}
	for i, br := range resp.Brokers {
		id := int32(5 + i)
		host, port := splitAddr(t, nodeListenerAddr(t, b, id, "OTHER"))
		if br.NodeID != id || br.Host != host || br.Port != port || br.Rack != nil {
			t.Fatalf("broker %d: %+v, want %s:%d", i, br, host, port)
		}
	}
	leaders := map[int32]bool{}
	for _, p := range resp.Topics[0].Partitions {
		want, _ := model.Leader("t", p.Partition)
		if p.Leader != want.Leader || p.LeaderEpoch != 0 {
			t.Fatalf("partition %d: leader %d epoch %d, want %d", p.Partition, p.Leader, p.LeaderEpoch, want.Leader)
		}
		replicas := model.Replicas("t", p.Partition) // replica-order: from the leader round
		if replicas[0] != want.Leader || !slices.Equal(p.Replicas, replicas) || !slices.Equal(p.ISR, replicas) || len(p.OfflineReplicas) != 0 {
			t.Fatalf("partition %d: replicas %v isr %v offline %v", p.Partition, p.Replicas, p.ISR, p.OfflineReplicas)
		}
		leaders[p.Leader] = true
	}
	if len(leaders) != 3 {
		t.Fatalf("leaders on %v, want all three nodes", leaders)
	}

	dreq := kmsg.NewPtrDescribeClusterRequest()
	dreq.Version = 1
	dreq.EndpointType = 1
	dresp := rawconn.Dial(t, nodeListenerAddr(t, b, 7, "PLAINTEXT")).Request(dreq).(*kmsg.DescribeClusterResponse)
	if len(dresp.Brokers) != 3 || dresp.ControllerID != 5 {
		t.Fatalf("describe cluster %+v", dresp)
	}
	for i, br := range dresp.Brokers {
		id := int32(5 + i)
		host, port := splitAddr(t, nodeListenerAddr(t, b, id, "PLAINTEXT"))
		if br.NodeID != id || br.Host != host || br.Port != port {
			t.Fatalf("describe cluster broker %d: %+v", i, br)
		}
	}
}

// Rule: coordinator-by-key: FindCoordinator answers the node that
// coordinates the key, at its listener of the connection's name, in the
// one-key (v0-v3) and many-key (v4+) forms.
func TestNodesFindCoordinator(t *testing.T) {
	b, model := startNodes(t, 3)
	c := rawconn.Dial(t, nodeListenerAddr(t, b, 5, "OTHER"))
	keys := []string{"g0", "g1", "g2", "g3", "g4", "g5", "orders", "payments"}
	seen := map[int32]bool{}
	for _, typ := range []int8{0, 1} {
		ctype := cluster.Group
		if typ == 1 {
			ctype = cluster.Transaction
		}
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version = 4
		req.CoordinatorType = typ
		req.CoordinatorKeys = keys
		resp := c.Request(req).(*kmsg.FindCoordinatorResponse)
		for i, co := range resp.Coordinators {
			want := model.Coordinator(ctype, keys[i])
			host, port := splitAddr(t, nodeListenerAddr(t, b, want, "OTHER"))
			if co.ErrorCode != 0 || co.NodeID != want || co.Host != host || co.Port != port {
				t.Fatalf("type %d key %s: %+v, want node %d at %s:%d", typ, keys[i], co, want, host, port)
			}
			seen[want] = true
		}
		old := kmsg.NewPtrFindCoordinatorRequest()
		old.Version = 3
		old.CoordinatorType = typ
		old.CoordinatorKey = "orders"
		oresp := c.Request(old).(*kmsg.FindCoordinatorResponse)
		if want := model.Coordinator(ctype, "orders"); oresp.ErrorCode != 0 || oresp.NodeID != want {
			t.Fatalf("v3 type %d: %+v, want node %d", typ, oresp, want)
		}
	}
	if len(seen) != 3 {
		t.Fatalf("coordinators on %v, want all three nodes", seen)
	}
}

// Node i listens on each listener's port + i and advertises its
// advertised port + i.
func TestNodesListenOnPortPlusIndex(t *testing.T) {
	base := freePortRun(t, 3)
	b := testbroker.Start(t, broker.Config{
		Nodes:     3,
		Listen:    "127.0.0.1:" + strconv.Itoa(base),
		Advertise: "broker.example:19092",
	})
	addrs := b.NodeAddrs()
	if len(addrs) != 3 {
		t.Fatalf("node addrs %v", addrs)
	}
	for i, a := range addrs {
		if want := "127.0.0.1:" + strconv.Itoa(base+i); a.String() != want {
			t.Fatalf("node %d listens on %s, want %s", i, a, want)
		}
	}
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	resp := rawconn.Dial(t, addrs[2].String()).Request(req).(*kmsg.MetadataResponse)
	for i, br := range resp.Brokers {
		if br.Host != "broker.example" || br.Port != int32(19092+i) {
			t.Fatalf("broker %d advertised %s:%d, want broker.example:%d", i, br.Host, br.Port, 19092+i)
		}
	}
	for i, n := range b.Cluster().Nodes {
		if want := fmt.Sprintf("broker.example:%d", 19092+i); n.Addr != want || !n.Up || n.ID != int32(i) {
			t.Fatalf("cluster node %d: %+v, want %s", i, n, want)
		}
	}
}

// freePortRun finds n consecutive free loopback ports and returns the
// first; they are free when it returns, which a test binding them at once
// relies on.
func freePortRun(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := ln.Addr().(*net.TCPAddr).Port
		lns := []net.Listener{ln}
		ok := base+n-1 <= 65535
		for i := 1; i < n && ok; i++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, l)
		}
		for _, l := range lns {
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no run of free ports")
	return 0
}

// GET /v1/cluster: nodes, every partition's leader, and a coordinator for
// every known group and transactional ID, in exactly this shape.
func TestNodesClusterJSON(t *testing.T) {
	b, model := startNodes(t, 2)
	c := rawconn.Dial(t, b.Addr().String())
	createTopicRaw(t, c, "t", 2)
	model.AddPartitions("t", 0, 2)
	// A classic group made by a simple commit and a transactional ID.
	commit := simpleCommit("g")
	coordAddr := func(typ int8, key string) string {
		id := model.Coordinator(cluster.CoordinatorType(typ), key)
		return nodeListenerAddr(t, b, id, "PLAINTEXT")
	}
	if resp := rawconn.Dial(t, coordAddr(0, "g")).Request(commit).(*kmsg.OffsetCommitResponse); resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %+v", resp)
	}
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version = 4
	init.TransactionalID = kmsg.StringPtr("x")
	init.TransactionTimeoutMillis = 60000
	if resp := rawconn.Dial(t, coordAddr(1, "x")).Request(init).(*kmsg.InitProducerIDResponse); resp.ErrorCode != 0 {
		t.Fatalf("init producer id: %+v", resp)
	}

	status, body := httpGet(t, "http://"+b.HTTPAddr().String()+"/v1/cluster")
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	addr := func(id int32) string { return nodeListenerAddr(t, b, id, "PLAINTEXT") }
	l0, _ := model.Leader("t", 0)
	l1, _ := model.Leader("t", 1)
	want := fmt.Sprintf(`{
  "nodes": [
    {
      "id": 5,
      "addr": %q,
      "up": true
    },
    {
      "id": 6,
      "addr": %q,
      "up": true
    }
  ],
  "partitions": [
    {
      "topic": "t",
      "partition": 0,
      "leader": %d,
      "leader_epoch": 0
    },
    {
      "topic": "t",
      "partition": 1,
      "leader": %d,
      "leader_epoch": 0
    }
  ],
  "coordinators": [
    {
      "key": "g",
      "type": "group",
      "node": %d
    },
    {
      "key": "x",
      "type": "transaction",
      "node": %d
    }
  ]
}
`, addr(5), addr(6), l0.Leader, l1.Leader, model.Coordinator(cluster.Group, "g"), model.Coordinator(cluster.Transaction, "x"))
	if string(body) != want {
		t.Fatalf("GET /v1/cluster:\n%s\nwant\n%s", body, want)
	}
}

// simpleCommit commits offset 0 of t-0 for group outside any generation,
// which makes a classic group.
func simpleCommit(group string) *kmsg.OffsetCommitRequest {
	return &kmsg.OffsetCommitRequest{Version: 8, Group: group, Generation: -1, Topics: []kmsg.OffsetCommitRequestTopic{
		{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0, LeaderEpoch: -1}}},
	}}
}
