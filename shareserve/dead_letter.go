package shareserve

// Dead-letter queues for share groups (KIP-1191, share-groups.md §10).
//
// A share partition reports the records it archived because a member
// rejected them or an attempt ended at the delivery count limit
// (sharepartition.DeadLetter). When the group names a dead-letter topic and
// share.version is 2 (Options.DeadLetters set), we write one record per
// archived record to that topic, as Kafka's ShareGroupDLQStateManager does:
// the context headers always, the source record's key, value and headers
// only with errors.deadletterqueue.copy.record.enable. The topic is checked
// against Kafka's rules (ShareGroupDLQValidator) at every write, since the
// topic and its configs can change after the group config was set; a topic
// that fails them gets nothing, and the reason is logged, as Kafka logs it.
//
// The write runs on the goroutine that archived (an acknowledging
// connection, or the lock timer for an expiry), after the share partition
// unlocked: an acknowledgement's answer leaves after its dead letters are in
// the log (dlq-synchronous).

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
)

// DeadLetterOptions turn dead-letter queues on (share.version 2) and carry
// the broker settings they follow.
type DeadLetterOptions struct {
	// On, when set, tells whether dead-letter queues are on now
	// (share.version 2 or above, which may change at run time); while it
	// says no, dead letters are neither written nor counted, as a broker
	// without them would. nil means always on.
	On func() bool
	// Prefix is errors.deadletterqueue.topic.name.prefix; empty allows any
	// name.
	Prefix string
	// AutoCreate is errors.deadletterqueue.auto.create.topics.enable, and
	// Partitions the num.partitions a created topic gets.
	AutoCreate bool
	Partitions int32
	// AppendOptions returns how a dead-letter topic takes an append: its
	// max.message.bytes and message.timestamp.type as the topic or the
	// broker sets them (NowMs is filled in here).
	AppendOptions func(*storage.Topic) storage.AppendOptions
	// Log hears what was not written, and topics created.
	Log *slog.Logger
}

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

// dlqTopicEnable is the topic config by which a topic opts in to
// being a dead-letter topic (Kafka's errors.deadletterqueue.group.enable).
const dlqTopicEnable = "errors.deadletterqueue.group.enable"

// dlqMessages are the __dlq.errors.message values, Kafka's
// ShareGroupDLQManager.CLIENT_REJECT and DELIVERY_COUNT_EXCEEDED.
var dlqMessages = map[sharepartition.DeadLetterReason]string{
	sharepartition.DeadLetterRejected:      "Offset rejected by client.",
	sharepartition.DeadLetterDeliveryLimit: "Offset delivery count exceeded the threshold.",
}

// errDLQTopic: the group's dead-letter topic cannot take the write.
var errDLQTopic = errors.New("dead-letter topic refused")

// DeadLetterDrop is why dead letters were not written.
type DeadLetterDrop int

const (
	DeadLetterTopicRefused DeadLetterDrop = iota // the topic is missing or refused
	DeadLetterAppendFailed                       // the append failed (too large, storage error)
	NumDeadLetterDrops
)

// deadLetterWriter writes dead letters and counts them. Safe for
// concurrent use.
type deadLetterWriter struct {
	o     DeadLetterOptions
	store *storage.Store
	now   func() time.Time // the broker clock
	// told hears each run of dead letters written, with where they went,
	// for the share partition's record story.
	told func(key Key, first, last int64, topic string, partition int32, dlqOffset int64, now time.Time)

	mu sync.Mutex // guards written
	// written counts records written, by group and reason. Its keys are
	// groups that named a dead-letter topic and had a record archived, so
	// it is bounded by the groups with a dead-letter config, as the
	// in-flight gauge is by the share partitions.
	written map[DeadLetterSeries]*atomic.Int64
	// dropped counts dead letters not written, by why: no group label, so
	// nothing a misconfigured group does grows it.
	dropped [NumDeadLetterDrops]atomic.Int64
}

// DeadLetterSeries is one group's dead letters of one reason.
type DeadLetterSeries struct {
	Group  string
	Reason sharepartition.DeadLetterReason
}

