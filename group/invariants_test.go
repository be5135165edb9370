package group

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The checks must hold on a healthy group and catch a broken one; each
// case breaks one field directly, as a bug in the coordinator would.
func TestClassicCheckInvariants(t *testing.T) {
	e := newClassicEnv(t, func(c *ClassicConfig) { c.InitialRebalanceDelay = 0 })
	ready(t, e.cg.Join(joinIn("g", "")))
	if err := e.cg.CheckInvariants(); err != nil {
		t.Fatalf("healthy group: %v", err)
	}
	g := e.cg.groups["g"]
	for _, tc := range []struct {
		want    string
		breakIt func()
	}{
		{"leader", func() { g.leader = "nobody" }},
		{"join order", func() { g.order = append(g.order, g.order[0]) }},
		{"pending sync", func() { g.pendingSync = map[string]bool{"nobody": true} }},
	} {
		leader, pendingSync, order := g.leader, g.pendingSync, append([]string(nil), g.order...)
		tc.breakIt()
		err := e.cg.CheckInvariants()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("breaking %s: got %v", tc.want, err)
		}
		g.leader, g.pendingSync, g.order = leader, pendingSync, order
	}
	if err := e.cg.CheckInvariants(); err != nil {
		t.Fatalf("restored group: %v", err)
	}
}

func TestConsumerCheckInvariants(t *testing.T) {
	e := newConsumerEnv(t)
	e.join("m1", "t")
	if err := e.cg.CheckInvariants(); err != nil {
		t.Fatalf("healthy group: %v", err)
	}
	for _, g := range e.cg.groups {
		g.owner[topicPartition{}] = "m9"
	}
	if err := e.cg.CheckInvariants(); err == nil || !strings.Contains(err.Error(), "owned by") {
		t.Fatalf("an owner that is no member: got %v", err)
	}
}

// Share-group invariants hold through a random walk of joins, heartbeats,
// subscription changes, leaves, session timeouts and partitions added,
// checked after every step.
func TestShareCheckInvariantsHoldThroughAWalk(t *testing.T) {
	e := newShareEnv(t, func(c *ShareConfig) { c.MaxSize = 4 })
	rng := rand.New(rand.NewPCG(1, 2))
	topics := []string{"A", "B", "C"}
	epochs := map[string]int32{} // members we believe are in the group
	for step := range 2000 {
		member := fmt.Sprintf("m%d", rng.IntN(6))
		in := ShareHeartbeatInput{GroupID: "g", MemberID: member}
		epoch, in_ := epochs[member]
		switch op := rng.IntN(10); {
		case !in_ || op == 0: // join, or rejoin with epoch 0
			in.SubscribedTopicNames = []string{topics[rng.IntN(3)], topics[rng.IntN(3)]}
		case op == 1:
			in.MemberEpoch = -1
		case op == 2:
			in.MemberEpoch, in.SubscribedTopicNames = epoch, []string{topics[rng.IntN(3)]}
		case op == 3:
			e.clock.Advance(time.Duration(rng.IntN(50)) * time.Second)
			in.MemberEpoch = epoch
		case op == 4:
			topic := topics[rng.IntN(3)]
			e.setPartitions(topic, e.topics[topic].Partitions+1)
			in.MemberEpoch = epoch
		default:
			in.MemberEpoch = epoch
		}
		res, err := e.sg.Heartbeat(in, e.clock.Now())
		switch {
		case err != nil || res.MemberEpoch < 0:
			delete(epochs, member)
		default:
			epochs[member] = res.MemberEpoch
		}
		if err := e.sg.CheckInvariants(); err != nil {
			t.Fatalf("step %d (%+v): %v", step, in, err)
		}
	}
}

// The share-group checks catch each kind of breakage; each case breaks
// one thing directly, as a bug in the coordinator would.
func TestShareCheckInvariantsCatch(t *testing.T) {
	for _, tc := range []struct {
		want    string
		breakIt func(e *shareEnv, g *shareGroup)
	}{
		{"join order", func(e *shareEnv, g *shareGroup) { g.order = append(g.order, g.order[0]) }},
		{"outside (previous, assignment epoch]", func(e *shareEnv, g *shareGroup) { g.members["m1"].epoch = g.groupEpoch + 1 }},
		{"assignment epoch outside", func(e *shareEnv, g *shareGroup) { g.assignmentEpoch = g.groupEpoch + 1 }},
		{"does not hold its target", func(e *shareEnv, g *shareGroup) { g.members["m1"].assigned = map[topicPartition]bool{} }},
		{"not a member", func(e *shareEnv, g *shareGroup) { g.target["ghost"] = map[topicPartition]bool{} }},
		{"not a partition of its subscription", func(e *shareEnv, g *shareGroup) {
			g.target["m1"][topicPartition{tid("B"), 0}] = true
		}},
		{"holders", func(e *shareEnv, g *shareGroup) { // C has 4 partitions for 2 members: one holder each
			for p := range int32(4) {
				g.target["m1"][topicPartition{tid("C"), p}] = true
				g.target["m2"][topicPartition{tid("C"), p}] = true
			}
		}},
		{"above its quota", func(e *shareEnv, g *shareGroup) { // quotas [2, 2]: m2 gives m1 one of its own
			for tp := range g.target["m2"] {
				delete(g.target["m2"], tp)
				g.target["m1"][tp] = true
				break
			}
		}},
		{"no target assignment at the group epoch", func(e *shareEnv, g *shareGroup) {
			// m1 as before its last heartbeat, so only the bounds see it.
			m := g.members["m1"]
			m.epoch, m.prevEpoch = 1, 0
			delete(g.target, "m1")
		}},
		{"no session timer", func(e *shareEnv, g *shareGroup) { g.members["m1"].timer = nil }},
		{"session timers pending", func(e *shareEnv, g *shareGroup) { e.sg.timers.Cancel(g.members["m1"].timer) }},
		{"registry", func(e *shareEnv, g *shareGroup) { e.sg.registry.Release("g", TypeShare) }},
		{"group.share.max.size", func(e *shareEnv, g *shareGroup) { e.sg.broker.MaxSize = 1 }},
		{"still listed", func(e *shareEnv, g *shareGroup) { g.deleted = true }},
	} {
		t.Run(tc.want, func(t *testing.T) {
			e := newShareEnv(t, nil)
			e.join("m1", "C")
			e.join("m2", "C")
			e.beat("m1", 1)
			if err := e.sg.CheckInvariants(); err != nil {
				t.Fatalf("healthy group: %v", err)
			}
			tc.breakIt(e, e.sg.groups["g"])
			if err := e.sg.CheckInvariants(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
