package brokerconfig

import (
	"fmt"
	"strings"
	"time"

	"github.com/sharebroker/sharebroker/group"
)

// The group coordinators' configurations, made from the validated broker
// properties. The group package declares the group.share.* properties
// (names, defaults, ranges, meaning) and checks the rules that tie values
// together; the group.* and offsets.* properties are declared here.

// ClassicGroups builds the classic group coordinator's configuration from
// the group.* and offsets.* properties.
func (bp Props) ClassicGroups() (group.ClassicConfig, error) {
	ms := func(name string) time.Duration { return time.Duration(bp.Int64(name)) * time.Millisecond }
	cfg := group.ClassicConfig{
		MinSessionTimeout:      ms("group.min.session.timeout.ms"),
		MaxSessionTimeout:      ms("group.max.session.timeout.ms"),
		InitialRebalanceDelay:  ms("group.initial.rebalance.delay.ms"),
		MaxSize:                bp.Int32("group.max.size"),
		OffsetsRetention:       time.Duration(bp.Int64("offsets.retention.minutes")) * time.Minute,
		RetentionCheckInterval: ms("offsets.retention.check.interval.ms"),
		OffsetMetadataMaxBytes: bp.Int32("offset.metadata.max.bytes"),
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("classic group configuration: %w", err)
	}
	return cfg, nil
}

// ConsumerGroups builds the KIP-848 consumer group coordinator's
// configuration from the group.consumer.* and offsets.* properties.
func (bp Props) ConsumerGroups() (group.ConsumerConfig, error) {
	ms := func(name string) time.Duration { return time.Duration(bp.Int64(name)) * time.Millisecond }
	cfg := group.ConsumerConfig{
		SessionTimeout:         ms("group.consumer.session.timeout.ms"),
		MinSessionTimeout:      ms("group.consumer.min.session.timeout.ms"),
		MaxSessionTimeout:      ms("group.consumer.max.session.timeout.ms"),
		HeartbeatInterval:      ms("group.consumer.heartbeat.interval.ms"),
		MinHeartbeatInterval:   ms("group.consumer.min.heartbeat.interval.ms"),
		MaxHeartbeatInterval:   ms("group.consumer.max.heartbeat.interval.ms"),
		MaxSize:                bp.Int32("group.consumer.max.size"),
		OffsetMetadataMaxBytes: bp.Int32("offset.metadata.max.bytes"),
		OffsetsRetention:       time.Duration(bp.Int64("offsets.retention.minutes")) * time.Minute,
		RetentionCheckInterval: ms("offsets.retention.check.interval.ms"),
	}
	for _, a := range strings.Split(bp["group.consumer.assignors"], ",") {
		if a = strings.TrimSpace(a); a != "" {
			cfg.Assignors = append(cfg.Assignors, a)
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("consumer group configuration: %w", err)
	}
	return cfg, nil
}

// shareConfig builds the group package's broker-level share configuration
// from the validated properties and checks the rules that tie them
// together (min/max pairs, session timeout above heartbeat interval),
// naming the property that breaks one.
func shareConfig(bp Props) (group.ShareConfig, error) {
	cfg := group.DefaultShareConfig()
	for _, sp := range group.ShareBrokerProperties() {
		if err := sp.Set(&cfg, bp[sp.Name]); err != nil {
			return cfg, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("share group configuration: %w", err)
	}
	return cfg, nil
}
