package broker

// The bounds on Kafka connections (package internal/connquota, properties
// in brokerconfig/connections.go): each node's listeners are bound through
// its Quotas, whose Accept keeps max.connections and
// max.connections.per.ip and whose timer closes connections idle for
// connections.max.idle.ms on the broker clock.

import (
	"net"

	"github.com/sharebroker/sharebroker/internal/connquota"
)

// newQuotas makes one Quotas per node: Kafka counts connections per broker.
func (b *Broker) newQuotas() {
	c := b.cfg.props.Connections()
	limits := connquota.Limits{MaxConnections: c.MaxConnections, MaxPerIP: c.MaxPerIP, MaxIdle: c.MaxIdle}
	b.quotas = make([]*connquota.Quotas, b.cfg.Nodes)
	for i := range b.quotas {
		b.quotas[i] = connquota.New(b.clock, limits, b.log.With("node", b.cfg.NodeID+int32(i)))
	}
}

// listenKafka binds addr for a Kafka listener of node index i, within the
// node's connection bounds.
func (b *Broker) listenKafka(i int, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return b.quotas[i].Listener(ln), nil
}
