package persist

import "github.com/sharebroker/sharebroker/durable"

// CLIENT_METRICS subscriptions in the data directory (docs/durability.md
// client-metrics-kept): restored at start, every later change written.

// ClientMetrics is the client telemetry subscriptions as the binding sees
// them (package telemetry's Manager).
type ClientMetrics interface {
	// Restore puts back one kept subscription; an error means its configs
	// no longer pass and it was not restored.
	Restore(name string, configs map[string]string) error
	// SetJournal has j told every later change: the subscription's whole
	// config set, none when deleted.
	SetJournal(j func(name string, configs map[string]string))
}

// restoreClientMetrics applies the kept subscriptions, then has every
// later change written. A subscription that no longer passes is skipped
// with a warning: it cannot be served, and it is not worth refusing the
// start for.
func (b *Binding) restoreClientMetrics(d *durable.Dir) {
	cm := b.st.ClientMetrics
	if cm == nil {
		return
	}
	for name, configs := range d.ClientMetrics() {
		if err := cm.Restore(name, configs); err != nil {
			b.cfg.Log.Warn("client metrics subscription not restored", "subscription", name, "err", err)
		}
	}
	cm.SetJournal(func(name string, configs map[string]string) {
		if err := d.SetClientMetrics(name, configs); err != nil {
			b.cfg.Log.Warn("client metrics subscription change not recorded", "subscription", name, "err", err)
		}
	})
}
