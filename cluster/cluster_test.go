package cluster

import (
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/sharebroker/sharebroker/internal/layering"
)

// One node leads and coordinates everything at epoch 0: a single broker.
func TestSingleNode(t *testing.T) {
	c, err := New(7, 1)
	if err != nil {
		t.Fatal(err)
	}
	c.AddPartitions("t", 0, 3)
	for p := range int32(3) {
		if l, ok := c.Leader("t", p); !ok || l != (Leadership{Leader: 7}) {
			t.Fatalf("partition %d: %+v %v", p, l, ok)
		}
	}
	if n := c.Coordinator(Group, "g"); n != 7 {
		t.Fatalf("coordinator %d", n)
	}
	if _, err := c.Stop(7); !errors.Is(err, ErrLastLiveNode) {
		t.Fatalf("stopping the only node: %v", err)
	}
}

// A topic's partitions are spread over the nodes from a start that depends
// on its name only; partitions added later continue the rotation.
func TestPartitionsSpread(t *testing.T) {
	c, _ := New(0, 3)
	c.AddPartitions("t", 0, 4)
	c.AddPartitions("t", 4, 6)
	leaders := map[int32]int{}
	for p := range int32(6) {
		l, ok := c.Leader("t", p)
		if !ok || l.Epoch != 0 {
			t.Fatalf("partition %d: %+v %v", p, l, ok)
		}
		leaders[l.Leader]++
		next, _ := c.Leader("t", (p+1)%6)
		if (l.Leader+1)%3 != next.Leader {
			t.Fatalf("partition %d on %d, the next on %d: not a rotation", p, l.Leader, next.Leader)
		}
	}
	if len(leaders) != 3 || leaders[0] != 2 {
		t.Fatalf("leaders per node %v, want two each", leaders)
	}
	d, _ := New(0, 3)
	d.AddPartitions("t", 0, 6)
	if c.Partitions()[0] != d.Partitions()[0] {
		t.Fatal("the same name placed differently")
	}
	if _, ok := c.Leader("t", 6); ok {
		t.Fatal("partition 6 was never added")
	}
	c.RemoveTopic("t")
	if _, ok := c.Leader("t", 0); ok {
		t.Fatal("a removed topic still has leaders")
	}
}

func TestMoveLeader(t *testing.T) {
	c, _ := New(0, 3)
	c.AddPartitions("t", 0, 1)
	before, _ := c.Leader("t", 0)
	to := (before.Leader + 1) % 3
	l, err := c.MoveLeader("t", 0, to)
	if err != nil || l != (Leadership{Leader: to, Epoch: 1}) {
		t.Fatalf("moved: %+v %v", l, err)
	}
	for _, tc := range []struct {
		topic string
		p     int32
		node  int32
		err   error
	}{
		{"t", 1, 0, ErrUnknownPartition},
		{"u", 0, 0, ErrUnknownPartition},
		{"t", 0, 3, ErrUnknownNode},
		{"t", 0, -1, ErrUnknownNode},
	} {
		if _, err := c.MoveLeader(tc.topic, tc.p, tc.node); !errors.Is(err, tc.err) {
			t.Fatalf("move %s-%d to %d: %v, want %v", tc.topic, tc.p, tc.node, err, tc.err)
		}
	}
	if got, _ := c.Leader("t", 0); got != l {
		t.Fatalf("a refused move changed the leader: %+v", got)
	}
	// leader-move: moving a partition to its own leader changes nothing.
	if again, err := c.MoveLeader("t", 0, to); err != nil || again != l {
		t.Fatalf("moved to its own leader: %+v %v, want %+v", again, err, l)
	}
}

// replica-order, java-hash: partition p's replicas start at
// (abs(javaHash(topic)) + p) mod n, its preferred leader.
func TestReplicaOrder(t *testing.T) {
	c, _ := New(10, 3)
	c.AddPartitions("group", 0, 2) // "group".hashCode() == 98629247; mod 3 == 2
	for p, want := range [][]int32{{12, 10, 11}, {10, 11, 12}} {
		if got := c.Replicas("group", int32(p)); !slices.Equal(got, want) {
			t.Errorf("partition %d: replicas %v, want %v", p, got, want)
		}
		if l, _ := c.Leader("group", int32(p)); l.Leader != want[0] {
			t.Errorf("partition %d: led by %d, want %d", p, l.Leader, want[0])
		}
	}
}

