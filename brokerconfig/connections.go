package brokerconfig

import (
	"fmt"
	"time"

	"github.com/sharebroker/sharebroker/configdef"
)

// Property names of the connection bounds (internal/connquota applies
// them, the broker's SASL gate the failed-authentication delay).
const (
	PropConnectionsMaxIdle        = "connections.max.idle.ms"
	PropMaxConnections            = "max.connections"
	PropMaxConnectionsPerIP       = "max.connections.per.ip"
	PropFailedAuthDelay           = "connection.failed.authentication.delay.ms"
	int64Min                int64 = -1 << 63
)

// connectionProperties are Kafka's SocketServerConfigs bounds on client
// connections, with Kafka's names, types and defaults (docs/security.md,
// "Connections").
var connectionProperties = []configdef.Def{
	{Name: PropConnectionsMaxIdle, Default: "600000", Kind: configdef.Long, Scope: configdef.Broker, Min: int64Min, Max: configdef.Int64Max,
		Doc: "A Kafka connection with no request for this long, on the broker clock, is closed (connections-max-idle); a request parked in a long poll is not idle. Negative: never."},
	{Name: PropMaxConnections, Default: "2147483647", Kind: configdef.Int, Scope: configdef.Broker, Min: 0, Max: configdef.Int32Max,
		Doc: "Connections each Kafka listener of each node holds at once (max-connections); at the cap the listener accepts the next only when one closes, as Kafka blocks its acceptor. Kafka's broker-wide total and `listener.name.*` prefixes are not read: every listener has this cap of its own."},
	{Name: PropMaxConnectionsPerIP, Default: "2147483647", Kind: configdef.Int, Scope: configdef.Broker, Min: 1, Max: configdef.Int32Max,
		Doc: "Connections one client IP holds to a node, across its listeners (max-connections-per-ip); one more is closed as soon as it is accepted. Kafka's 0 needs `max.connections.per.ip.overrides`, which is not read."},
	{Name: PropFailedAuthDelay, Default: "100", Kind: configdef.Int, Scope: configdef.Broker, Min: 0, Max: configdef.Int32Max,
		Doc: "How long, in real time, the answer to a failed SASL authentication is held before it is sent and the connection closed (failed-authentication-delay). Must be less than connections.max.idle.ms unless that is negative."},
}

// Connections are the bounds on Kafka connections the properties set;
// a zero or negative duration or count is no bound.
type Connections struct {
	MaxIdle         time.Duration
	MaxConnections  int
	MaxPerIP        int
	FailedAuthDelay time.Duration
}

// Connections reads the connection bounds.
func (bp Props) Connections() Connections {
	c := Connections{
		MaxConnections:  int(bp.Int32(PropMaxConnections)),
		MaxPerIP:        int(bp.Int32(PropMaxConnectionsPerIP)),
		FailedAuthDelay: time.Duration(bp.Int64(PropFailedAuthDelay)) * time.Millisecond,
	}
	if ms := bp.Int64(PropConnectionsMaxIdle); ms > 0 {
		c.MaxIdle = time.Duration(min(ms, int64(configdef.Int64Max/time.Millisecond))) * time.Millisecond
	} else if ms == 0 {
		c.MaxIdle = time.Nanosecond // Kafka's 0: idle at once
	}
	return c
}

// checkConnections refuses a failed-authentication delay that is not
// below the idle time, as KafkaConfig.validateValues does: the delayed
// answer would otherwise meet a closed connection.
func checkConnections(bp Props) error {
	idle, delay := bp.Int64(PropConnectionsMaxIdle), bp.Int64(PropFailedAuthDelay)
	if idle >= 0 && delay >= idle {
		return fmt.Errorf("%s=%d must be less than %s=%d, or the delayed answer to a failed authentication would find its connection closed",
			PropFailedAuthDelay, delay, PropConnectionsMaxIdle, idle)
	}
	return nil
}
