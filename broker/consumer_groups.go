package broker

import (
	"fmt"
	"strings"
	"time"

	"github.com/sharebroker/sharebroker/group"
)

// consumerConfig builds the KIP-848 consumer group coordinator's
// configuration from the validated group.consumer.* properties.
func consumerConfig(props brokerProps) (group.ConsumerConfig, error) {
	ms := func(name string) time.Duration { return time.Duration(props.int64(name)) * time.Millisecond }
	cfg := group.ConsumerConfig{
		SessionTimeout:         ms("group.consumer.session.timeout.ms"),
		MinSessionTimeout:      ms("group.consumer.min.session.timeout.ms"),
		MaxSessionTimeout:      ms("group.consumer.max.session.timeout.ms"),
		HeartbeatInterval:      ms("group.consumer.heartbeat.interval.ms"),
		MinHeartbeatInterval:   ms("group.consumer.min.heartbeat.interval.ms"),
		MaxHeartbeatInterval:   ms("group.consumer.max.heartbeat.interval.ms"),
		MaxSize:                props.int32("group.consumer.max.size"),
		OffsetMetadataMaxBytes: props.int32("offset.metadata.max.bytes"),
		OffsetsRetention:       time.Duration(props.int64("offsets.retention.minutes")) * time.Minute,
		RetentionCheckInterval: ms("offsets.retention.check.interval.ms"),
	}
	for _, a := range strings.Split(props["group.consumer.assignors"], ",") {
		if a = strings.TrimSpace(a); a != "" {
			cfg.Assignors = append(cfg.Assignors, a)
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("consumer group configuration: %w", err)
	}
	return cfg, nil
}

// topicNames lists every topic, for regex subscriptions.
func (b *Broker) topicNames() []string {
	topics := b.store.Topics()
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.Name
	}
	return names
}
