package broker

// Moves driven from outside (docs/cluster.md §3.2, §4.3, §7): a
// partition's leadership, a group's or transactional ID's coordinator, and
// a node stopping and starting. Package placement makes the moves on the
// cluster, the logs, the share partitions and the group coordinators; here
// is what the edge adds: the listeners and connections of a node, the log
// lines. Broker.MoveLeader is in nodes.go; the test API
// that drives them over HTTP is package httpapi's.

import (
	"fmt"
	"net"

	"github.com/sharebroker/sharebroker/cluster"
)

// MoveCoordinator makes node coordinate key, a group ID (typ
// cluster.Group) or a transactional ID (cluster.Transaction), from now on
// (coordinator-move): requests for the key on the old node answer
// NOT_COORDINATOR and clients find the new one with FindCoordinator. The
// key need not exist yet. Errors: an empty key, cluster.ErrUnknownNode,
// cluster.ErrNodeDown.
func (b *Broker) MoveCoordinator(typ cluster.CoordinatorType, key string, node int32) error {
	if err := b.placement.MoveCoordinator(typ, key, node); err != nil {
		return err
	}
	b.log.Info("coordinator moved", "type", typ.String(), "key", key, "node", node)
	return nil
}

// StopNode stops node id as a crashed broker stops (stop-fails-over,
// stop-closes-connections): every partition and coordinator it led fails
// over to the next live node of its replica list at the next leader
// epoch, its coordinator pins are dropped, then its listeners and every
// connection to it close without an answer to the requests in hand.
// Metadata no longer lists it and names it among each partition's offline
// replicas. Errors: cluster.ErrUnknownNode, cluster.ErrNodeDown, and
// cluster.ErrLastLiveNode when it is the only node up.
func (b *Broker) StopNode(id int32) error {
	b.nodesMu.Lock()
	defer b.nodesMu.Unlock()
	moved, groupsMoved, err := b.placement.Stop(id)
	if err != nil {
		return err
	}
	b.placement.LeadershipMoved(id, moved...)
	b.mu.Lock()
	for _, l := range b.listeners {
		if l.node == id {
			l.stopped = true
			l.ln.Close()
		}
	}
	for c := range b.conns {
		if c.node() == id {
			c.nc.Close()
		}
	}
	b.mu.Unlock()
	groupsMoved()
	b.log.Info("node stopped", "node", id, "leaderships_moved", len(moved))
	return nil
}

// StartNode starts node id again (start-as-follower): its listeners bind
// the addresses they had, so clients reconnect to the addresses Metadata
// gave them, and it joins every partition's in-sync replicas. It leads no
// partition and coordinates no key until one is moved to it. Errors:
// cluster.ErrUnknownNode, cluster.ErrNodeUp, or a listener that cannot
// bind its address again (the node then stays stopped).
func (b *Broker) StartNode(id int32) error {
	b.nodesMu.Lock()
	defer b.nodesMu.Unlock()
	if !b.cluster.Up(id) {
		if _, ok := b.nodeIndex(id); !ok {
			return fmt.Errorf("%w: %d", cluster.ErrUnknownNode, id)
		}
	} else {
		return fmt.Errorf("%w: %d", cluster.ErrNodeUp, id)
	}
	b.placement.PlaceAll() // before the node is up: it gains nothing
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return net.ErrClosed
	}
	var mine []*listener
	var bound []net.Listener
	for _, l := range b.listeners {
		if l.node != id {
			continue
		}
		ln, err := b.listenKafka(int(id-b.cfg.NodeID), l.bound)
		if err != nil {
			for _, o := range bound {
				o.Close()
			}
			return fmt.Errorf("node %d: listener %s: listen on %s again: %w", id, l.name, l.bound, err)
		}
		mine, bound = append(mine, l), append(bound, ln)
	}
	if err := b.cluster.Start(id); err != nil {
		for _, o := range bound {
			o.Close()
		}
		return err
	}
	b.acceptWG.Add(len(mine))
	for i, l := range mine {
		l.ln, l.stopped = bound[i], false
		go b.acceptLoop(l, bound[i])
	}
	b.log.Info("node started", "node", id)
	return nil
}

// nodeIndex is the index of node id, false if there is no such node.
func (b *Broker) nodeIndex(id int32) (int, bool) {
	i := int(id - b.cfg.NodeID)
	return i, id >= b.cfg.NodeID && i < b.cfg.Nodes
}
