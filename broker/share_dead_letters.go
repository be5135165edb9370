package broker

// Dead-letter queues for share groups (KIP-1191, share-groups.md §10):
// shareserve writes them (shareserve/dead_letter.go) under the broker
// settings below; the metrics package reads its counts at scrape time.

import (
	"github.com/sharebroker/sharebroker/shareserve"
	"github.com/sharebroker/sharebroker/storage"
)

// dlqShareVersion is the share.version level that turns dead-letter queues
// on, Kafka's ShareVersion.SV_2.
const dlqShareVersion = 2

// deadLetterOptions are shareserve's Options.DeadLetters, or nil when
// share.version is below 2: then no share partition carries a hook at all.
func (b *Broker) deadLetterOptions() *shareserve.DeadLetterOptions {
	if b.cfg.props.Int32("share.version") < dlqShareVersion {
		return nil
	}
	return &shareserve.DeadLetterOptions{
		Prefix:     b.cfg.props["errors.deadletterqueue.topic.name.prefix"],
		AutoCreate: b.cfg.props.Bool("errors.deadletterqueue.auto.create.topics.enable"),
		Partitions: b.cfg.props.Int32("num.partitions"),
		AppendOptions: func(t *storage.Topic) storage.AppendOptions {
			tc := b.topicConfig(t)
			return storage.AppendOptions{MaxMessageBytes: tc.MaxMessageBytes, LogAppendTime: tc.LogAppendTime}
		},
		Log: b.log,
	}
}
