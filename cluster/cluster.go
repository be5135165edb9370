// Package cluster is the placement of a cluster run in one process: which
// nodes exist and are up, which node leads each partition at which leader
// epoch, and which node coordinates each group and transactional ID
// (docs/cluster.md). It holds no data — every node shares the one store,
// so every replica is always in sync — only who answers for what. It sees
// no kmsg and no sockets; broker asks it and answers clients.
//
// With one node everything is led and coordinated by that node at leader
// epoch 0, which is how a single broker behaves.
package cluster

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Errors of the operations that change placement. Each leaves the
// placement as it was.
var (
	ErrUnknownNode      = errors.New("unknown node")
	ErrUnknownPartition = errors.New("unknown topic partition")
	ErrNodeDown         = errors.New("node is stopped")
	ErrLastLiveNode     = errors.New("the last live node cannot stop")
	ErrNodeUp           = errors.New("node is already running")
)

// coordinatorSlots is how many partitions Kafka's internal coordinator
// topics have by default (offsets.topic.num.partitions and
// transaction.state.log.num.partitions are both 50). A key is coordinated
// by the leader of its slot, as a group is by the leader of its
// __consumer_offsets partition.
const coordinatorSlots = 50

// CoordinatorType says which kind of key a coordinator serves.
type CoordinatorType int8

const (
	// Group coordinates classic, KIP-848 and share groups (FindCoordinator
	// key type 0).
	Group CoordinatorType = iota
	// Transaction coordinates transactional IDs (key type 1).
	Transaction
)

// String is the name /v1/cluster uses.
func (t CoordinatorType) String() string {
	if t == Transaction {
		return "transaction"
	}
	return "group"
}

// Leadership is who leads a partition and since which leader epoch.
type Leadership struct {
	Leader int32
	Epoch  int32
}

// Node is one node of the cluster.
type Node struct {
	ID int32
	Up bool
}

// Cluster is the placement. It is safe for concurrent use.
type Cluster struct {
	first int32 // ID of node 0; node IDs are first..first+n-1

	mu sync.RWMutex // guards the fields below
	up []bool       // by node index
	// parts maps each topic to its partitions' leadership, by partition.
	parts map[string][]Leadership
	// assigned holds the replica lists given explicitly at creation
	// (docs/cluster.md explicit-assignment), by topic then partition;
	// other partitions follow replica-order.
	assigned map[string]map[int32][]int32
	// slots are the coordinator slots' leaders (node IDs), by type then
	// slot.
	slots [2][coordinatorSlots]int32
	// moved holds the coordinators moved one key at a time, away from
	// their slot's leader.
	moved map[coordinatorKey]int32
}

type coordinatorKey struct {
	typ CoordinatorType
	key string
}

// New returns a cluster of n nodes, IDs first..first+n-1, all up.
// Coordinator slot s starts on node s mod n.
func New(first int32, n int) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("a cluster needs at least one node, not %d", n)
	}
	c := &Cluster{first: first, up: make([]bool, n), parts: make(map[string][]Leadership), assigned: make(map[string]map[int32][]int32), moved: make(map[coordinatorKey]int32)}
	for i := range c.up {
		c.up[i] = true
	}
	for typ := range c.slots {
		for s := range c.slots[typ] {
			c.slots[typ][s] = first + int32(s%n)
		}
	}
	return c, nil
}

// Size is how many nodes the cluster has, up or not.
func (c *Cluster) Size() int { return len(c.up) }

// First is the ID of node 0.
func (c *Cluster) First() int32 { return c.first }

// Nodes lists every node in ID order.
func (c *Cluster) Nodes() []Node {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Node, len(c.up))
	for i, up := range c.up {
		out[i] = Node{ID: c.first + int32(i), Up: up}
	}
	return out
}

// Up reports whether node id exists and is up.
func (c *Cluster) Up(id int32) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	i, ok := c.index(id)
	return ok && c.up[i]
}

// LiveNodes lists the IDs of the nodes that are up, in ID order: every
// partition's in-sync replicas.
func (c *Cluster) LiveNodes() []int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []int32
	for i, up := range c.up {
		if up {
			out = append(out, c.first+int32(i))
		}
	}
	return out
}

// index returns the index of node id.
func (c *Cluster) index(id int32) (int, bool) {
	i := int(id - c.first)
	return i, id >= c.first && i < len(c.up)
}