// failover-order: a stopped leader's partition goes to the first live
// node of its replica list, counted from the preferred leader rather than
// from the node that stopped.
func TestFailoverOrder(t *testing.T) {
	c, _ := New(0, 3)
	c.AddPartitions("group", 0, 1) // replicas [2 0 1]
	if _, err := c.MoveLeader("group", 0, 1); err != nil {
		t.Fatal(err)
	}
	moved, err := c.Stop(1)
	if err != nil || len(moved) != 1 || moved[0].Leadership != (Leadership{Leader: 2, Epoch: 2}) {
		t.Fatalf("stop 1: %+v %v, want node 2 (the preferred leader) at epoch 2", moved, err)
	}
}

// Stopping a node fails its leaderships and coordinators over to the next
// live node with the epoch raised; starting it again gives nothing back.
func TestStopAndStart(t *testing.T) {
	c, _ := New(0, 3)
	c.AddPartitions("t", 0, 3)
	var onOne int32 = -1
	for p := range int32(3) {
		if l, _ := c.Leader("t", p); l.Leader == 1 {
			onOne = p
		}
	}
	key := keyOnSlotOf(t, 1, 3) // a group whose slot node 1 leads
	if err := c.MoveCoordinator(Transaction, "x", 1); err != nil {
		t.Fatal(err)
	}
	moved, err := c.Stop(1)
	if err != nil || len(moved) != 1 || moved[0].Partition != onOne || moved[0].Leadership != (Leadership{Leader: 2, Epoch: 1}) {
		t.Fatalf("stop 1: moved %+v, %v", moved, err)
	}
	if n := c.Coordinator(Group, key); n != 2 {
		t.Fatalf("group %q coordinated by %d after node 1 stopped", key, n)
	}
	// coordinator-override: the pin to the stopped node is dropped; "x"
	// follows its slot's leader (slot 20, on node 2) and stays there when
	// node 1 comes back.
	if n := c.Coordinator(Transaction, "x"); n != 2 {
		t.Fatalf("moved transactional ID coordinated by %d after node 1 stopped", n)
	}
	if len(c.moved) != 0 {
		t.Fatalf("pins left after their node stopped: %v", c.moved)
	}
	if live := c.LiveNodes(); len(live) != 2 || live[0] != 0 || live[1] != 2 {
		t.Fatalf("live nodes %v", live)
	}
	if _, err := c.MoveLeader("t", 0, 1); !errors.Is(err, ErrNodeDown) {
		t.Fatalf("moving to a stopped node: %v", err)
	}
	if _, err := c.Stop(1); !errors.Is(err, ErrNodeDown) {
		t.Fatalf("stopping twice: %v", err)
	}
	if _, err := c.Stop(0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stop(2); !errors.Is(err, ErrLastLiveNode) {
		t.Fatalf("stopping the last live node: %v", err)
	}
	if err := c.Start(1); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(1); !errors.Is(err, ErrNodeUp) {
		t.Fatalf("starting twice: %v", err)
	}
	for _, p := range c.Partitions() {
		if p.Leader != 2 {
			t.Fatalf("%+v: a restarted node took leadership back", p)
		}
	}
	if nodes := c.Nodes(); !nodes[1].Up || nodes[0].Up {
		t.Fatalf("nodes %+v", nodes)
	}
}

// keyOnSlotOf finds a key whose slot starts on node of an n-node cluster.
func keyOnSlotOf(t *testing.T, node, n int) string {
	t.Helper()
	for i := range 1000 {
		key := "g" + strconv.Itoa(i)
		if Slot(key)%n == node {
			return key
		}
	}
	t.Fatal("no key found")
	return ""
}

// Slot is Kafka's partitionFor: abs(String.hashCode) mod 50.
func TestSlotIsJavaHashCode(t *testing.T) {
	for _, tc := range []struct {
		key  string
		slot int
	}{
		{"", 0},
		{"a", 97 % 50},               // "a".hashCode() == 97
		{"group", 98629247 % 50},     // "group".hashCode() == 98629247
		{"polygenelubricants", 0},    // hashCode() == Integer.MIN_VALUE: Utils.abs gives 0
		{"\U0001F600", 1772899 % 50}, // a surrogate pair: 31*0xD83D + 0xDE00
	} {
		if got := Slot(tc.key); got != tc.slot {
			t.Errorf("Slot(%q) = %d, want %d", tc.key, got, tc.slot)
		}
	}
}

// The package sees no kmsg and no sockets (docs/design.md, the layering
// rule): the standard library only.
func TestImportsStayInside(t *testing.T) {
	layering.CheckImports(t)
}
