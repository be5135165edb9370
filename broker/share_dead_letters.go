package broker

// Dead-letter queues for share groups (KIP-1191, share-groups.md §10).
//
// A share partition reports the records it archived because a member
// rejected them or an attempt ended at the delivery count limit
// (sharepartition.DeadLetter). When the group names a dead-letter topic and
// share.version is 2, we write one record per archived record to that
// topic, as Kafka's ShareGroupDLQStateManager does: the context headers
// always, the source record's key, value and headers only with
// errors.deadletterqueue.copy.record.enable. The topic is checked against
// Kafka's rules (ShareGroupDLQValidator) at every write, since the topic and
// its configs can change after the group config was set; a topic that fails
// them gets nothing, and the reason is logged, as Kafka logs it.
//
// The write runs on the goroutine that archived (an acknowledging
// connection, or the lock timer for an expiry), after the share partition
// unlocked: an acknowledgement's answer leaves after its dead letters are in
// the log (dlq-synchronous).

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/shareserve"
	"github.com/sharebroker/sharebroker/storage"
)

// The context headers of a dead-letter record, Kafka's
// ShareGroupDLQRecordHelper.HEADER_DLQ_ERRORS_*; values are UTF-8 text.
const (
	dlqHeaderTopic         = "__dlq.errors.topic"
	dlqHeaderPartition     = "__dlq.errors.partition"
	dlqHeaderOffset        = "__dlq.errors.offset"
	dlqHeaderGroup         = "__dlq.errors.group"
	dlqHeaderDeliveryCount = "__dlq.errors.delivery.count"
	dlqHeaderMessage       = "__dlq.errors.message"
)

// dlqTopicEnable is the topic config by which a topic opts in to being a
// dead-letter topic (Kafka's errors.deadletterqueue.group.enable).
const dlqTopicEnable = "errors.deadletterqueue.group.enable"

// dlqShareVersion is the share.version level that turns dead-letter queues
// on, Kafka's ShareVersion.SV_2.
const dlqShareVersion = 2

// dlqMessages are the __dlq.errors.message values, Kafka's
// ShareGroupDLQManager.CLIENT_REJECT and DELIVERY_COUNT_EXCEEDED.
var dlqMessages = map[sharepartition.DeadLetterReason]string{
	sharepartition.DeadLetterRejected:      "Offset rejected by client.",
	sharepartition.DeadLetterDeliveryLimit: "Offset delivery count exceeded the threshold.",
}

// dlqReasonLabels name the reasons in metrics.
var dlqReasonLabels = map[sharepartition.DeadLetterReason]string{
	sharepartition.DeadLetterRejected:      "rejected",
	sharepartition.DeadLetterDeliveryLimit: "delivery_limit",
}

// errDLQTopic: the group's dead-letter topic cannot take the write.
var errDLQTopic = errors.New("dead-letter topic refused")

// deadLetters writes dead letters and counts them. Safe for concurrent use.
type deadLetters struct {
	b *Broker

	mu sync.Mutex // guards written
	// written counts records written, by group and reason. Its keys are
	// groups that named a dead-letter topic and had a record archived, so
	// it is bounded by the groups with a dead-letter config, as the
	// in-flight gauge is by the share partitions.
	written map[dlqSeries]*atomic.Int64
	// dropped counts dead letters not written, by why (refused topic,
	// oversized record, append error): no group label, so nothing a
	// misconfigured group does grows it.
	dropped [numDLQDrops]atomic.Int64
}

type dlqSeries struct {
	group  string
	reason sharepartition.DeadLetterReason
}

type dlqDrop int

const (
	dlqDropTopic  dlqDrop = iota // the topic is missing or refused
	dlqDropAppend                // the append failed (too large, storage error)
	numDLQDrops
)

var dlqDropLabels = [numDLQDrops]string{"topic_refused", "append_failed"}

func newDeadLetters(b *Broker) *deadLetters {
	return &deadLetters{b: b, written: make(map[dlqSeries]*atomic.Int64)}
}

