package broker

import (
	"time"

	"github.com/sharebroker/sharebroker/clientmetrics"
	"github.com/sharebroker/sharebroker/telemetry"
)

// telemetryHooks are what client telemetry hands each accepted push to:
// the broker's own store of client metrics (docs/telemetry.md),
// then the embedder's hooks (Config.Telemetry), if any. A payload the
// store cannot decode is answered INVALID_RECORD whatever the embedder's
// Receiver says (client-metrics-decode).
func (b *Broker) telemetryHooks() telemetry.Hooks {
	store, theirs := b.clientMetrics, b.cfg.Telemetry
	return telemetry.Hooks{
		Receiver: func(c telemetry.Client, payload []byte, interval time.Duration, now time.Time) error {
			err := store.Receive(clientmetrics.Client(c), payload, interval, now)
			if theirs.Receiver != nil {
				if e := theirs.Receiver(c, payload, interval, now); err == nil {
					err = e
				}
			}
			return err
		},
		Terminated: func(c telemetry.Client, now time.Time) {
			store.Terminated(clientmetrics.Client(c), now)
			if theirs.Terminated != nil {
				theirs.Terminated(c, now)
			}
		},
		Forgotten: theirs.Forgotten,
	}
}