// AddPartitions places partitions from..to-1 of topic (a new topic, or
// partitions added to one). Partition p's replica list is the rotation of
// the nodes that starts at node (abs(javaHash(topic)) + p) mod n, its
// preferred leader (docs/cluster.md replica-order); it is led by the first
// node of that list that is up (create-while-down). A topic's partitions
// are spread over the nodes, and the placement depends only on the name,
// so a test can predict it.
func (c *Cluster) AddPartitions(topic string, from, to int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps := c.parts[topic]
	for p := max(from, int32(len(ps))); p < to; p++ {
		ps = append(ps, Leadership{Leader: c.firstLive(topic, p)})
	}
	c.parts[topic] = ps
}

// Assign gives partitions from..from+len(replicas)-1 of topic the replica
// lists of an explicit assignment (docs/cluster.md explicit-assignment):
// each is a permutation of every node ID, its first node the preferred
// leader, and it is the order failover follows. A partition already
// placed and never moved (epoch 0) is placed again by its list: the
// assignment is given as the topic or partitions are created, before any
// client could act on the placement.
func (c *Cluster) Assign(topic string, from int32, replicas [][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	as := c.assigned[topic]
	if as == nil {
		as = make(map[int32][]int32)
		c.assigned[topic] = as
	}
	ps := c.parts[topic]
	for i, r := range replicas {
		p := from + int32(i)
		as[p] = slices.Clone(r)
		if int(p) < len(ps) && ps[p].Epoch == 0 {
			ps[p].Leader = c.firstLive(topic, p)
		}
	}
}

// firstLive is the leader partition p of topic gets when it is placed or
// its leader stops: the first node of its replica list that is up.
func (c *Cluster) firstLive(topic string, p int32) int32 {
	for _, id := range c.assigned[topic][p] {
		if i, ok := c.index(id); ok && c.up[i] {
			return id
		}
	}
	return c.liveFrom(c.preferred(topic, p))
}

// preferred is the index of the preferred leader of partition p of topic:
// the first node of its replica list.
func (c *Cluster) preferred(topic string, p int32) int {
	return (javaAbs(javaHash(topic))%len(c.up) + int(p)%len(c.up)) % len(c.up)
}

// Replicas returns the replica list of partition p of topic: its explicit
// assignment if it had one, else every node starting at its preferred
// leader (docs/cluster.md replica-order). It is the order failover
// follows.
func (c *Cluster) Replicas(topic string, p int32) []int32 {
	c.mu.RLock()
	r, ok := c.assigned[topic][p]
	c.mu.RUnlock()
	if ok {
		return slices.Clone(r)
	}
	start := c.preferred(topic, p)
	out := make([]int32, len(c.up))
	for k := range out {
		out[k] = c.first + int32((start+k)%len(c.up))
	}
	return out
}

// RemoveTopic forgets a deleted topic's placement.
func (c *Cluster) RemoveTopic(topic string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.parts, topic)
	delete(c.assigned, topic)
}

// Leader returns the leadership of partition p of topic; false if it was
// never placed.
func (c *Cluster) Leader(topic string, p int32) (Leadership, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ps := c.parts[topic]
	if p < 0 || int(p) >= len(ps) {
		return Leadership{}, false
	}
	return ps[p], true
}

// PartitionLeadership is one partition's leadership, for listings.
type PartitionLeadership struct {
	Topic     string
	Partition int32
	Leadership
}

// Partitions lists every placed partition, by topic name then index.
func (c *Cluster) Partitions() []PartitionLeadership {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []PartitionLeadership
	for topic, ps := range c.parts {
		for p, l := range ps {
			out = append(out, PartitionLeadership{Topic: topic, Partition: int32(p), Leadership: l})
		}
	}
	slices.SortFunc(out, func(a, b PartitionLeadership) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// MoveLeader makes node lead partition p of topic, with the leader epoch
// one higher. Moving it to its own leader changes nothing and returns the
// leadership as it is, as Kafka's election of the current leader does
// (ELECTION_NOT_NEEDED, no new epoch).
func (c *Cluster) MoveLeader(topic string, p int32, node int32) (Leadership, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps := c.parts[topic]
	if p < 0 || int(p) >= len(ps) {
		return Leadership{}, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, topic, p)
	}
	if err := c.checkLive(node); err != nil {
		return Leadership{}, err
	}
	if ps[p].Leader != node {
		ps[p] = Leadership{Leader: node, Epoch: ps[p].Epoch + 1}
	}
	return ps[p], nil
}

// Coordinator returns the node that coordinates key of typ: the key's
// slot leader, unless the key was moved on its own.
func (c *Cluster) Coordinator(typ CoordinatorType, key string) int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if node, ok := c.moved[coordinatorKey{typ, key}]; ok {
		return node
	}
	return c.slots[typ][Slot(key)]
}

