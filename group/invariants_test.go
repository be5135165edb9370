package group

import (
	"strings"
	"testing"
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