// hook is shareserve's Options.OnDeadLetter, or nil when share.version is
// below 2: then no share partition carries a hook at all.
func (d *deadLetters) hook() func(shareserve.Key, group.DeadLetterConfig, []sharepartition.DeadLetter) {
	if d.b.cfg.props.int32("share.version") < dlqShareVersion {
		return nil
	}
	return d.write
}

// write writes one dead-letter record per offset of dead, for the share
// partition key of a group whose dead-letter config is cfg.
func (d *deadLetters) write(key shareserve.Key, cfg group.DeadLetterConfig, dead []sharepartition.DeadLetter) {
	log := d.b.log.With(attrGroup, key.Group)
	dst, err := d.topic(key.Group, cfg.Topic)
	if err != nil {
		for _, dl := range dead {
			d.dropped[dlqDropTopic].Add(dl.LastOffset - dl.FirstOffset + 1)
		}
		log.Warn("dead letters not written", "err", err)
		return
	}
	src := d.b.store.TopicByID(key.TopicID)
	if src == nil {
		return // deleted under us: its records are gone with it
	}
	srcLog := src.Partition(key.Partition)
	parts := dst.Partitions()
	dstLog := parts[int(key.Partition)%len(parts)] // Kafka's dlqDestinationPartition
	tc := d.b.topicConfig(dst)
	nowMs := d.b.clock.Now().UnixMilli()
	for _, dl := range dead {
		var copied map[int64]storage.Record
		if cfg.CopyRecord && srcLog != nil {
			recs, err := srcLog.RecordsIn(dl.FirstOffset, dl.LastOffset)
			if err != nil {
				log.Warn("dead letters written without their records", attrTopic, src.Name, "err", err)
			}
			copied = make(map[int64]storage.Record, len(recs))
			for _, r := range recs {
				copied[r.Offset] = r
			}
		}
		out := make([]storage.Record, 0, dl.LastOffset-dl.FirstOffset+1)
		for o := dl.FirstOffset; o <= dl.LastOffset; o++ {
			out = append(out, dlqRecord(key, src.Name, o, dl, copied, nowMs))
		}
		n := d.append(dstLog, out, tc)
		if n > 0 {
			d.counter(key.Group, dl.Reason).Add(n)
		}
		if lost := int64(len(out)) - n; lost > 0 {
			d.dropped[dlqDropAppend].Add(lost)
			log.Warn("dead letters not written", attrTopic, dst.Name, "records", lost)
		}
	}
}

// dlqRecord is the dead-letter record of offset o: a copy of the source
// record when there is one (copy.record.enable and still in the log), then
// the context headers, stamped now (Kafka stamps wall-clock time so
// retention counts from the write).
func dlqRecord(key shareserve.Key, topic string, o int64, dl sharepartition.DeadLetter,
	copied map[int64]storage.Record, nowMs int64,
) storage.Record {
	r := storage.Record{Timestamp: nowMs}
	if src, ok := copied[o]; ok {
		r.Key, r.Value = src.Key, src.Value
		r.Headers = append(r.Headers, src.Headers...)
	}
	r.Headers = append(r.Headers,
		storage.Header{Key: dlqHeaderTopic, Value: []byte(topic)},
		storage.Header{Key: dlqHeaderPartition, Value: []byte(strconv.Itoa(int(key.Partition)))},
		storage.Header{Key: dlqHeaderOffset, Value: []byte(strconv.FormatInt(o, 10))},
		storage.Header{Key: dlqHeaderGroup, Value: []byte(key.Group)},
		storage.Header{Key: dlqHeaderDeliveryCount, Value: []byte(strconv.Itoa(int(dl.DeliveryCount)))},
		storage.Header{Key: dlqHeaderMessage, Value: []byte(dlqMessages[dl.Reason])},
	)
	return r
}

// append writes recs as one batch, or one batch per record when together
// they exceed the topic's max.message.bytes (Kafka splits its produce the
// same way), and returns how many were written.
func (d *deadLetters) append(p *storage.Partition, recs []storage.Record, tc topicSettings) int64 {
	opts := storage.AppendOptions{MaxMessageBytes: tc.maxMessageBytes, LogAppendTime: tc.logAppendTime, NowMs: recs[0].Timestamp}
	if _, err := p.Append(storage.BuildBatch(recs), opts); err == nil {
		return int64(len(recs))
	} else if len(recs) == 1 || !errors.Is(err, storage.ErrMessageTooLarge) {
		return 0
	}
	var n int64
	for i := range recs {
		if _, err := p.Append(storage.BuildBatch(recs[i:i+1]), opts); err == nil {
			n++
		}
	}
	return n
}

