package broker

import "github.com/sharebroker/sharebroker/cluster"

// groupsOn returns the known groups (classic, KIP-848 and share) that node
// coordinates now: the groups a node stop moves.
func (b *Broker) groupsOn(node int32) []string {
	var out []string
	add := func(id string) {
		if b.cluster.Coordinator(cluster.Group, id) == node {
			out = append(out, id)
		}
	}
	for _, g := range b.classicGroups.List() {
		add(g.GroupID)
	}
	for _, g := range b.consumerGroups.List() {
		add(g.GroupID)
	}
	for _, g := range b.shareGroups.List() {
		add(g.GroupID)
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
func (b *Broker) groupsMoved(ids ...string) {
	for _, id := range ids {
		b.classicGroups.CoordinatorMoved(id)
		b.consumerGroups.CoordinatorMoved(id)
		b.shareGroups.CoordinatorMoved(id)
	}
}
