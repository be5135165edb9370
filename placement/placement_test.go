package placement

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/txn"
)

type env struct {
	t       *testing.T
	cluster *cluster.Cluster
	store   *storage.Store
	classic *group.ClassicGroups
	txns    *txn.Coordinator
	shares  *shareMoves
	pl      *Placement
}

// shareMoves records what LeadershipMoved asks of the share partitions.
type shareMoves struct{ moves []string }

func (s *shareMoves) LeaderMoved(_ storage.TopicID, partition int32, from, to int32) int64 {
	s.moves = append(s.moves, fmt.Sprintf("p%d %d->%d", partition, from, to))
	return 0
}

// newEnv is a placement over three nodes (0, 1, 2), an empty store,
// coordinators of every kind of group and a transaction coordinator, on a
// manual clock.
func newEnv(t *testing.T) *env {
	t.Helper()
	clock := locktimer.NewManualClock(time.Unix(1000, 0))
	c, err := cluster.New(0, 3)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, cluster: c, store: storage.NewStore()}
	topics := func(name string) (group.TopicInfo, bool) {
		tp := e.store.Topic(name)
		if tp == nil {
			return group.TopicInfo{}, false
		}
		return group.TopicInfo{Name: name, Partitions: int32(len(tp.Partitions()))}, true
	}
	reg := group.NewRegistry()
	configs := group.NewGroupConfigStore(group.DefaultShareConfig(), group.DefaultConsumerConfig())
	if e.classic, err = group.NewClassicGroups(group.ClassicOptions{Clock: clock, Config: group.DefaultClassicConfig(), Registry: reg, Topics: topics}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.classic.Close)
	consumer, err := group.NewConsumerGroups(group.ConsumerOptions{Clock: clock, Config: group.DefaultConsumerConfig(), Configs: configs, Registry: reg, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(consumer.Close)
	share, err := group.NewShareGroups(group.ShareOptions{Clock: clock, Broker: group.DefaultShareConfig(), Configs: configs, Registry: reg, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(share.Close)
	pid := int64(0)
	e.txns = txn.New(txn.Config{Clock: clock, MaxTimeout: time.Minute, CleanupInterval: time.Minute, IDExpiration: time.Hour,
		NewProducerID: func() int64 { pid++; return pid }, Complete: func(txn.Completion) {}})
	t.Cleanup(e.txns.Close)
	e.shares = &shareMoves{}
	e.pl = New(c, e.store, Groups{Classic: e.classic, Consumer: consumer, Share: share}, e.txns, e.shares)
	return e
}

func (e *env) topic(name string, partitions int32) *storage.Topic {
	e.t.Helper()
	tp, err := e.store.CreateTopic(name, partitions, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return tp
}

// group makes a classic group by a simple commit.
func (e *env) group(id string) {
	e.t.Helper()
	if _, err := e.classic.Commit(group.CommitInput{GroupID: id, Generation: -1,
		Topics: []group.CommitTopic{{Topic: "t", Partitions: []group.CommitPartition{{Partition: 0}}}}}); err != nil {
		e.t.Fatal(err)
	}
}

// A partition is placed the first time it is asked about, all of its
// topic at once; one that does not exist has no leader.
func TestLeadershipPlacesLazily(t *testing.T) {
	e := newEnv(t)
	tp := e.topic("t", 3)
	if _, ok := e.cluster.Leader("t", 0); ok {
		t.Fatal("placed before anyone asked")
	}
	l := e.pl.Leadership(tp, 1)
	if want := e.cluster.Replicas("t", 1)[0]; l.Leader != want || l.Epoch != 0 {
		t.Errorf("partition 1: %+v, want its preferred replica %d at epoch 0", l, want)
	}
	if _, ok := e.cluster.Leader("t", 2); !ok {
		t.Error("asking about partition 1 did not place partition 2")
	}
	if l := e.pl.Leadership(tp, 3); l != (cluster.Leadership{Leader: -1, Epoch: -1}) {
		t.Errorf("partition 3 of a 3-partition topic: %+v, want no leader", l)
	}
	ps := e.pl.Partitions()
	if len(ps) != 3 || ps[2].Topic != "t" || ps[2].Partition != 2 {
		t.Errorf("Partitions: %+v", ps)
	}
}

func TestMoveLeader(t *testing.T) {
	e := newEnv(t)
	tp := e.topic("t", 1)
	if _, _, err := e.pl.MoveLeader("nope", 0, 1); !errors.Is(err, cluster.ErrUnknownPartition) {
		t.Errorf("unknown topic: %v", err)
	}
	if _, _, err := e.pl.MoveLeader("t", 1, 1); !errors.Is(err, cluster.ErrUnknownPartition) {
		t.Errorf("unknown partition: %v", err)
	}
	first := e.pl.Leadership(tp, 0)
	before, after, err := e.pl.MoveLeader("t", 0, first.Leader)
	if err != nil || before != after || after != first {
		t.Errorf("move to its own leader: %+v -> %+v, %v; want no change", before, after, err)
	}
	to := (first.Leader + 1) % 3
	before, after, err = e.pl.MoveLeader("t", 0, to)
	if err != nil || before != first || after != (cluster.Leadership{Leader: to, Epoch: 1}) {
		t.Errorf("move to %d: %+v -> %+v, %v", to, before, after, err)
	}
	if _, _, err := e.pl.MoveLeader("t", 0, 7); !errors.Is(err, cluster.ErrUnknownNode) {
		t.Errorf("unknown node: %v", err)
	}
}

// epoch-cache, move-frees-acquired, move-wakes-polls: a leader move
// starts the new epoch in the log, hands the share partitions over, and
// wakes what is parked on the log, in that order.
func TestLeadershipMovedReachesLogAndShares(t *testing.T) {
	e := newEnv(t)
	tp := e.topic("t", 2)
	wake := make(chan struct{}, 1)
	tp.Partition(1).Watch(wake)
	e.pl.LeadershipMoved(0, cluster.PartitionLeadership{Topic: "t", Partition: 1, Leadership: cluster.Leadership{Leader: 2, Epoch: 3}},
		cluster.PartitionLeadership{Topic: "gone", Partition: 0, Leadership: cluster.Leadership{Leader: 2, Epoch: 1}})
	if epoch, _ := tp.Partition(1).EndOffsetForEpoch(3); epoch != 3 {
		t.Errorf("epoch 3 unknown to the log after the move (it knows %d)", epoch)
	}
	if want := []string{"p1 0->2"}; !slices.Equal(e.shares.moves, want) {
		t.Errorf("share moves %v, want %v (a deleted topic moves nothing)", e.shares.moves, want)
	}
	select {
	case <-wake:
	default:
		t.Error("the parked poll was not woken")
	}
}

// A partition never asked about fails over with the stop as if it had
// been placed at creation (start-as-follower's other half); the groups
// the node coordinated move once the caller says so.
func TestStopMovesWhatTheNodeLed(t *testing.T) {
	e := newEnv(t)
	e.topic("t", 3)
	e.group("g")
	node := e.cluster.Coordinator(cluster.Group, "g")
	var led []int32
	for p := range int32(3) {
		if e.cluster.Replicas("t", p)[0] == node {
			led = append(led, p)
		}
	}
	moved, groupsMoved, err := e.pl.Stop(node)
	if err != nil {
		t.Fatal(err)
	}
	var got []int32
	for _, m := range moved {
		if m.Topic != "t" || m.Epoch != 1 || m.Leader == node {
			t.Errorf("moved %+v", m)
		}
		got = append(got, m.Partition)
	}
	slices.Sort(got)
	if !slices.Equal(got, led) {
		t.Errorf("moved partitions %v, want the ones node %d led: %v", got, node, led)
	}
	if c := e.cluster.Coordinator(cluster.Group, "g"); c == node {
		t.Errorf("group g still on stopped node %d", c)
	}
	groupsMoved() // unknown to no coordinator, so it must not panic
	if _, _, err := e.pl.Stop(node); !errors.Is(err, cluster.ErrNodeDown) {
		t.Errorf("second stop: %v", err)
	}
}

func TestMoveCoordinatorAndList(t *testing.T) {
	e := newEnv(t)
	e.topic("t", 1)
	e.group("b")
	e.group("a")
	if _, _, err := e.txns.InitProducerID("x", time.Second, -1, -1); err != nil {
		t.Fatal(err)
	}
	if err := e.pl.MoveCoordinator(cluster.Group, "", 1); err == nil {
		t.Error("moved the coordinator of an empty key")
	}
	if err := e.pl.MoveCoordinator(cluster.Group, "a", 9); !errors.Is(err, cluster.ErrUnknownNode) {
		t.Errorf("to an unknown node: %v", err)
	}
	to := (e.cluster.Coordinator(cluster.Group, "a") + 1) % 3
	if err := e.pl.MoveCoordinator(cluster.Group, "a", to); err != nil {
		t.Fatal(err)
	}
	if err := e.pl.MoveCoordinator(cluster.Transaction, "x", 2); err != nil {
		t.Fatal(err)
	}
	want := []Coordinator{
		{cluster.Group, "a", to},
		{cluster.Group, "b", e.cluster.Coordinator(cluster.Group, "b")},
		{cluster.Transaction, "x", 2},
	}
	if got := e.pl.Coordinators(); !slices.Equal(got, want) {
		t.Errorf("Coordinators: %+v, want %+v", got, want)
	}
}
