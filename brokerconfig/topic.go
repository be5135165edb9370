package brokerconfig

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/sharebroker/sharebroker/configdef"
)

// TopicSettings is a topic's effective configuration: its overrides, else
// the broker property each topic property names as its synonym.
type TopicSettings struct {
	RetentionMs     int64
	RetentionBytes  int64
	MaxMessageBytes int32
	LogAppendTime   bool
	MinInsync       int32 // min.insync.replicas
}

// Overrides are a topic's own property values, validated when set;
// storage.Topic has them.
type Overrides interface {
	Config(name string) (string, bool)
}

// TopicValue returns the effective value of a topic property for a topic
// with overrides t, and whether it came from an override.
func (bp Props) TopicValue(t Overrides, name string) (string, bool) {
	if v, ok := t.Config(name); ok {
		return v, true
	}
	p, ok := Lookup(name, configdef.Topic)
	if !ok {
		return "", false
	}
	if p.Synonym == "" {
		return p.Default, false
	}
	return bp[p.Synonym], false
}

// Topic is the effective configuration of a topic with overrides t.
func (bp Props) Topic(t Overrides) TopicSettings {
	get := func(name string) int64 {
		v, _ := bp.TopicValue(t, name)
		n, _ := strconv.ParseInt(v, 10, 64) // validated when set
		return n
	}
	ts, _ := bp.TopicValue(t, "message.timestamp.type")
	return TopicSettings{
		RetentionMs:     get("retention.ms"),
		RetentionBytes:  get("retention.bytes"),
		MaxMessageBytes: int32(get("max.message.bytes")),
		LogAppendTime:   ts == "LogAppendTime",
		MinInsync:       int32(get("min.insync.replicas")),
	}
}

// ValidateTopicConfigs checks a topic's whole override set: every name
// must be a topic property and every value valid for it. The error names
// the property, as Kafka's "Unknown topic config name" does; the broker
// answers it as INVALID_CONFIG.
func ValidateTopicConfigs(configs map[string]string) error {
	if len(configs) == 0 {
		return nil // most topics: not worth sorting no names
	}
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		p, ok := Lookup(name, configdef.Topic)
		if !ok {
			return fmt.Errorf("unknown topic config name: %s", name)
		}
		if err := p.Validate(configs[name]); err != nil {
			return err
		}
	}
	return nil
}
