package broker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/locktimer"
)

// Dead-letter queues for share groups (KIP-1191, share-groups.md §10),
// driven by kgo share consumers on the manual clock (see
// share_semantics_test.go for why the clock follows real time while a kgo
// call blocks).

const dlqTopic = "dlq.queue"

type dlqEnv struct {
	*shareEnv
	b *broker.Broker
}

// newDLQEnv starts a broker at share.version 2 (unless props say
// otherwise), creates the opted-in dead-letter topic unless noTopic, and
// sets the group configs of newShareEnv plus groupConfigs.
func newDLQEnv(t *testing.T, props map[string]string, noTopic bool, groupConfigs ...string) *dlqEnv {
	t.Helper()
	all := map[string]string{"share.version": "2"}
	for k, v := range props {
		all[k] = v
	}
	clock := locktimer.NewManualClock(time.Unix(1_700_000_000, 0))
	b, addr := startBroker(t, broker.Config{Clock: clock, Props: all})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(semTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	if !noTopic {
		enable := "true"
		if _, err := kadm.NewClient(admin).CreateTopic(ctx, 2, 1,
			map[string]*string{"errors.deadletterqueue.group.enable": &enable}, dlqTopic); err != nil {
			t.Fatal(err)
		}
	}
	configs := append([]string{
		"share.auto.offset.reset", "earliest",
		"share.record.lock.duration.ms", "15000",
		"share.session.timeout.ms", "60000",
	}, groupConfigs...)
	for i := 0; i+1 < len(configs); i += 2 {
		setGroupConfig(t, ctx, admin, semGroup, configs[i], configs[i+1])
	}
	return &dlqEnv{shareEnv: &shareEnv{t: t, ctx: ctx, clock: clock, addr: addr, admin: admin}, b: b}
}

// deadLetters returns every record of the dead-letter topic, read by a plain
// consumer up to the topic's end offsets, so a second copy would show.
func (e *dlqEnv) deadLetters() []*kgo.Record {
	e.t.Helper()
	ends, err := kadm.NewClient(e.admin).ListEndOffsets(e.ctx, dlqTopic)
	if err != nil {
		e.t.Fatal(err)
	}
	var want int64
	ends.Each(func(o kadm.ListedOffset) { want += o.Offset })
	if want == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.ConsumeTopics(dlqTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for int64(len(recs)) < want && e.ctx.Err() == nil {
		recs = append(recs, cl.PollFetches(e.ctx).Records()...)
	}
	if int64(len(recs)) != want {
		e.t.Fatalf("read %d dead letters of %d", len(recs), want)
	}
	return recs
}

// hasSeries reports whether the registry serves a series of name with
// the labels given (name, value pairs).
func (e *dlqEnv) hasSeries(name string, labels ...string) bool {
	e.t.Helper()
	return findMetric(gather(e.t, e.b), name, labelMap(labels)) != nil
}

// metric is the value of the counter series of name with the labels
// given (name, value pairs), 0 when it is not served.
func (e *dlqEnv) metric(name string, labels ...string) float64 {
	e.t.Helper()
	return findMetric(gather(e.t, e.b), name, labelMap(labels)).GetCounter().GetValue()
}

func labelMap(pairs []string) map[string]string {
	m := make(map[string]string, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

func headerMap(r *kgo.Record) map[string]string {
	m := make(map[string]string)
	for _, h := range r.Headers {
		m[h.Key] = string(h.Value)
	}
	return m
}

func wantDLQHeaders(t *testing.T, r *kgo.Record, offset, count, message string) {
	t.Helper()
	h := headerMap(r)
	want := map[string]string{
		"__dlq.errors.topic": semTopic, "__dlq.errors.partition": "0", "__dlq.errors.offset": offset,
		"__dlq.errors.group": semGroup, "__dlq.errors.delivery.count": count, "__dlq.errors.message": message,
	}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("header %s = %q, want %q (all: %v)", k, h[k], v, h)
		}
	}
	if r.Partition != 0 { // source partition 0 % 2 DLQ partitions
		t.Errorf("dead letter in DLQ partition %d, want 0", r.Partition)
	}
}

// A REJECT archives the record and writes exactly one dead letter, with
// the context headers and, without copy.record.enable, no key or value.
func TestDeadLetterOnReject(t *testing.T) {
	e := newDLQEnv(t, nil, false, "errors.deadletterqueue.topic.name", dlqTopic)
	e.produce("r0", "r1")
	c1, _ := e.consumer()
	recs := e.poll(c1)
	for _, r := range recs {
		if string(r.Value) == "r0" {
			r.Ack(kgo.AckReject)
		} else {
			r.Ack(kgo.AckAccept)
		}
	}
	e.flush(c1)
	dead := e.deadLetters()
	if len(dead) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dead))
	}
	wantDLQHeaders(t, dead[0], "0", "1", "Offset rejected by client.")
	if dead[0].Key != nil || dead[0].Value != nil {
		t.Errorf("copied %q=%q without copy.record.enable", dead[0].Key, dead[0].Value)
	}
	if got := e.metric("sharebroker_share_dead_letter_records_total", "group", semGroup, "reason", "rejected"); got != 1 {
		t.Errorf("metric %v, want 1", got)
	}
	// dlq-metric: deleting the group drops its series.
	c1.Close()
	if resp, err := kadm.NewClient(e.admin).DeleteGroup(e.ctx, semGroup); err != nil || resp.Err != nil {
		t.Fatalf("DeleteGroup: %v %v", err, resp.Err)
	}
	if e.hasSeries("sharebroker_share_dead_letter_records_total", "group", semGroup) {
		t.Error("the deleted group's dead-letter series is still served")
	}
}

