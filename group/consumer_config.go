package group

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ConsumerConfig is the broker-level configuration of KIP-848 consumer
// groups (groups.md 848-timeouts).
type ConsumerConfig struct {
	SessionTimeout       time.Duration // group.consumer.session.timeout.ms
	MinSessionTimeout    time.Duration // group.consumer.min.session.timeout.ms
	MaxSessionTimeout    time.Duration // group.consumer.max.session.timeout.ms
	HeartbeatInterval    time.Duration // group.consumer.heartbeat.interval.ms
	MinHeartbeatInterval time.Duration // group.consumer.min.heartbeat.interval.ms
	MaxHeartbeatInterval time.Duration // group.consumer.max.heartbeat.interval.ms
	MaxSize              int32         // group.consumer.max.size
	// Assignors are the server assignors members may name; the first is
	// the default (group.consumer.assignors).
	Assignors []string
	// OffsetMetadataMaxBytes, OffsetsRetention and RetentionCheckInterval
	// are offset.metadata.max.bytes, offsets.retention.minutes and
	// offsets.retention.check.interval.ms, shared with classic groups.
	OffsetMetadataMaxBytes int32
	OffsetsRetention       time.Duration
	RetentionCheckInterval time.Duration
}

// ConsumerAssignors are the assignors this broker implements.
var ConsumerAssignors = []string{"uniform", "range"}

// DefaultConsumerConfig returns Kafka's defaults.
func DefaultConsumerConfig() ConsumerConfig {
	return ConsumerConfig{
		SessionTimeout:         45 * time.Second,
		MinSessionTimeout:      45 * time.Second,
		MaxSessionTimeout:      60 * time.Second,
		HeartbeatInterval:      5 * time.Second,
		MinHeartbeatInterval:   5 * time.Second,
		MaxHeartbeatInterval:   15 * time.Second,
		MaxSize:                1<<31 - 1,
		Assignors:              []string{"uniform", "range"},
		OffsetMetadataMaxBytes: 4096,
		OffsetsRetention:       7 * 24 * time.Hour,
		RetentionCheckInterval: 10 * time.Minute,
	}
}

// Validate checks the rules that tie the fields together.
func (c ConsumerConfig) Validate() error {
	switch {
	case c.MinSessionTimeout <= 0 || c.MinHeartbeatInterval <= 0:
		return fmt.Errorf("%w: consumer group timeouts must be positive", ErrInvalidConfig)
	case c.SessionTimeout < c.MinSessionTimeout || c.SessionTimeout > c.MaxSessionTimeout:
		return fmt.Errorf("%w: group.consumer.session.timeout.ms must lie within its min and max", ErrInvalidConfig)
	case c.HeartbeatInterval < c.MinHeartbeatInterval || c.HeartbeatInterval > c.MaxHeartbeatInterval:
		return fmt.Errorf("%w: group.consumer.heartbeat.interval.ms must lie within its min and max", ErrInvalidConfig)
	case c.HeartbeatInterval >= c.SessionTimeout:
		return fmt.Errorf("%w: group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms", ErrInvalidConfig)
	case c.MaxSize < 1:
		return fmt.Errorf("%w: group.consumer.max.size must be at least 1", ErrInvalidConfig)
	case c.OffsetsRetention <= 0 || c.RetentionCheckInterval <= 0:
		return fmt.Errorf("%w: offset retention and its check interval must be positive", ErrInvalidConfig)
	case len(c.Assignors) == 0:
		return fmt.Errorf("%w: group.consumer.assignors must name at least one assignor", ErrInvalidConfig)
	}
	for _, a := range c.Assignors {
		if !slices.Contains(ConsumerAssignors, a) {
			return fmt.Errorf("%w: unknown consumer group assignor %q", ErrInvalidConfig, a)
		}
	}
	return nil
}

// consumerTimeouts returns group id's session timeout and heartbeat
// interval: the group's override (consumer.session.timeout.ms,
// consumer.heartbeat.interval.ms) clamped to the broker's bounds, else the
// broker default.
func consumerTimeouts(cfg *ConsumerConfig, store *ConfigStore, id string) (session, heartbeat time.Duration) {
	session, heartbeat = cfg.SessionTimeout, cfg.HeartbeatInterval
	if store == nil {
		return session, heartbeat
	}
	for _, e := range store.Describe(id) {
		if e.IsDefault {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(e.Value), 10, 32)
		if err != nil {
			continue
		}
		d := time.Duration(n) * time.Millisecond
		switch e.Name {
		case "consumer.session.timeout.ms":
			session = min(max(d, cfg.MinSessionTimeout), cfg.MaxSessionTimeout)
		case "consumer.heartbeat.interval.ms":
			heartbeat = min(max(d, cfg.MinHeartbeatInterval), cfg.MaxHeartbeatInterval)
		}
	}
	return session, heartbeat
}
