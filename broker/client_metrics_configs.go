package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/brokerconfig"
	"github.com/sharebroker/sharebroker/configdef"
	"github.com/sharebroker/sharebroker/internal/refusal"
	"github.com/sharebroker/sharebroker/telemetry"
)

// CLIENT_METRICS (16) config resources: the client telemetry
// subscriptions package telemetry keeps (docs/telemetry.md
// telemetry-subscription-configs). DescribeConfigs, AlterConfigs and
// IncrementalAlterConfigs translate to it here.

// clientMetricsProps describe the CLIENT_METRICS configs as the config
// handlers describe properties.
var clientMetricsProps = func() map[string]*brokerconfig.Property {
	out := make(map[string]*brokerconfig.Property, len(telemetry.ConfigDefs))
	for _, d := range telemetry.ConfigDefs {
		kind := configdef.Int
		if d.List {
			kind = configdef.List
		}
		out[d.Name] = &brokerconfig.Property{Name: d.Name, Default: d.Default, Kind: kind, Doc: d.Doc}
	}
	return out
}()

// clientMetricsProperty looks up a CLIENT_METRICS config by name.
func clientMetricsProperty(name string) (*brokerconfig.Property, bool) {
	p, ok := clientMetricsProps[name]
	return p, ok
}

// describeClientMetrics describes every config of a CLIENT_METRICS
// resource: CLIENT_METRICS_CONFIG where set, DEFAULT_CONFIG otherwise,
// values as parsed (Kafka's ConfigHelper.describeConfigs and
// createClientMetricsConfigEntry).
func (b *Broker) describeClientMetrics(name string) ([]configEntry, error) {
	values, err := b.telemetry.Describe(name)
	if err != nil {
		return nil, err
	}
	entries := make([]configEntry, 0, len(values))
	for _, v := range values {
		e := configEntry{prop: clientMetricsProps[v.Name], value: v.Value, source: kmsg.ConfigSourceDefaultConfig}
		if v.Set {
			// Kafka's createClientMetricsConfigEntry: a set config is its
			// own one synonym; a default has none.
			e.source = kmsg.ConfigSourceClientMetricsConfig
			e.synonyms = []configSynonym{{v.Name, v.Value, e.source}}
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// alterClientMetrics replaces a CLIENT_METRICS resource's configs with
// what next makes of them; an empty result deletes the subscription.
func (b *Broker) alterClientMetrics(name string, validateOnly bool, next func(current map[string]string) (map[string]string, error)) error {
	if err := b.telemetry.Alter(name, validateOnly, next); err != nil || validateOnly {
		return err
	}
	b.log.Info("client metrics subscription altered", "subscription", name)
	return nil
}

// clientMetricsOpRefused checks one IncrementalAlterConfigs operation on a
// CLIENT_METRICS resource before it is applied, as Kafka's controller does
// (ConfigurationControlManager.incrementalAlterConfigResource): APPEND or
// SUBTRACT on a config that is not a LIST, an unknown one included, is
// INVALID_CONFIG "Can't APPEND to key NAME because its type is not LIST.";
// DELETE of a config that is not set, known or not, changes nothing and is
// no error (the whole set is then checked by ClientMetricsConfigs.validate).
func clientMetricsOpRefused(c kmsg.IncrementalAlterConfigsRequestResourceConfig, p *brokerconfig.Property, known bool) error {
	switch c.Op {
	case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
		if !known || p.Kind != configdef.List {
			return refusal.New(errInvalidConfig, fmt.Sprintf("Can't %s to key %s because its type is not LIST.", c.Op, c.Name))
		}
	}
	return nil
}
