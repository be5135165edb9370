// Package placement applies the cluster's placement (package cluster) to
// the state the nodes of a one-process cluster share (docs/cluster.md):
// it places the stored topics' partitions, lists the groups and
// transactional IDs there are with the node coordinating each, and makes
// the moves a test or a node's stop asks for, with what the group
// coordinators must do when a group changes coordinator.
//
// Package cluster knows partitions and keys only as names; this package
// knows which exist. The moves that change a leader return the partitions
// they moved, and LeadershipMoved does what that means for each (new
// epoch, share state handed over, polls woken) once the caller has done
// its part; listeners and connections are the caller's. It sees no kmsg
// and no sockets.
package placement

import (
	"errors"
	"fmt"
	"slices"

	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/txn"
)

// Groups are the group coordinators, one per kind of group. A group ID
// names a group of one kind; the others ignore it.
type Groups struct {
	Classic  *group.ClassicGroups
	Consumer *group.ConsumerGroups
	Share    *group.ShareGroups
}

// Placement is the placement of one broker's stored topics, groups and
// transactional IDs. It holds no lock of its own: the cluster, the store
// and the coordinators lock themselves, and the caller serializes the
// changes of the set of live nodes (Stop, and PlaceAll with
// cluster.Cluster.Start).
type Placement struct {
	cluster *cluster.Cluster
	store   *storage.Store
	groups  Groups
	txns    *txn.Coordinator
	shares  ShareMover
}

// ShareMover hands a partition's share partitions from its old leader to
// its new one (shareserve.Service.LeaderMoved), returning how many
// acquired records it freed.
type ShareMover interface {
	LeaderMoved(topicID storage.TopicID, partition int32, from, to int32) int64
}

// New returns the placement of what store, groups and txns hold on c;
// shares moves share partitions with their leader.
func New(c *cluster.Cluster, store *storage.Store, groups Groups, txns *txn.Coordinator, shares ShareMover) *Placement {
	return &Placement{cluster: c, store: store, groups: groups, txns: txns, shares: shares}
}

// LeadershipMoved does, for partitions whose leader just changed (a test
// move or a node's failover), what every node must see at once: the new
// epoch starts at the log end offset in the partition's leader-epoch
// history (epoch-cache), the share partitions move from the old leader
// (from) to the new one, and Fetch and ShareFetch long polls parked on the
// partition wake and answer (move-wakes-polls).
func (pl *Placement) LeadershipMoved(from int32, moves ...cluster.PartitionLeadership) {
	for _, m := range moves {
		t := pl.store.Topic(m.Topic)
		if t == nil {
			continue // deleted meanwhile
		}
		p := t.Partition(m.Partition)
		if p == nil {
			continue
		}
		p.SetLeaderEpoch(m.Epoch)
		// The share partitions go to the new leader as Kafka's persister
		// carries them, before the polls wake (move-frees-acquired).
		pl.shares.LeaderMoved(t.ID, m.Partition, from, m.Leader)
		p.Wake()
	}
}

// Leadership returns who leads partition p of topic t. A partition is
// placed the first time it is asked about: placement depends only on the
// topic's name and the partition's index, so every path that creates a
// topic or adds partitions gets the same answer without telling the
// cluster. A p that is not a partition of t has no leader: -1 at epoch -1.
func (pl *Placement) Leadership(t *storage.Topic, p int32) cluster.Leadership {
	if l, ok := pl.cluster.Leader(t.Name, p); ok {
		return l
	}
	pl.cluster.AddPartitions(t.Name, 0, int32(len(t.Partitions())))
	l, ok := pl.cluster.Leader(t.Name, p)
	if !ok {
		return cluster.Leadership{Leader: -1, Epoch: -1}
	}
	return l
}

// PlaceAll places every partition of every existing topic. Placement is
// lazy (Leadership), so before the set of live nodes changes everything
// that exists is placed under the set it was created in: a stopping node
// then fails over every partition it would lead, including ones no client
// ever asked about, and a node that starts again gains none of them
// (start-as-follower). The lazy answer is then the one eager placement at
// creation would give. Stop does it itself; call it before
// cluster.Cluster.Start.
func (pl *Placement) PlaceAll() {
	for _, t := range pl.store.Topics() {
		if n := len(t.Partitions()); n > 0 {
			pl.Leadership(t, int32(n-1))
		}
	}
}

// Partitions lists the leadership of every partition of every stored
// topic, by topic name then index.
func (pl *Placement) Partitions() []cluster.PartitionLeadership {
	var out []cluster.PartitionLeadership
	for _, t := range pl.store.Topics() { // sorted by name
		for _, p := range t.Partitions() {
			out = append(out, cluster.PartitionLeadership{Topic: t.Name, Partition: p.Index, Leadership: pl.Leadership(t, p.Index)})
		}
	}
	return out
}

// Coordinator is the node coordinating one key.
type Coordinator struct {
	Type cluster.CoordinatorType
	Key  string
	Node int32
}