// MoveCoordinator makes node the coordinator of key of typ. The rest of
// the key's slot stays where it is.
func (c *Cluster) MoveCoordinator(typ CoordinatorType, key string, node int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkLive(node); err != nil {
		return err
	}
	c.moved[coordinatorKey{typ, key}] = node
	return nil
}

// Stop marks node down. Every partition and coordinator slot it led fails
// over to the first node of its replica list that is up, counted from its
// preferred leader (docs/cluster.md failover-order), the partitions with
// their epoch one higher; coordinators moved to the node on their own are
// dropped and follow their slot's leader again (coordinator-override). It
// returns the partitions whose leadership moved.
func (c *Cluster) Stop(node int32) ([]PartitionLeadership, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, ok := c.index(node)
	if !ok {
		return nil, fmt.Errorf("%w: %d", ErrUnknownNode, node)
	}
	if !c.up[i] {
		return nil, fmt.Errorf("%w: %d", ErrNodeDown, node)
	}
	live := 0
	for _, up := range c.up {
		if up {
			live++
		}
	}
	if live == 1 {
		return nil, fmt.Errorf("%w: node %d", ErrLastLiveNode, node)
	}
	c.up[i] = false
	var moved []PartitionLeadership
	for topic, ps := range c.parts {
		for p := range ps {
			if ps[p].Leader == node {
				ps[p] = Leadership{Leader: c.firstLive(topic, int32(p)), Epoch: ps[p].Epoch + 1}
				moved = append(moved, PartitionLeadership{Topic: topic, Partition: int32(p), Leadership: ps[p]})
			}
		}
	}
	for typ := range c.slots {
		for s := range c.slots[typ] {
			if c.slots[typ][s] == node {
				c.slots[typ][s] = c.liveFrom(s % len(c.up))
			}
		}
	}
	for k, n := range c.moved {
		if n == node {
			delete(c.moved, k)
		}
	}
	return moved, nil
}

// Start brings node back up as a follower: it leads nothing until
// something is moved to it.
func (c *Cluster) Start(node int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, ok := c.index(node)
	if !ok {
		return fmt.Errorf("%w: %d", ErrUnknownNode, node)
	}
	if c.up[i] {
		return fmt.Errorf("%w: %d", ErrNodeUp, node)
	}
	c.up[i] = true
	return nil
}

// checkLive fails unless node exists and is up.
func (c *Cluster) checkLive(node int32) error {
	i, ok := c.index(node)
	switch {
	case !ok:
		return fmt.Errorf("%w: %d", ErrUnknownNode, node)
	case !c.up[i]:
		return fmt.Errorf("%w: %d", ErrNodeDown, node)
	}
	return nil
}

// liveFrom returns the ID of the first live node at or after index i,
// wrapping around. Invariant: at least one node is up (Stop refuses the
// last one).
func (c *Cluster) liveFrom(i int) int32 {
	for k := range c.up {
		j := (i + k) % len(c.up)
		if c.up[j] {
			return c.first + int32(j)
		}
	}
	panic("cluster: no live node") // Stop keeps one up
}

// Slot is the coordinator slot of key: abs(hashCode) mod 50 with Java's
// String.hashCode, the partition of __consumer_offsets (or
// __transaction_state) Kafka would give the key.
func Slot(key string) int { return javaAbs(javaHash(key)) % coordinatorSlots }

// javaHash is Java's String.hashCode: h = 31*h + c over the UTF-16 code
// units of s, in 32-bit two's-complement arithmetic (docs/cluster.md
// java-hash). It places topics' partitions and coordinators' keys.
func javaHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r > 0xFFFF { // a surrogate pair in Java's UTF-16
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// javaAbs is Kafka's Utils.abs: MIN_VALUE maps to 0 rather than
// overflowing.
func javaAbs(h int32) int {
	if h == -1<<31 {
		return 0
	}
	if h < 0 {
		h = -h
	}
	return int(h)
}
