package broker

import (
	"fmt"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/storage"
)

// The group.share.* broker properties belong to the group package, which
// owns their names, defaults and ranges; they join the one property table
// here so that --config, DescribeConfigs and the README see them like any
// other property.
var shareBrokerPropertyDocs = map[string]string{
	"group.share.record.lock.duration.ms":           "Default acquisition lock duration of share groups (share.record.lock.duration.ms).",
	"group.share.min.record.lock.duration.ms":       "Lowest share.record.lock.duration.ms a group may set.",
	"group.share.max.record.lock.duration.ms":       "Highest share.record.lock.duration.ms a group may set.",
	"group.share.delivery.count.limit":              "Default delivery attempts before a record is archived (share.delivery.count.limit).",
	"group.share.min.delivery.count.limit":          "Lowest share.delivery.count.limit a group may set (Kafka 4.3).",
	"group.share.max.delivery.count.limit":          "Highest share.delivery.count.limit a group may set (Kafka 4.3).",
	"group.share.partition.max.record.locks":        "Default in-flight record limit per share partition (share.partition.max.record.locks).",
	"group.share.min.partition.max.record.locks":    "Lowest share.partition.max.record.locks a group may set (Kafka 4.3).",
	"group.share.max.partition.max.record.locks":    "Highest share.partition.max.record.locks a group may set (Kafka 4.3).",
	"group.share.max.share.sessions":                "Most share sessions the broker holds; must be at least group.share.max.size.",
	"group.share.max.size":                          "Most members of one share group.",
	"group.share.session.timeout.ms":                "Default member session timeout of share groups (share.session.timeout.ms).",
	"group.share.min.session.timeout.ms":            "Lowest share.session.timeout.ms a group may set.",
	"group.share.max.session.timeout.ms":            "Highest share.session.timeout.ms a group may set.",
	"group.share.heartbeat.interval.ms":             "Default heartbeat interval of share groups (share.heartbeat.interval.ms).",
	"group.share.min.heartbeat.interval.ms":         "Lowest share.heartbeat.interval.ms a group may set.",
	"group.share.max.heartbeat.interval.ms":         "Highest share.heartbeat.interval.ms a group may set.",
	"group.share.assignors":                         "Share group assignor; only simple exists.",
	"share.fetch.purgatory.purge.interval.requests": "Accepted for compatibility; has no effect here.",
}

func init() {
	for _, sp := range group.ShareBrokerProperties() {
		p := property{name: sp.Name, def: sp.Default, kind: kindInt, scope: scopeBroker,
			min: sp.Min, max: sp.Max, doc: shareBrokerPropertyDocs[sp.Name]}
		if sp.Min == 0 && sp.Max == 0 { // group.share.assignors, the one string
			p.kind, p.enum = kindEnum, []string{sp.Default}
		}
		if p.doc == "" {
			panic("broker: no documentation for share property " + sp.Name)
		}
		properties = append(properties, p)
	}
}

// shareConfig builds the group package's broker-level configuration from
// the validated properties and checks the rules that tie them together
// (min/max pairs, session timeout above heartbeat interval), naming the
// property that breaks one.
func shareConfig(props brokerProps) (group.ShareConfig, error) {
	cfg := group.DefaultShareConfig()
	for _, sp := range group.ShareBrokerProperties() {
		if err := sp.Set(&cfg, props[sp.Name]); err != nil {
			return cfg, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("share group configuration: %w", err)
	}
	return cfg, nil
}

// topicInfo resolves a topic for the share-group coordinator.
func (b *Broker) topicInfo(name string) (group.TopicInfo, bool) {
	t := b.store.Topic(name)
	if t == nil {
		return group.TopicInfo{}, false
	}
	return topicInfoOf(t), true
}

func topicInfoOf(t *storage.Topic) group.TopicInfo {
	return group.TopicInfo{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions()))}
}
