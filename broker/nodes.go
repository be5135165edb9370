package broker

// A cluster in one process (docs/cluster.md): Config.Nodes nodes
// share one store, one set of group and transaction coordinators and one
// HTTP server; each has its own listeners. The cluster package says which
// node leads each partition and coordinates each key, and the placement
// package applies that to the topics and groups there are; this file
// translates their answers for the handlers and for /v1/cluster.

import (
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/httpapi"
	"github.com/sharebroker/sharebroker/shareserve"
	"github.com/sharebroker/sharebroker/storage"
)

// endpoint is the advertised address of one node's listener.
type endpoint struct {
	host string
	port int32
}

// nodeEndpoint returns the advertised address of node's listener at
// index (the listener of the same name as index's on another node).
func (b *Broker) nodeEndpoint(node int32, index int) endpoint {
	eps := *b.endpoints.Load()
	return eps[node-b.cfg.NodeID][index]
}

// leadership returns who leads partition p of topic t, placing it the
// first time it is asked about (placement.Placement.Leadership); the
// handlers ask it under this name.
func (b *Broker) leadership(t *storage.Topic, p int32) cluster.Leadership {
	return b.placement.Leadership(t, p)
}

// forgetTopic drops a deleted topic's placement, so a topic created later
// with the same name starts again at leader epoch 0.
func (b *Broker) forgetTopic(name string) { b.cluster.RemoveTopic(name) }

// Cluster returns the cluster as /v1/cluster shows it. Node addresses are
// empty before Start.
func (b *Broker) Cluster() httpapi.ClusterJSON {
	out := httpapi.ClusterJSON{Nodes: []httpapi.NodeJSON{}, Partitions: []httpapi.LeadershipJSON{}, Coordinators: []httpapi.CoordinatorJSON{}}
	eps := b.endpoints.Load()
	for i, n := range b.cluster.Nodes() {
		nj := httpapi.NodeJSON{ID: n.ID, Up: n.Up}
		if eps != nil {
			e := (*eps)[i][0]
			nj.Addr = net.JoinHostPort(e.host, strconv.Itoa(int(e.port)))
		}
		out.Nodes = append(out.Nodes, nj)
	}
	for _, p := range b.placement.Partitions() {
		out.Partitions = append(out.Partitions, httpapi.LeadershipJSON{Topic: p.Topic, Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.Epoch})
	}
	for _, c := range b.placement.Coordinators() {
		out.Coordinators = append(out.Coordinators, httpapi.CoordinatorJSON{Key: c.Key, Type: c.Type.String(), Node: c.Node})
	}
	return out
}

// NodeAddrs returns the address each node's first listener is bound to,
// in node ID order, or nil before Start.
func (b *Broker) NodeAddrs() []net.Addr {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []net.Addr
	for _, l := range b.listeners {
		if l.index == 0 {
			out = append(out, l.ln.Addr())
		}
	}
	return out
}

// NodeListenerAddr returns the address node id's listener named name is
// bound to, or nil before Start or for no such node or listener.
func (b *Broker) NodeListenerAddr(id int32, name string) net.Addr {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.listeners {
		if l.node == id && l.name == name {
			return l.ln.Addr()
		}
	}
	return nil
}

// noEpoch is a CurrentLeaderEpoch of -1: the client does not know the
// epoch, so none is checked (Kafka's RecordBatch.NO_PARTITION_LEADER_EPOCH).
const noEpoch = -1

// checkLeader is what node (the node of the connection) answers for
// partition p of t before it reads or writes it (docs/cluster.md
// epoch-check, not-leader): the client's current leader epoch, unless -1,
// must be the partition's (older is FENCED_LEADER_EPOCH, newer
// UNKNOWN_LEADER_EPOCH); then node must lead the partition, else
// NOT_LEADER_OR_FOLLOWER. The epoch comes first, as in Kafka's
// Partition.getLocalLog. It returns 0 when node may serve it, and the
// partition's leadership either way.
func (b *Broker) checkLeader(node int32, t *storage.Topic, p int32, currentEpoch int32) (cluster.Leadership, int16) {
	// One node leads every partition at epoch 0 for good (its only move is
	// to itself, which changes nothing), so it needs no look-up.
	l := cluster.Leadership{Leader: b.cfg.NodeID}
	if b.cfg.Nodes > 1 {
		l = b.leadership(t, p)
	} else if t.Partition(p) == nil {
		l = cluster.Leadership{Leader: -1, Epoch: -1}
	}
	switch {
	case currentEpoch != noEpoch && currentEpoch < l.Epoch:
		return l, kerr.FencedLeaderEpoch.Code
	case currentEpoch != noEpoch && currentEpoch > l.Epoch:
		return l, kerr.UnknownLeaderEpoch.Code
	case l.Leader != node:
		return l, kerr.NotLeaderForPartition.Code
	}
	return l, 0
}

