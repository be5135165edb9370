package broker

// Dead-letter queues for share groups (KIP-1191, share-groups.md §10):
// shareserve writes them (shareserve/dead_letter.go) under the broker
// settings below; the metrics package reads its counts at scrape time.

import (
	"github.com/sharebroker/sharebroker/features"
	"github.com/sharebroker/sharebroker/shareserve"
	"github.com/sharebroker/sharebroker/storage"
)

// dlqShareVersion is the share.version level that turns dead-letter queues
// on, Kafka's ShareVersion.SV_2.
const dlqShareVersion = 2

// deadLetterOptions are shareserve's Options.DeadLetters. Whether dead
// letters are written follows share.version as it is finalized now (On):
// UpdateFeatures turns them on or off at run time (features-gate-live).
func (b *Broker) deadLetterOptions() *shareserve.DeadLetterOptions {
	return &shareserve.DeadLetterOptions{
		On:         func() bool { return b.features.Level(features.ShareVersion) >= dlqShareVersion },
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