// topic resolves the dead-letter topic of groupID and checks it with
// Kafka's rules, in Kafka's order and with its messages
// (ShareGroupDLQValidator.validateDlqTopicConfig, then the existence check
// of ShareGroupDLQStateManager): not internal, opted in if it exists, the
// cluster's prefix, and existing unless
// errors.deadletterqueue.auto.create.topics.enable lets us create it.
func (d *deadLetters) topic(groupID, name string) (*storage.Topic, error) {
	if strings.HasPrefix(name, "__") {
		return nil, dlqRefused("Configured DLQ topic name in share group: %s cannot start with __, topic: %s.", groupID, name)
	}
	t := d.b.store.Topic(name)
	if t != nil {
		if v, _ := t.Config(dlqTopicEnable); !strings.EqualFold(strings.TrimSpace(v), "true") {
			return nil, fmt.Errorf("%w: DLQ is not enabled on configured DLQ topic for share group: %s, topic: %s", errDLQTopic, groupID, name)
		}
	}
	if prefix := d.b.cfg.props["errors.deadletterqueue.topic.name.prefix"]; prefix != "" && !strings.HasPrefix(name, prefix) {
		return nil, fmt.Errorf("%w: Configured DLQ topic name does not comply with the DLQ topic prefix in share group: %s, topic: %s, prefix: %s", errDLQTopic, groupID, name, prefix)
	}
	if t == nil && d.b.cfg.props.bool("errors.deadletterqueue.auto.create.topics.enable") {
		return d.create(groupID, name)
	}
	if t == nil {
		return nil, dlqRefused("DLQ topic does not exist and auto create is disabled on cluster for share group: %s, topic: %s.", groupID, name)
	}
	return t, nil
}

// create makes a missing dead-letter topic as Kafka's
// ShareGroupDLQStateManager asks its controller to: the broker's default
// partition count, opted in, and CreateTime, so the write time each dead
// letter carries is kept whatever log.message.timestamp.type says. A topic
// created by someone else meanwhile is used if it opted in.
func (d *deadLetters) create(groupID, name string) (*storage.Topic, error) {
	partitions := d.b.cfg.props.int32("num.partitions")
	t, err := d.b.store.CreateTopic(name, partitions, map[string]string{
		dlqTopicEnable:           "true",
		"message.timestamp.type": "CreateTime",
	})
	if errors.Is(err, storage.ErrTopicExists) {
		return d.topic(groupID, name)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: creating %s for share group %s: %v", errDLQTopic, name, groupID, err)
	}
	d.b.log.Info("dead-letter topic created", attrGroup, groupID, attrTopic, name, "partitions", partitions)
	return t, nil
}

// dlqRefused wraps one of Kafka's messages, which end with a full stop
// where Kafka's do, in errDLQTopic.
func dlqRefused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errDLQTopic, fmt.Sprintf(format, args...))
}

func (d *deadLetters) counter(groupID string, reason sharepartition.DeadLetterReason) *atomic.Int64 {
	k := dlqSeries{groupID, reason}
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.written[k]
	if c == nil {
		c = new(atomic.Int64)
		d.written[k] = c
	}
	return c
}

// forgetGroup drops a deleted group's dead-letter series (dlq-metric):
// its counts describe a group that no longer exists.
func (d *deadLetters) forgetGroup(groupID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range d.written {
		if k.group == groupID {
			delete(d.written, k)
		}
	}
}

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
	d.mu.Lock()
	for k, c := range d.written {
		ch <- prometheus.MustNewConstMetric(descDLQWritten, prometheus.CounterValue, float64(c.Load()), k.group, dlqReasonLabels[k.reason])
	}
	d.mu.Unlock()
	for i := range d.dropped {
		ch <- prometheus.MustNewConstMetric(descDLQDropped, prometheus.CounterValue, float64(d.dropped[i].Load()), dlqDropLabels[i])
	}
}
