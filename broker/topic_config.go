package broker

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/brokerconfig"
	"github.com/sharebroker/sharebroker/configdef"
	"github.com/sharebroker/sharebroker/storage"
)

// topicSettings is a topic's effective configuration (brokerconfig).
type topicSettings = brokerconfig.TopicSettings

func (b *Broker) topicConfig(t *storage.Topic) topicSettings { return b.cfg.props.Topic(t) }

// validateTopicConfigs checks a topic's whole override set
// (brokerconfig.ValidateTopicConfigs). The error wraps errInvalidConfig
// and names the property, as Kafka's "Unknown topic config name" does.
func validateTopicConfigs(configs map[string]string) error {
	if err := brokerconfig.ValidateTopicConfigs(configs); err != nil {
		return fmt.Errorf("%w: %v", errInvalidConfig, err)
	}
	return nil
}

// configType is a property's kind as DescribeConfigs (v3+) reports it.
func configType(k configdef.Kind) kmsg.ConfigType {
	switch k {
	case configdef.Int:
		return kmsg.ConfigTypeInt
	case configdef.Long:
		return kmsg.ConfigTypeLong
	case configdef.Bool:
		return kmsg.ConfigTypeBoolean
	case configdef.Enum, configdef.String:
		return kmsg.ConfigTypeString
	case configdef.List:
		return kmsg.ConfigTypeList
	case configdef.Double:
		return kmsg.ConfigTypeDouble
	}
	return 0
}

// configEntry is one property as DescribeConfigs and CreateTopics (v5+)
// report it: its effective value, where that value comes from, and, in
// order of precedence, every place that could supply it (synonyms).
type configEntry struct {
	prop     *brokerconfig.Property
	value    string
	source   kmsg.ConfigSource
	readOnly bool
	synonyms []configSynonym
}

type configSynonym struct {
	name   string
	value  string
	source kmsg.ConfigSource
}

// brokerSynonyms lists where a broker property's value can come from: the
// static setting (--config) if any, then Kafka's default.
func (b *Broker) brokerSynonyms(p *brokerconfig.Property) []configSynonym {
	var syns []configSynonym
	if _, set := b.cfg.Props[p.Name]; set {
		syns = append(syns, configSynonym{p.Name, b.cfg.props[p.Name], kmsg.ConfigSourceStaticBrokerConfig})
	}
	return append(syns, configSynonym{p.Name, p.Default, kmsg.ConfigSourceDefaultConfig})
}

// topicConfigEntries describes every topic property for a topic with the
// given overrides, sorted by name. A topic property falls back to its broker
// synonym, so its synonyms are the override, then the broker's.
//
// The entries are read-only: without overrides they are the broker's one
// description of the defaults (topicDefaults), shared by every caller, and
// with overrides they share its synonym lists.
func (b *Broker) topicConfigEntries(overrides map[string]string) []configEntry {
	defaults := b.cfg.topicDefaults.get(b).entries
	if len(overrides) == 0 {
		return defaults
	}
	entries := slices.Clone(defaults)
	for i := range entries {
		e := &entries[i]
		if v, ok := overrides[e.prop.Name]; ok {
			e.synonyms = append([]configSynonym{{e.prop.Name, v, kmsg.ConfigSourceDynamicTopicConfig}}, e.synonyms...)
			e.value, e.source = v, kmsg.ConfigSourceDynamicTopicConfig
		}
	}
	return entries
}

// topicDefaults is the description of every topic property of a topic
// without overrides (entries), and CreateTopics' answer of them
// (created), made the first time they are asked for: the property table
// and the static broker settings they read never change after resolve.
// CreateTopics answers them for each topic it creates, so making them
// afresh each time (a scan of the table, a lookup per synonym, a sort and
// some eighty allocations) was most of what creating a topic cost
// (issue 22). Both are read-only.
type topicDefaults struct {
	once    sync.Once
	entries []configEntry
	created []kmsg.CreateTopicsResponseTopicConfig
}

func (d *topicDefaults) get(b *Broker) *topicDefaults {
	d.once.Do(func() {
		for p := range brokerconfig.Properties() {
			if p.Scope != configdef.Topic {
				continue
			}
			var syns []configSynonym
			if p.Synonym == "" { // a topic property without a broker default (KIP-1191's opt-in)
				syns = []configSynonym{{p.Name, p.Default, kmsg.ConfigSourceDefaultConfig}}
			} else {
				bp, _ := brokerconfig.Lookup(p.Synonym, configdef.Broker) // every synonym exists; TestPropertyTable checks
				syns = b.brokerSynonyms(bp)
			}
			d.entries = append(d.entries, configEntry{prop: p, value: syns[0].value, source: syns[0].source, synonyms: slices.Clip(syns)})
		}
		slices.SortFunc(d.entries, func(a, b configEntry) int { return strings.Compare(a.prop.Name, b.prop.Name) })
		d.entries = slices.Clip(d.entries)
		d.created = createdConfigs(d.entries)
	})
	return d
}

// brokerConfigEntries describes every broker property, sorted by name. All
// of them are static in this broker, so all are read-only.
func (b *Broker) brokerConfigEntries() []configEntry {
	var entries []configEntry
	for p := range brokerconfig.Properties() {
		if p.Scope != configdef.Broker {
			continue
		}
		syns := b.brokerSynonyms(p)
		entries = append(entries, configEntry{prop: p, value: syns[0].value, source: syns[0].source, readOnly: true, synonyms: syns})
	}
	slices.SortFunc(entries, func(a, b configEntry) int { return strings.Compare(a.prop.Name, b.prop.Name) })
	return entries
}

// applyTopicRetention applies the topic's retention now, so that a lowered
// retention.ms or retention.bytes is visible as soon as the alter returns
// rather than at the next retention check.
func (b *Broker) applyTopicRetention(t *storage.Topic) {
	tc := b.topicConfig(t)
	nowMs := b.clock.Now().UnixMilli()
	for _, p := range t.Partitions() {
		b.retain(p, tc, nowMs)
	}
}
