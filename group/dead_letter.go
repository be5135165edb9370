package group

import (
	"strings"
)

// DeadLetterConfig is a share group's dead-letter queue, from the GROUP
// configs of KIP-1191 (share-groups.md §10). Kafka's
// GroupConfig.ERRORS_DEADLETTERQUEUE_*: a blank topic name, the default,
// means the group has no dead-letter queue.
type DeadLetterConfig struct {
	// Topic is errors.deadletterqueue.topic.name, trimmed; empty for none.
	Topic string
	// CopyRecord is errors.deadletterqueue.copy.record.enable: whether a
	// dead-letter record carries the source record's key, value and
	// headers, or only the context headers (the default).
	CopyRecord bool
}

// Enabled reports whether the group names a dead-letter topic.
func (c DeadLetterConfig) Enabled() bool { return c.Topic != "" }

// checkDLQTopicName is Kafka's only check of the topic name when the config
// is altered (GroupConfig.validateValues): a name starting with "__", the
// prefix of internal topics, is refused. Whether the topic exists, opts in,
// and has the cluster's prefix is checked when a record is written, since
// each of those can change after the group config is set.
func checkDLQTopicName(_ *groupBounds, name, value string) error {
	if strings.HasPrefix(strings.TrimSpace(value), "__") {
		return configError(name + ": DLQ topic name must not start with '__'")
	}
	return nil
}

// deadLetterConfig reads the two configs from a group's validated
// overrides.
func deadLetterConfig(get func(name string) (string, bool)) DeadLetterConfig {
	var c DeadLetterConfig
	if v, ok := get("errors.deadletterqueue.topic.name"); ok {
		c.Topic = strings.TrimSpace(v)
	}
	if v, ok := get("errors.deadletterqueue.copy.record.enable"); ok {
		c.CopyRecord, _ = parseBool(v)
	}
	return c
}
