package broker

import (
	"fmt"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/storage"
)

// The group.share.* broker properties are declared in the group package,
// which owns their names, defaults, ranges and meaning; properties.go
// gathers them into the one property table, so that --config,
// DescribeConfigs and the README see them like any other property.

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
