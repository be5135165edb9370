package broker

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/storage"
)

// topicSettings is a topic's effective configuration: its overrides, else
// the broker property each topic property names as its synonym.
type topicSettings struct {
	retentionMs     int64
	retentionBytes  int64
	maxMessageBytes int32
	logAppendTime   bool
	minInsync       int32 // min.insync.replicas
}

// topicValue returns the effective value of a topic property and whether it
// came from an override.
func (b *Broker) topicValue(t *storage.Topic, name string) (string, bool) {
	if v, ok := t.Config(name); ok {
		return v, true
	}
	p, ok := lookupProperty(name, scopeTopic)
	if !ok {
		return "", false
	}
	if p.synonym == "" {
		return p.def, false
	}
	return b.cfg.props[p.synonym], false
}

func (b *Broker) topicConfig(t *storage.Topic) topicSettings {
	get := func(name string) int64 {
		v, _ := b.topicValue(t, name)
		n, _ := strconv.ParseInt(v, 10, 64) // validated when set
		return n
	}
	ts, _ := b.topicValue(t, "message.timestamp.type")
	return topicSettings{
		retentionMs:     get("retention.ms"),
		retentionBytes:  get("retention.bytes"),
		maxMessageBytes: int32(get("max.message.bytes")),
		logAppendTime:   ts == "LogAppendTime",
		minInsync:       int32(get("min.insync.replicas")),
	}
}

// validateTopicConfigs checks a topic's whole override set: every name must
// be a topic property and every value valid for it. The error wraps
// errInvalidConfig and names the property, as Kafka's "Unknown topic config
// name" does.
func validateTopicConfigs(configs map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		p, ok := lookupProperty(name, scopeTopic)
		if !ok {
			return fmt.Errorf("%w: unknown topic config name: %s", errInvalidConfig, name)
		}
		if err := p.validate(configs[name]); err != nil {
			return fmt.Errorf("%w: %v", errInvalidConfig, err)
		}
	}
	return nil
}

// configEntry is one property as DescribeConfigs and CreateTopics (v5+)
// report it: its effective value, where that value comes from, and, in
// order of precedence, every place that could supply it (synonyms).
type configEntry struct {
	prop     *property
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
func (b *Broker) brokerSynonyms(p *property) []configSynonym {
	var syns []configSynonym
	if _, set := b.cfg.Props[p.name]; set {
		syns = append(syns, configSynonym{p.name, b.cfg.props[p.name], kmsg.ConfigSourceStaticBrokerConfig})
	}
	return append(syns, configSynonym{p.name, p.def, kmsg.ConfigSourceDefaultConfig})
}

// topicConfigEntries describes every topic property for a topic with the
// given overrides, sorted by name. A topic property falls back to its broker
// synonym, so its synonyms are the override, then the broker's.
func (b *Broker) topicConfigEntries(overrides map[string]string) []configEntry {
	var entries []configEntry
	for i := range properties {
		p := &properties[i]
		if p.scope != scopeTopic {
			continue
		}
		var syns []configSynonym
		if p.synonym == "" { // a topic property without a broker default (KIP-1191's opt-in)
			syns = []configSynonym{{p.name, p.def, kmsg.ConfigSourceDefaultConfig}}
		} else {
			bp, _ := lookupProperty(p.synonym, scopeBroker) // every synonym exists; TestPropertyTable checks
			syns = b.brokerSynonyms(bp)
		}
		if v, ok := overrides[p.name]; ok {
			syns = append([]configSynonym{{p.name, v, kmsg.ConfigSourceDynamicTopicConfig}}, syns...)
		}
		entries = append(entries, configEntry{prop: p, value: syns[0].value, source: syns[0].source, synonyms: syns})
	}
	slices.SortFunc(entries, func(a, b configEntry) int { return strings.Compare(a.prop.name, b.prop.name) })
	return entries
}

// brokerConfigEntries describes every broker property, sorted by name. All
// of them are static in this broker, so all are read-only.
func (b *Broker) brokerConfigEntries() []configEntry {
	var entries []configEntry
	for i := range properties {
		p := &properties[i]
		if p.scope != scopeBroker {
			continue
		}
		syns := b.brokerSynonyms(p)
		entries = append(entries, configEntry{prop: p, value: syns[0].value, source: syns[0].source, readOnly: true, synonyms: syns})
	}
	slices.SortFunc(entries, func(a, b configEntry) int { return strings.Compare(a.prop.name, b.prop.name) })
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