// Coordinators lists the coordinator of every known group (classic,
// KIP-848 and share), by group ID, then of every known transactional ID,
// by ID.
func (pl *Placement) Coordinators() []Coordinator {
	var out []Coordinator
	for _, g := range pl.groupIDs() {
		out = append(out, Coordinator{Type: cluster.Group, Key: g, Node: pl.cluster.Coordinator(cluster.Group, g)})
	}
	var ids []string
	for _, d := range pl.txns.List() {
		ids = append(ids, d.TransactionalID)
	}
	slices.Sort(ids)
	for _, id := range ids {
		out = append(out, Coordinator{Type: cluster.Transaction, Key: id, Node: pl.cluster.Coordinator(cluster.Transaction, id)})
	}
	return out
}

// groupIDs lists the known groups of every kind, sorted, each once.
func (pl *Placement) groupIDs() []string {
	var ids []string
	for _, g := range pl.groups.Classic.List() {
		ids = append(ids, g.GroupID)
	}
	for _, g := range pl.groups.Consumer.List() {
		ids = append(ids, g.GroupID)
	}
	for _, g := range pl.groups.Share.List() {
		ids = append(ids, g.GroupID)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// MoveLeader makes node lead partition p of topic at the next leader
// epoch, placing the partition first if no one asked about it yet. It
// returns the leadership before and after; they are equal when node led
// it already, which changes nothing. Errors: cluster.ErrUnknownPartition
// (also for a topic or partition the store does not have),
// cluster.ErrUnknownNode, cluster.ErrNodeDown.
func (pl *Placement) MoveLeader(topic string, p int32, node int32) (before, after cluster.Leadership, err error) {
	t := pl.store.Topic(topic)
	if t == nil || t.Partition(p) == nil {
		return cluster.Leadership{}, cluster.Leadership{}, fmt.Errorf("%w: %s-%d", cluster.ErrUnknownPartition, topic, p)
	}
	before = pl.Leadership(t, p) // placed before it moves
	after, err = pl.cluster.MoveLeader(topic, p, node)
	return before, after, err
}

// MoveCoordinator makes node coordinate key of typ from now on
// (coordinator-move). The group's or transaction's state is the same
// object on every node, so it moves whole; when a group's coordinator
// changed, the group coordinators do what the unload and load show
// clients (groupsMoved). The key need not exist yet. Errors: an empty
// key, cluster.ErrUnknownNode, cluster.ErrNodeDown.
func (pl *Placement) MoveCoordinator(typ cluster.CoordinatorType, key string, node int32) error {
	if key == "" {
		return errors.New("empty key: a group ID or transactional ID is needed")
	}
	before := pl.cluster.Coordinator(typ, key)
	if err := pl.cluster.MoveCoordinator(typ, key, node); err != nil {
		return err
	}
	if typ == cluster.Group && pl.cluster.Coordinator(typ, key) != before {
		pl.groupsMoved(key)
	}
	return nil
}

// Stop stops node in the cluster (stop-fails-over): every partition and
// coordinator it led fails over to the next live node of its replica list,
// the partitions at the next leader epoch. It returns the partitions whose
// leader moved, for the caller to move their logs and share partitions,
// and a function that does what the group coordinators must for the
// groups the node coordinated (groupsMoved); the caller runs it once the
// node's connections are closed, so no request in hand on them is
// answered. The caller serializes Stop with itself and with starting a node.
// Errors:
// cluster.ErrUnknownNode, cluster.ErrNodeDown, cluster.ErrLastLiveNode.
func (pl *Placement) Stop(node int32) (moved []cluster.PartitionLeadership, groupsMoved func(), err error) {
	pl.PlaceAll()
	groups := pl.groupsOn(node)
	moved, err = pl.cluster.Stop(node)
	if err != nil {
		return nil, nil, err
	}
	return moved, func() { pl.groupsMoved(groups...) }, nil
}

// groupsOn returns the known groups (classic, KIP-848 and share) that
// node coordinates now: the groups a node stop moves.
func (pl *Placement) groupsOn(node int32) []string {
	var out []string
	for _, id := range pl.groupIDs() {
		if pl.cluster.Coordinator(cluster.Group, id) == node {
			out = append(out, id)
		}
	}
	return out
}

// groupsMoved does for groups whose coordinator just changed (a test move
// or a node stop) what Kafka's unload on the old coordinator and load on
// the new one show clients (docs/cluster.md coordinator-move,
// timers-restart-on-move): classic JoinGroup and SyncGroup requests
// waiting on the old coordinator answer NOT_COORDINATOR at once, and every
// member's session timer starts again in full. A group ID names one group
// type; the coordinators of the other types ignore it.
func (pl *Placement) groupsMoved(ids ...string) {
	for _, id := range ids {
		pl.groups.Classic.CoordinatorMoved(id)
		pl.groups.Consumer.CoordinatorMoved(id)
		pl.groups.Share.CoordinatorMoved(id)
	}
}
