package group

import (
	"fmt"
	"time"
)

// ClassicConfig is the broker-level configuration of classic groups and
// committed offsets: Kafka's group.* and offsets.* broker properties.
type ClassicConfig struct {
	MinSessionTimeout      time.Duration // group.min.session.timeout.ms
	MaxSessionTimeout      time.Duration // group.max.session.timeout.ms
	InitialRebalanceDelay  time.Duration // group.initial.rebalance.delay.ms
	MaxSize                int32         // group.max.size
	OffsetsRetention       time.Duration // offsets.retention.minutes
	RetentionCheckInterval time.Duration // offsets.retention.check.interval.ms
	OffsetMetadataMaxBytes int32         // offset.metadata.max.bytes
}

// DefaultClassicConfig returns Kafka's defaults, as DefaultShareConfig
// and DefaultConsumerConfig do for theirs: the broker builds its own from
// the properties (brokerconfig), other packages' tests start from these.
func DefaultClassicConfig() ClassicConfig {
	return ClassicConfig{
		MinSessionTimeout:      6 * time.Second,
		MaxSessionTimeout:      30 * time.Minute,
		InitialRebalanceDelay:  3 * time.Second,
		MaxSize:                1<<31 - 1,
		OffsetsRetention:       7 * 24 * time.Hour,
		RetentionCheckInterval: 10 * time.Minute,
		OffsetMetadataMaxBytes: 4096,
	}
}

// Validate checks the rules that tie the settings together.
func (c ClassicConfig) Validate() error {
	switch {
	case c.MinSessionTimeout < 0 || c.MaxSessionTimeout < c.MinSessionTimeout:
		return fmt.Errorf("group.min.session.timeout.ms (%v) must not exceed group.max.session.timeout.ms (%v)", c.MinSessionTimeout, c.MaxSessionTimeout)
	case c.InitialRebalanceDelay < 0:
		return fmt.Errorf("group.initial.rebalance.delay.ms must not be negative")
	case c.MaxSize < 1:
		return fmt.Errorf("group.max.size must be at least 1")
	case c.OffsetsRetention <= 0:
		return fmt.Errorf("offsets.retention.minutes must be positive")
	case c.RetentionCheckInterval <= 0:
		return fmt.Errorf("offsets.retention.check.interval.ms must be positive")
	case c.OffsetMetadataMaxBytes < 0:
		return fmt.Errorf("offset.metadata.max.bytes must not be negative")
	}
	return nil
}
