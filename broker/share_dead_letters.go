package broker

// Dead-letter queues for share groups (KIP-1191, share-groups.md §10):
// shareserve writes them (shareserve/dead_letter.go); the broker hands it
// the broker settings they follow and exports its counts as metrics.

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/shareserve"
	"github.com/sharebroker/sharebroker/storage"
)

// dlqShareVersion is the share.version level that turns dead-letter queues
// on, Kafka's ShareVersion.SV_2.
const dlqShareVersion = 2

// dlqReasonLabels name the reasons in metrics.
var dlqReasonLabels = map[sharepartition.DeadLetterReason]string{
	sharepartition.DeadLetterRejected:      "rejected",
	sharepartition.DeadLetterDeliveryLimit: "delivery_limit",
}

var dlqDropLabels = [shareserve.NumDeadLetterDrops]string{"topic_refused", "append_failed"}

// deadLetters is the broker's view of share serving's dead-letter queues:
// their settings and their metrics.
type deadLetters struct{ b *Broker }

func newDeadLetters(b *Broker) *deadLetters { return &deadLetters{b: b} }

// options are shareserve's Options.DeadLetters, or nil when share.version
// is below 2: then no share partition carries a hook at all.
func (d *deadLetters) options() *shareserve.DeadLetterOptions {
	b := d.b
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

// forgetGroup drops a deleted group's dead-letter series (dlq-metric).
func (d *deadLetters) forgetGroup(groupID string) { d.b.shares.ForgetDeadLetters(groupID) }

var (
	descDLQWritten = prometheus.NewDesc("sharebroker_share_dead_letter_records_total",
		"Dead-letter records written to share groups' dead-letter topics (KIP-1191), by group and reason (rejected, delivery_limit).",
		[]string{"group", "reason"}, nil)
	descDLQDropped = prometheus.NewDesc("sharebroker_share_dead_letter_records_dropped_total",
		"Dead letters not written, by cause: topic_refused (missing, not opted in, wrong prefix) or append_failed.",
		[]string{"cause"}, nil)
)

// Describe and Collect make deadLetters a prometheus.Collector.
func (d *deadLetters) Describe(ch chan<- *prometheus.Desc) {
	ch <- descDLQWritten
	ch <- descDLQDropped
}

func (d *deadLetters) Collect(ch chan<- prometheus.Metric) {
	for k, n := range d.b.shares.DeadLettersWritten() {
		ch <- prometheus.MustNewConstMetric(descDLQWritten, prometheus.CounterValue, float64(n), k.Group, dlqReasonLabels[k.Reason])
	}
	for i, n := range d.b.shares.DeadLettersDropped() {
		ch <- prometheus.MustNewConstMetric(descDLQDropped, prometheus.CounterValue, float64(n), dlqDropLabels[i])
	}
}