// With copy.record.enable the dead letter carries the source record's key,
// value and headers, before the context headers.
func TestDeadLetterCopiesRecord(t *testing.T) {
	e := newDLQEnv(t, nil, false, "errors.deadletterqueue.topic.name", dlqTopic,
		"errors.deadletterqueue.copy.record.enable", "true")
	if err := e.admin.ProduceSync(e.ctx, &kgo.Record{Key: []byte("k0"), Value: []byte("r0"),
		Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("abc")}}}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c1, _ := e.consumer()
	one(t, e.poll(c1), "r0", 1).Ack(kgo.AckReject)
	e.flush(c1)
	dead := e.deadLetters()
	if len(dead) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dead))
	}
	d := dead[0]
	if string(d.Key) != "k0" || string(d.Value) != "r0" || len(d.Headers) == 0 || d.Headers[0].Key != "trace" {
		t.Fatalf("copy: key %q value %q headers %v", d.Key, d.Value, d.Headers)
	}
	wantDLQHeaders(t, d, "0", "1", "Offset rejected by client.")
}

// Lock expiries that reach the delivery count limit archive the record
// and write one dead letter with the delivery-count message. The member
// is raw, so nothing but the clock ends its attempts; the expiry runs on
// the timer and the write is done when Advance returns.
func TestDeadLetterOnDeliveryLimitByExpiry(t *testing.T) {
	e := newDLQEnv(t, nil, false, "errors.deadletterqueue.topic.name", dlqTopic,
		"share.delivery.count.limit", "2")
	e.produce("r0")
	m := e.raw()
	for epoch := int32(0); epoch < 2; epoch++ {
		if p := partitionOf(t, m.fetch(2, "holder", epoch, nil, nil)); len(p.AcquiredRecords) != 1 {
			t.Fatalf("attempt %d acquired %+v", epoch+1, p.AcquiredRecords)
		}
		if dead := e.deadLetters(); len(dead) != 0 {
			t.Fatalf("dead letter before the limit: %v", headerMap(dead[0]))
		}
		e.clock.Advance(semLock)
	}
	dead := e.deadLetters()
	if len(dead) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dead))
	}
	wantDLQHeaders(t, dead[0], "0", "2", "Offset delivery count exceeded the threshold.")
	e.clock.Advance(semLock)
	if n := len(e.deadLetters()); n != 1 {
		t.Fatalf("%d dead letters after another lock duration, want still 1", n)
	}
}