// write writes one dead-letter record per offset of dead, for the share
// partition key of a group whose dead-letter config is cfg.
func (d *deadLetterWriter) write(key Key, cfg group.DeadLetterConfig, dead []sharepartition.DeadLetter) {
	if d.o.On != nil && !d.o.On() {
		return
	}
	log := d.o.Log.With("group", key.Group)
	dst, err := d.topic(key.Group, cfg.Topic)
	if err != nil {
		for _, dl := range dead {
			d.dropped[DeadLetterTopicRefused].Add(dl.LastOffset - dl.FirstOffset + 1)
		}
		log.Warn("dead letters not written", "err", err)
		return
	}
	src := d.store.TopicByID(key.TopicID)
	if src == nil {
		return // deleted under us: its records are gone with it
	}
	srcLog := src.Partition(key.Partition)
	parts := dst.Partitions()
	dstLog := parts[int(key.Partition)%len(parts)] // Kafka's dlqDestinationPartition
	opts := d.o.AppendOptions(dst)
	now := d.now()
	nowMs := now.UnixMilli()
	for _, dl := range dead {
		var copied map[int64]storage.Record
		if cfg.CopyRecord && srcLog != nil {
			recs, err := srcLog.RecordsIn(dl.FirstOffset, dl.LastOffset)
			if err != nil {
				log.Warn("dead letters written without their records", "topic", src.Name, "err", err)
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
		n := appendDeadLetters(dstLog, out, opts, func(first, last, dlqOffset int64) {
			d.told(key, dl.FirstOffset+first, dl.FirstOffset+last, dst.Name, dstLog.Index, dlqOffset, now)
		})
		if n > 0 {
			d.counter(key.Group, dl.Reason).Add(n)
		}
		if lost := int64(len(out)) - n; lost > 0 {
			d.dropped[DeadLetterAppendFailed].Add(lost)
			log.Warn("dead letters not written", "topic", dst.Name, "records", lost)
		}
	}
}

// dlqRecord is the dead-letter record of offset o: a copy of the source
// record when there is one (copy.record.enable and still in the log), then
// the context headers, stamped now (Kafka stamps wall-clock time so
// retention counts from the write).
func dlqRecord(key Key, topic string, o int64, dl sharepartition.DeadLetter,
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

// appendDeadLetters writes recs as one batch, or one batch per record when
// together they exceed the topic's max.message.bytes (Kafka splits its
// produce the same way), and returns how many were written. written hears
// each run of recs appended, by index in recs, with the offset its first
// record got.
func appendDeadLetters(p *storage.Partition, recs []storage.Record, opts storage.AppendOptions, written func(first, last, dlqOffset int64)) int64 {
	opts.NowMs = recs[0].Timestamp
	if res, err := p.Append(storage.BuildBatch(recs), opts); err == nil {
		written(0, int64(len(recs))-1, res.BaseOffset)
		return int64(len(recs))
	} else if len(recs) == 1 || !errors.Is(err, storage.ErrMessageTooLarge) {
		return 0
	}
	var n int64
	for i := range recs {
		if res, err := p.Append(storage.BuildBatch(recs[i:i+1]), opts); err == nil {
			written(int64(i), int64(i), res.BaseOffset)
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
func (d *deadLetterWriter) topic(groupID, name string) (*storage.Topic, error) {
	if strings.HasPrefix(name, "__") {
		return nil, dlqRefused("Configured DLQ topic name in share group: %s cannot start with __, topic: %s.", groupID, name)
	}
	t := d.store.Topic(name)
	if t != nil {
		if v, _ := t.Config(dlqTopicEnable); !strings.EqualFold(strings.TrimSpace(v), "true") {
			return nil, fmt.Errorf("%w: DLQ is not enabled on configured DLQ topic for share group: %s, topic: %s", errDLQTopic, groupID, name)
		}
	}
	if prefix := d.o.Prefix; prefix != "" && !strings.HasPrefix(name, prefix) {
		return nil, fmt.Errorf("%w: Configured DLQ topic name does not comply with the DLQ topic prefix in share group: %s, topic: %s, prefix: %s", errDLQTopic, groupID, name, prefix)
	}
	if t == nil && d.o.AutoCreate {
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
func (d *deadLetterWriter) create(groupID, name string) (*storage.Topic, error) {
	t, err := d.store.CreateTopic(name, d.o.Partitions, map[string]string{
		dlqTopicEnable:           "true",
		"message.timestamp.type": "CreateTime",
	})
	if errors.Is(err, storage.ErrTopicExists) {
		return d.topic(groupID, name)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: creating %s for share group %s: %v", errDLQTopic, name, groupID, err)
	}
	d.o.Log.Info("dead-letter topic created", "group", groupID, "topic", name, "partitions", d.o.Partitions)
	return t, nil
}

// dlqRefused wraps one of Kafka's messages, which end with a full stop
// where Kafka's do, in errDLQTopic.
func dlqRefused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errDLQTopic, fmt.Sprintf(format, args...))
}

func (d *deadLetterWriter) counter(groupID string, reason sharepartition.DeadLetterReason) *atomic.Int64 {
	k := DeadLetterSeries{groupID, reason}
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.written[k]
	if c == nil {
		c = new(atomic.Int64)
		d.written[k] = c
	}
	return c
}

// DeadLettersWritten returns the records written so far, by group and
// reason; nil with dead-letter queues off.
func (s *Service) DeadLettersWritten() map[DeadLetterSeries]int64 {
	d := s.deadLetters
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[DeadLetterSeries]int64, len(d.written))
	for k, c := range d.written {
		out[k] = c.Load()
	}
	return out
}

// DeadLettersDropped returns the dead letters not written so far, by why.
func (s *Service) DeadLettersDropped() [NumDeadLetterDrops]int64 {
	var out [NumDeadLetterDrops]int64
	if d := s.deadLetters; d != nil {
		for i := range d.dropped {
			out[i] = d.dropped[i].Load()
		}
	}
	return out
}

// ForgetDeadLetters drops a deleted group's dead-letter counts
// (dlq-metric): they describe a group that no longer exists.
func (s *Service) ForgetDeadLetters(groupID string) {
	d := s.deadLetters
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range d.written {
		if k.Group == groupID {
			delete(d.written, k)
		}
	}
}

// deadLetterHook is the share partition's OnDeadLetter for key: nil unless
// the group names a dead-letter topic and dead-letter queues are on, so a
// group without a dead-letter queue pays one nil check per archive. The
// config is captured here; a changed group config installs a new hook
// through GroupConfigChanged.
func (s *Service) deadLetterHook(key Key, cfg group.DeadLetterConfig) func([]sharepartition.DeadLetter) {
	if s.deadLetter == nil || !cfg.Enabled() {
		return nil
	}
	write := s.deadLetter
	return func(dead []sharepartition.DeadLetter) { write(key, cfg, dead) }
}
