package broker

import (
	"strconv"

	"github.com/sharebroker/sharebroker/storage"
)

// topicSettings is a topic's effective configuration: its overrides, else
// the broker property each topic property names as its synonym.
type topicSettings struct {
	retentionMs     int64
	retentionBytes  int64
	maxMessageBytes int32
	logAppendTime   bool
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
	}
}