// Nothing is written without a dead-letter topic in the group config, nor
// below share.version 2 even with one, nor to a topic that does not exist.
func TestDeadLetterNotWritten(t *testing.T) {
	reject := func(e *dlqEnv) {
		e.produce("r0")
		c1, _ := e.consumer()
		one(t, e.poll(c1), "r0", 1).Ack(kgo.AckReject)
		e.flush(c1)
	}
	t.Run("no topic configured", func(t *testing.T) {
		e := newDLQEnv(t, nil, false)
		reject(e)
		if n := len(e.deadLetters()); n != 0 {
			t.Fatalf("%d dead letters", n)
		}
	})
	t.Run("share.version 1", func(t *testing.T) {
		e := newDLQEnv(t, map[string]string{"share.version": "1"}, false, "errors.deadletterqueue.topic.name", dlqTopic)
		reject(e)
		if n := len(e.deadLetters()); n != 0 {
			t.Fatalf("%d dead letters", n)
		}
	})
	t.Run("topic missing", func(t *testing.T) {
		e := newDLQEnv(t, nil, true, "errors.deadletterqueue.topic.name", dlqTopic)
		reject(e)
		if got := e.metric("sharebroker_share_dead_letter_records_dropped_total", "cause", "topic_refused"); got != 1 {
			t.Fatalf("dropped %v, want 1", got)
		}
	})
}

// With errors.deadletterqueue.auto.create.topics.enable a missing topic is
// created, opted in, on the first dead letter, and takes it.
func TestDeadLetterAutoCreatesTopic(t *testing.T) {
	e := newDLQEnv(t, map[string]string{"errors.deadletterqueue.auto.create.topics.enable": "true"}, true,
		"errors.deadletterqueue.topic.name", dlqTopic)
	e.produce("r0")
	c1, _ := e.consumer()
	one(t, e.poll(c1), "r0", 1).Ack(kgo.AckReject)
	e.flush(c1)
	dead := e.deadLetters()
	if len(dead) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dead))
	}
	wantDLQHeaders(t, dead[0], "0", "1", "Offset rejected by client.")
	rc, err := kadm.NewClient(e.admin).DescribeTopicConfigs(e.ctx, dlqTopic)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rc.On(dlqTopic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range c.Configs {
		if kv.Key == "errors.deadletterqueue.group.enable" && kv.MaybeValue() != "true" {
			t.Fatalf("created topic has %s=%q", kv.Key, kv.MaybeValue())
		}
	}
}

// The group configs are validated as Kafka's GroupConfig does: a topic name
// starting with "__" and a copy flag that is not a boolean are
// INVALID_CONFIG; a name without the prefix is accepted (checked on write).
func TestDeadLetterConfigValidation(t *testing.T) {
	e := newDLQEnv(t, nil, true)
	for _, tc := range []struct {
		name, value string
		err         error
		msg         string
	}{
		{"errors.deadletterqueue.topic.name", "__consumer_offsets", kerr.InvalidConfig, "DLQ topic name must not start with '__'"},
		{"errors.deadletterqueue.topic.name", " __x", kerr.InvalidConfig, "must not start with '__'"},
		{"errors.deadletterqueue.copy.record.enable", "yes", kerr.InvalidConfig, "Expected value to be either true or false"},
		{"errors.deadletterqueue.topic.name", "orders.dead", nil, ""},
		{"errors.deadletterqueue.copy.record.enable", "TRUE", nil, ""},
	} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, semGroup
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = tc.name, kmsg.StringPtr(tc.value)
		res.Configs = append(res.Configs, cfg)
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(e.ctx, e.admin)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.Resources[0]
		if got := kerr.ErrorForCode(r.ErrorCode); got != tc.err {
			t.Errorf("%s=%q: %v, want %v", tc.name, tc.value, got, tc.err)
		}
		if tc.msg != "" && (r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, tc.msg)) {
			t.Errorf("%s=%q: message %v, want it to contain %q", tc.name, tc.value, r.ErrorMessage, tc.msg)
		}
	}
}
