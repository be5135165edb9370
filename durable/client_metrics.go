package durable

import (
	"maps"
	"slices"
)

// CLIENT_METRICS subscriptions in the metadata log (docs/durability.md
// client-metrics-kept): each record holds the whole config set of one
// subscription, so a later one replaces it and an empty one deletes it.

// SetClientMetrics records a subscription's configs; none means it is
// gone.
func (d *Dir) SetClientMetrics(name string, configs map[string]string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(configs) == 0 && d.clientMetrics[name] == nil {
		return nil
	}
	if err := d.meta.append(metaRecord{Op: opClientMetrics, Name: name, Configs: configs}); err != nil {
		return err
	}
	setGroupConfig(d.clientMetrics, name, configs) // the same replace-or-delete
	return nil
}

// ClientMetrics returns the subscriptions recovered, by name.
func (d *Dir) ClientMetrics() map[string]map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]map[string]string, len(d.clientMetrics))
	for name, c := range d.clientMetrics {
		out[name] = maps.Clone(c)
	}
	return out
}

// appendClientMetrics adds one record per subscription to a snapshot.
func appendClientMetrics(b []byte, subs map[string]map[string]string) []byte {
	for _, name := range slices.Sorted(maps.Keys(subs)) {
		b = appendMetaRecord(b, metaRecord{Op: opClientMetrics, Name: name, Configs: subs[name]})
	}
	return b
}