// leaderEndpoints collects the NodeEndpoints of a KIP-951 answer: the
// leaders named in partitions' CurrentLeader, at their listener of the
// connection's listener name, each once, in node order.
type leaderEndpoints struct {
	b     *Broker
	index int // the connection's listener
	nodes []int32
}

// add notes leader's endpoint; a leader of -1 (none) is not listed.
func (e *leaderEndpoints) add(leader int32) {
	if leader >= 0 && !slices.Contains(e.nodes, leader) {
		e.nodes = append(e.nodes, leader)
	}
}

// each calls fn with every noted node and its endpoint, in node order.
func (e *leaderEndpoints) each(fn func(node int32, ep endpoint)) {
	slices.Sort(e.nodes)
	for _, n := range e.nodes {
		fn(n, e.b.nodeEndpoint(n, e.index))
	}
}

func notLeaderErr(tp shareserve.TopicPartition, l cluster.Leadership) error {
	return fmt.Errorf("%w: partition %d of topic %x is led by node %d", errNotLeader, tp.Partition, tp.TopicID[:], l.Leader)
}

// node is the ID of the node the connection came to. A connection made
// without a listener (the fuzz targets call handlers directly) is the
// first node's.
func (c *conn) node() int32 {
	if c.l == nil {
		return c.b.cfg.NodeID
	}
	return c.l.node
}

// listenerIndex is the index of the connection's listener in the config,
// 0 without one.
func (c *conn) listenerIndex() int {
	if c.l == nil {
		return 0
	}
	return c.l.index
}

// MoveLeader makes node lead partition p of topic at the next leader
// epoch, as a leader election does: from then on the other nodes answer
// NOT_LEADER_OR_FOLLOWER for it, clients with the old epoch are fenced,
// and the new epoch starts at the log end offset in the partition's
// leader-epoch history, so OffsetForLeaderEpoch tells where the old one
// ended. Moving a partition to its own leader changes nothing.
func (b *Broker) MoveLeader(topic string, p int32, node int32) (cluster.Leadership, error) {
	before, l, err := b.placement.MoveLeader(topic, p, node)
	if err != nil || l == before {
		return l, err
	}
	b.placement.LeadershipMoved(before.Leader, cluster.PartitionLeadership{Topic: topic, Partition: p, Leadership: l})
	b.log.Info("leader moved", attrTopic, topic, attrPartition, p, "leader", l.Leader, "leader_epoch", l.Epoch)
	return l, nil
}

// notCoordinator returns an error coded NOT_COORDINATOR when another node
// coordinates key (docs/cluster.md not-coordinator). An empty key
// passes: the handler answers it as a single broker does
// (INVALID_GROUP_ID and the like), as Kafka validates before it routes.
func (b *Broker) notCoordinator(c *conn, typ cluster.CoordinatorType, key string) error {
	if b.cfg.Nodes == 1 || key == "" {
		return nil
	}
	if node := b.cluster.Coordinator(typ, key); node != c.node() {
		return fmt.Errorf("%w: %s %q is coordinated by node %d", errNotCoordinator, typ, key, node)
	}
	return nil
}

// coordinates reports whether the connection's node coordinates key: what
// ListGroups and ListTransactions list, as each Kafka broker lists only
// its own.
func (b *Broker) coordinates(c *conn, typ cluster.CoordinatorType, key string) bool {
	return b.cfg.Nodes == 1 || b.cluster.Coordinator(typ, key) == c.node()
}
