//go:build cgo

package clients

// Tests with librdkafka, the C client behind confluent-kafka-go,
// confluent-kafka-python, node-rdkafka, confluent-kafka-dotnet and kcat.
// confluent-kafka-go bundles a static librdkafka, so these tests need only
// cgo and a C compiler.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/sharebrokertest"
)

// rdWait bounds every wait for librdkafka to do something (deliver, join,
// reach the end of a partition). Each step takes well under a second against
// a healthy broker; the bound is only there so that a broken one fails the
// test with a message instead of hanging it.
const rdWait = 20 * time.Second

// rec is one record as the tests compare them: where it is and what it holds.
type rec struct {
	Partition int32
	Offset    int64
	Key       string
	Value     string
}

func (r rec) String() string {
	return fmt.Sprintf("p%d@%d %s=%s", r.Partition, r.Offset, r.Key, r.Value)
}

// sortRecs orders records by partition, then offset, so that lists read by
// different consumers or in different interleavings compare equal.
func sortRecs(rs []rec) {
	slices.SortFunc(rs, func(a, b rec) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
}

// rdEnv is one test's broker and the plumbing its librdkafka clients share.
type rdEnv struct {
	t    *testing.T
	b    *sharebrokertest.Broker
	adm  *kadm.Client
	logs chan kafka.LogEvent
}

// startRdkafka starts a broker for librdkafka and routes the logs of every
// client the test creates into the test's log.
//
// The broker runs on real time: librdkafka parks fetches for
// fetch.wait.max.ms and expects the broker to answer when that runs out,
// which on the manual clock would never happen. The initial rebalance delay
// is 0 so that a group's first member is assigned at once instead of after
// Kafka's 3 s.
func startRdkafka(t *testing.T, opts ...sharebrokertest.Option) *rdEnv {
	t.Helper()
	t.Logf("librdkafka %s", rdVersion())
	b := sharebrokertest.Start(t, append([]sharebrokertest.Option{
		sharebrokertest.WithRealClock(),
		sharebrokertest.WithProperty("group.initial.rebalance.delay.ms", "0"),
	}, opts...)...)
	e := &rdEnv{t: t, b: b, logs: make(chan kafka.LogEvent, 1000)}

	// librdkafka blocks on a full logs channel until the client is closed,
	// so the forwarder runs until every client is: this cleanup is
	// registered before any client's, and cleanups run last-in first-out.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case ev := <-e.logs:
				t.Logf("librdkafka %s [%s] %s", ev.Name, ev.Tag, ev.Message)
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	e.adm = kadm.NewClient(cl)
	return e
}

func rdVersion() string {
	_, v := kafka.LibraryVersion()
	return v
}

// createTopic creates a topic with the given number of partitions and fails
// the test unless the broker created exactly that.
func (e *rdEnv) createTopic(name string, partitions int32) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rdWait)
	defer cancel()
	resp, err := e.adm.CreateTopic(ctx, partitions, 1, nil, name)
	if err != nil || resp.Err != nil {
		e.t.Fatalf("create topic %s: %v %v", name, err, resp.Err)
	}
	if resp.NumPartitions != partitions {
		e.t.Fatalf("create topic %s: %d partitions, want %d", name, resp.NumPartitions, partitions)
	}
}

// config is the configuration every librdkafka client of the test starts
// from, with extra on top.
func (e *rdEnv) config(extra kafka.ConfigMap) *kafka.ConfigMap {
	cm := kafka.ConfigMap{
		"bootstrap.servers":      e.b.Addr,
		"go.logs.channel.enable": true,
		"go.logs.channel":        e.logs,
		// A new topic's leader is known from the first metadata request,
		// but keep librdkafka from caching a stale view for long.
		"topic.metadata.refresh.interval.ms": 1000,
		// Fail fast rather than retry for minutes if the broker misbehaves.
		"socket.timeout.ms": 10000,
	}
	// RDKAFKA_DEBUG=protocol,fetch,cgrp (any of librdkafka's debug
	// contexts) makes the clients log their requests and state changes, for
	// diagnosing a failure; it is too verbose to leave on.
	if d := os.Getenv("RDKAFKA_DEBUG"); d != "" {
		cm["debug"] = d
	}
	for k, v := range extra {
		cm[k] = v
	}
	return &cm
}

// producer starts a librdkafka producer that the test closes at its end.
// Delivery reports go to the channel produce passes, so the Events channel
// carries only client-level errors, which are logged.
func (e *rdEnv) producer(extra kafka.ConfigMap) *kafka.Producer {
	e.t.Helper()
	cm := e.config(kafka.ConfigMap{
		"acks":               "all",
		"linger.ms":          5,
		"message.timeout.ms": int(rdWait / time.Millisecond),
	})
	for k, v := range extra {
		(*cm)[k] = v
	}
	p, err := kafka.NewProducer(cm)
	if err != nil {
		e.t.Fatalf("new producer: %v", err)
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for ev := range p.Events() { // closed by p.Close
			e.t.Logf("producer event: %v", ev)
		}
	}()
	e.t.Cleanup(func() { p.Close(); <-drained })
	return p
}

// rdConsumer is a librdkafka consumer that the test may close itself (to
// check what Close commits) or leave for the cleanup to close.
type rdConsumer struct {
	*kafka.Consumer
	name   string
	closed bool
}

// consumer starts a librdkafka consumer in group. Offsets are committed only
// where a test asks for it; a test that wants to see every partition end
// sets enable.partition.eof.
func (e *rdEnv) consumer(name, group string, extra kafka.ConfigMap) *rdConsumer {
	e.t.Helper()
	cm := e.config(kafka.ConfigMap{
		"client.id":             name,
		"group.id":              group,
		"auto.offset.reset":     "earliest",
		"enable.auto.commit":    false,
		"session.timeout.ms":    6000,
		"heartbeat.interval.ms": 500,
		"fetch.wait.max.ms":     100,
	})
	for k, v := range extra {
		(*cm)[k] = v
	}
	c, err := kafka.NewConsumer(cm)
	if err != nil {
		e.t.Fatalf("new consumer %s: %v", name, err)
	}
	rc := &rdConsumer{Consumer: c, name: name}
	e.t.Cleanup(func() {
		if !rc.closed {
			if err := rc.closeWithin(rdCloseWait); err != nil {
				e.t.Errorf("close consumer %s: %v", name, err)
			}
		}
	})
	return rc
}

// rdCloseWait bounds a consumer's Close. librdkafka's close commits,
// leaves the group and serves the rebalance it causes; once, on a machine
// loaded far beyond its cores, it never returned and the package ran into
// go test's timeout. A bound turns that into this test's failure, named.
const rdCloseWait = 2 * rdWait

// close closes the consumer now, failing the test if Close reports an error
// or does not return within rdCloseWait.
func (c *rdConsumer) close(t *testing.T) {
	t.Helper()
	c.closed = true
	if err := c.closeWithin(rdCloseWait); err != nil {
		t.Fatalf("close consumer %s: %v", c.name, err)
	}
}

// closeWithin runs Close, giving up after d; the consumer is then left
// to itself (its goroutine ends when librdkafka lets it).
func (c *rdConsumer) closeWithin(d time.Duration) error {
	c.closed = true
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("Close did not return within %v", d)
	}
}

// produce sends recs (their Partition, Key and Value) and waits for every
// delivery report, failing the test on any error. It returns the records
// with the offsets the broker assigned.
func (e *rdEnv) produce(p *kafka.Producer, topic string, recs []rec) []rec {
	e.t.Helper()
	reports := make(chan kafka.Event, len(recs))
	for i, r := range recs {
		err := p.Produce(&kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: r.Partition},
			Key:            []byte(r.Key),
			Value:          []byte(r.Value),
			Opaque:         i,
		}, reports)
		if err != nil {
			e.t.Fatalf("produce %v: %v", r, err)
		}
	}
	out := slices.Clone(recs)
	seen := make([]bool, len(recs))
	deadline := time.After(rdWait)
	for range recs {
		var ev kafka.Event
		select {
		case ev = <-reports:
		case <-deadline:
			e.t.Fatalf("no delivery report for some of %d records within %v", len(recs), rdWait)
		}
		m, ok := ev.(*kafka.Message)
		if !ok {
			e.t.Fatalf("delivery channel: unexpected event %T %v", ev, ev)
		}
		i := m.Opaque.(int)
		if m.TopicPartition.Error != nil {
			e.t.Fatalf("delivery of %v: %v", recs[i], m.TopicPartition.Error)
		}
		if seen[i] {
			e.t.Fatalf("two delivery reports for %v", recs[i])
		}
		seen[i] = true
		if m.TopicPartition.Partition != recs[i].Partition {
			e.t.Fatalf("%v delivered to partition %d", recs[i], m.TopicPartition.Partition)
		}
		out[i].Offset = int64(m.TopicPartition.Offset)
	}
	return out
}

// makeRecs builds perPartition records for each of partitions, partition by
// partition in turn (p0, p1, ..., p0, p1, ...), so that a producer has
// several partitions in flight at once. The values name the batch, the
// partition and the record's rank in its partition; offsets are unset.
func makeRecs(batch string, partitions int32, perPartition int) []rec {
	var rs []rec
	for i := range perPartition {
		for p := range partitions {
			rs = append(rs, rec{
				Partition: p,
				Offset:    -1,
				Key:       fmt.Sprintf("k%d", i),
				Value:     fmt.Sprintf("%s-p%d-%d", batch, p, i),
			})
		}
	}
	return rs
}

// withOffsets returns recs with offsets counted from first in each
// partition, in the order given: what a log holds when recs were appended
// to partitions starting at first.
func withOffsets(recs []rec, first int64) []rec {
	next := map[int32]int64{}
	out := slices.Clone(recs)
	for i := range out {
		if _, ok := next[out[i].Partition]; !ok {
			next[out[i].Partition] = first
		}
		out[i].Offset = next[out[i].Partition]
		next[out[i].Partition]++
	}
	return out
}

// message converts a consumed message, failing the test if it carries an
// error or belongs to another topic.
func message(t *testing.T, topic string, m *kafka.Message) rec {
	t.Helper()
	if m.TopicPartition.Error != nil {
		t.Fatalf("consumed error message: %v", m.TopicPartition.Error)
	}
	if m.TopicPartition.Topic == nil || *m.TopicPartition.Topic != topic {
		t.Fatalf("consumed a message of topic %v, want %s", m.TopicPartition.Topic, topic)
	}
	return rec{
		Partition: m.TopicPartition.Partition,
		Offset:    int64(m.TopicPartition.Offset),
		Key:       string(m.Key),
		Value:     string(m.Value),
	}
}

// readToEOF polls c until it has reported the end of each of partitions
// (which needs enable.partition.eof) and returns the records read before
// that and the offset each end was reported at. Run it only once nothing
// more is produced to topic, so that the ends are final.
func readToEOF(t *testing.T, c *rdConsumer, topic string, partitions int32) ([]rec, map[int32]int64) {
	t.Helper()
	var recs []rec
	eof := map[int32]int64{}
	deadline := time.Now().Add(rdWait)
	for int32(len(eof)) < partitions {
		if time.Now().After(deadline) {
			t.Fatalf("%s: after %v, end of partition reported for %v of %d partitions (read %d records)",
				c.name, rdWait, eof, partitions, len(recs))
		}
		r, ev := pollEvent(t, c, topic, 100)
		switch {
		case r != nil:
			if _, ended := eof[r.Partition]; ended {
				t.Fatalf("%s: %v read after the end of its partition was reported", c.name, *r)
			}
			recs = append(recs, *r)
		case ev != nil:
			if ev.Topic == nil || *ev.Topic != topic {
				t.Fatalf("%s: end of partition of another topic: %v", c.name, ev)
			}
			eof[ev.Partition] = int64(ev.Offset)
		}
	}
	return recs, eof
}

// pollEvent polls c once for up to ms milliseconds and returns the record
// of topic or the end of partition it delivered, if any. Other events are
// logged; librdkafka reports transient trouble as error events and
// retries, while a fatal error ends the client, so it ends the test.
func pollEvent(t *testing.T, c *rdConsumer, topic string, ms int) (*rec, *kafka.PartitionEOF) {
	t.Helper()
	switch ev := c.Poll(ms).(type) {
	case *kafka.Message:
		r := message(t, topic, ev)
		return &r, nil
	case kafka.PartitionEOF:
		return nil, &ev
	case kafka.Error:
		if ev.IsFatal() {
			t.Fatalf("%s: fatal error: %v", c.name, ev)
		}
		t.Logf("%s: error event: %v", c.name, ev)
	case nil:
	default:
		t.Logf("%s: event %T: %v", c.name, ev, ev)
	}
	return nil, nil
}

// allPartitions lists partitions 0..n-1 of topic from offset.
func allPartitions(topic string, n int32, offset kafka.Offset) []kafka.TopicPartition {
	var tps []kafka.TopicPartition
	for p := range n {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: offset})
	}
	return tps
}

// wantEnds builds the end-of-partition map expected for n partitions that
// each end at end.
func wantEnds(n int32, end int64) map[int32]int64 {
	m := map[int32]int64{}
	for p := range n {
		m[p] = end
	}
	return m
}

// endOffsets returns the high watermark of each partition of topic, as the
// broker lists it (ListOffsets, latest).
func (e *rdEnv) endOffsets(topic string) map[int32]int64 {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rdWait)
	defer cancel()
	ends, err := e.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		e.t.Fatalf("list end offsets: %v", err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			e.t.Fatalf("list end offset of %s[%d]: %v", o.Topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out
}

// committed returns the group's committed offset of each partition of topic
// as the broker reports it (OffsetFetch).
func (e *rdEnv) committed(group, topic string) map[int32]int64 {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rdWait)
	defer cancel()
	resp, err := e.adm.FetchOffsets(ctx, group)
	if err != nil {
		e.t.Fatalf("fetch offsets of group %s: %v", group, err)
	}
	out := map[int32]int64{}
	for p, o := range resp[topic] {
		if o.Err != nil {
			e.t.Fatalf("committed offset of %s[%d]: %v", topic, p, o.Err)
		}
		out[p] = o.At
	}
	return out
}

// TestLibrdkafkaIdempotentProduce produces over several partitions with an
// idempotent librdkafka producer (which needs InitProducerId and sequence
// numbers the broker accepts) and reads the log back with franz-go, so that
// what is checked is the broker's log, not librdkafka's view of it.
func TestLibrdkafkaIdempotentProduce(t *testing.T) {
	e := startRdkafka(t)
	const topic, partitions, perPartition = "idempotent", 3, 20
	e.createTopic(topic, partitions)

	p := e.producer(kafka.ConfigMap{"enable.idempotence": true})
	sent := makeRecs("idem", partitions, perPartition)
	got := e.produce(p, topic, sent)

	// One producer, one session, no retries: each partition's records got
	// consecutive offsets from 0 in the order they were produced.
	want := withOffsets(sent, 0)
	if !slices.Equal(got, want) {
		t.Fatalf("delivery reports:\n got %v\nwant %v", got, want)
	}

	if ends := e.endOffsets(topic); !maps.Equal(ends, wantEnds(partitions, perPartition)) {
		t.Fatalf("end offsets %v, want %d in each of %d partitions", ends, perPartition, partitions)
	}

	// Read the whole log back with franz-go.
	from := map[int32]kgo.Offset{}
	for p := range int32(partitions) {
		from[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), rdWait)
	defer cancel()
	var read []rec
	var pids []int64
	for len(read) < len(want) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back %d of %d records within %v", len(read), len(want), rdWait)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s[%d]: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			read = append(read, rec{Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Value: string(r.Value)})
			pids = append(pids, r.ProducerID)
		})
	}
	sortRecs(read)
	sortRecs(want)
	if !slices.Equal(read, want) {
		t.Fatalf("log:\n got %v\nwant %v", read, want)
	}
	// Every batch carries the one producer ID InitProducerId handed out:
	// the records really went through the idempotent path.
	for _, id := range pids {
		if id < 0 || id != pids[0] {
			t.Fatalf("producer IDs of the records: %v, want one non-negative ID", pids)
		}
	}
}

// TestLibrdkafkaConsumeToEOF assigns every partition of a topic from the
// beginning and reads until librdkafka reports the end of each, including a
// partition that holds no records: librdkafka reports the end only from a
// Fetch response whose record set is empty (not null) at the high watermark.
func TestLibrdkafkaConsumeToEOF(t *testing.T) {
	e := startRdkafka(t)
	const topic, partitions, perPartition = "eof", 4, 10
	e.createTopic(topic, partitions)

	// Records go to partitions 0..2; partition 3 stays empty.
	p := e.producer(nil)
	sent := e.produce(p, topic, makeRecs("eof", partitions-1, perPartition))

	c := e.consumer("eof-reader", "eof-reader", kafka.ConfigMap{"enable.partition.eof": true})
	if err := c.Assign(allPartitions(topic, partitions, kafka.OffsetBeginning)); err != nil {
		t.Fatalf("assign: %v", err)
	}
	got, eof := readToEOF(t, c, topic, partitions)

	sortRecs(got)
	sortRecs(sent)
	if !slices.Equal(got, sent) {
		t.Fatalf("records read:\n got %v\nwant %v", got, sent)
	}
	want := map[int32]int64{0: perPartition, 1: perPartition, 2: perPartition, 3: 0}
	if !maps.Equal(eof, want) {
		t.Fatalf("end of partition reported at %v, want %v", eof, want)
	}
}

// TestLibrdkafkaConsumerGroup runs a classic consumer group of two
// librdkafka members with auto-commit: the broker must split the partitions
// between them, the two must read every record exactly once, closing them
// must commit their positions, and a new member of the group must resume
// from those commits and read exactly the records produced since.
func TestLibrdkafkaConsumerGroup(t *testing.T) {
	e := startRdkafka(t)
	const topic, group, partitions = "grouped", "readers", 4
	e.createTopic(topic, partitions)

	member := func(name string, extra kafka.ConfigMap) *rdConsumer {
		cm := kafka.ConfigMap{
			"enable.auto.commit":      true,
			"auto.commit.interval.ms": 100,
			// range over one topic of 4 partitions gives each of 2
			// members 2 partitions, so the split is exactly checkable.
			"partition.assignment.strategy": "range",
		}
		for k, v := range extra {
			cm[k] = v
		}
		c := e.consumer(name, group, cm)
		if err := c.Subscribe(topic, nil); err != nil {
			t.Fatalf("%s: subscribe: %v", name, err)
		}
		return c
	}
	c1 := member("member-1", nil)
	c2 := member("member-2", nil)
	members := []*rdConsumer{c1, c2}

	// 2 partitions each before anything is produced.
	owner := settleSplit(t, topic, partitions, members)
	for p := range int32(partitions) {
		t.Logf("partition %d: %s", p, owner[p].name)
	}

	p := e.producer(nil)
	first := e.produce(p, topic, makeRecs("first", partitions, 10))

	// Both members read until all records are in; each reads only the
	// partitions it owns.
	var got []rec
	perMember := map[string]int{}
	deadline := time.Now().Add(rdWait)
	for len(got) < len(first) {
		if time.Now().After(deadline) {
			t.Fatalf("members read %d of %d records within %v (%v)", len(got), len(first), rdWait, perMember)
		}
		for _, c := range members {
			switch ev := c.Poll(50).(type) {
			case *kafka.Message:
				r := message(t, topic, ev)
				if owner[r.Partition] != c {
					t.Fatalf("%s read %v from a partition assigned to %s", c.name, r, owner[r.Partition].name)
				}
				got = append(got, r)
				perMember[c.name]++
			case nil:
			default:
				t.Logf("%s: event %T: %v", c.name, ev, ev)
			}
		}
	}
	sortRecs(got)
	sortRecs(first)
	if !slices.Equal(got, first) {
		t.Fatalf("records read by the group:\n got %v\nwant %v", got, first)
	}
	if perMember[c1.name] != len(first)/2 || perMember[c2.name] != len(first)/2 {
		t.Fatalf("records per member %v, want %d each", perMember, len(first)/2)
	}

	// Close commits the members' positions (the next offset to read) and
	// leaves the group. c1's leaving rebalances the group; c2 is closed
	// once it holds every partition, because a Close during that rebalance
	// has its commit refused (REBALANCE_IN_PROGRESS while the group
	// completes it, as Kafka's classic group answers) and librdkafka does
	// not retry it: under load, c2's positions were lost that way.
	c1.close(t)
	awaitAssignment(t, c2, partitions)
	c2.close(t)
	if got, want := e.committed(group, topic), wantEnds(partitions, 10); !maps.Equal(got, want) {
		t.Fatalf("committed offsets after close: %v, want %v", got, want)
	}

	second := e.produce(p, topic, makeRecs("second", partitions, 5))

	c3 := member("member-3", kafka.ConfigMap{"enable.partition.eof": true})
	committed, err := c3.Committed(allPartitions(topic, partitions, kafka.OffsetInvalid), int(rdWait/time.Millisecond))
	if err != nil {
		t.Fatalf("%s: committed: %v", c3.name, err)
	}
	for _, tp := range committed {
		if tp.Error != nil || tp.Offset != 10 {
			t.Fatalf("%s: committed offsets %v, want 10 on each partition", c3.name, committed)
		}
	}
	// Starting from the commits, the new member reads exactly the second
	// batch (offsets 10..14) before reaching the end of each partition.
	got, eof := readToEOF(t, c3, topic, partitions)
	sortRecs(got)
	sortRecs(second)
	if !slices.Equal(got, second) {
		t.Fatalf("records read by %s:\n got %v\nwant %v", c3.name, got, second)
	}
	if want := wantEnds(partitions, 15); !maps.Equal(eof, want) {
		t.Fatalf("%s: end of partition reported at %v, want %v", c3.name, eof, want)
	}
}

// TestLibrdkafkaTransactions commits one transaction, aborts a second and
// commits a third with a transactional librdkafka producer. A read_committed
// consumer must read the first and third and skip the aborted records (it
// needs the aborted-transaction list of the Fetch response and a last stable
// offset past the markers); a read_uncommitted consumer must read all three.
func TestLibrdkafkaTransactions(t *testing.T) {
	e := startRdkafka(t)
	const topic, partitions, perPartition = "txn", 2, 3
	e.createTopic(topic, partitions)

	p := e.producer(kafka.ConfigMap{"transactional.id": "librdkafka-txn"})
	ctx, cancel := context.WithTimeout(context.Background(), rdWait)
	defer cancel()
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatalf("init transactions: %v", err)
	}

	// Each transaction's records are delivered (so in the log) before it
	// ends; the aborted ones must then be filtered by the reader, not merely
	// never sent.
	txn := func(batch string, commit bool) []rec {
		if err := p.BeginTransaction(); err != nil {
			t.Fatalf("begin %s: %v", batch, err)
		}
		recs := e.produce(p, topic, makeRecs(batch, partitions, perPartition))
		var err error
		if commit {
			err = p.CommitTransaction(ctx)
		} else {
			err = p.AbortTransaction(ctx)
		}
		if err != nil {
			t.Fatalf("end %s (commit=%v): %v", batch, commit, err)
		}
		return recs
	}
	committed1 := txn("committed-1", true)
	aborted := txn("aborted", false)
	committed2 := txn("committed-2", true)

	// Each transaction's records follow the previous one's end marker (a
	// control record, which takes an offset but is never delivered): per
	// partition, data at 0..2, marker 3, data 4..6, marker 7, data 8..10,
	// marker 11.
	for i, batch := range [][]rec{committed1, aborted, committed2} {
		if want := withOffsets(batch, int64(i*(perPartition+1))); !slices.Equal(batch, want) {
			t.Fatalf("transaction %d delivered at\n %v\nwant %v", i+1, batch, want)
		}
	}
	end := int64(3 * (perPartition + 1))
	if got := e.endOffsets(topic); !maps.Equal(got, wantEnds(partitions, end)) {
		t.Fatalf("end offsets %v, want %d on each partition", got, end)
	}

	for _, tc := range []struct {
		isolation string
		want      []rec
	}{
		{"read_committed", slices.Concat(committed1, committed2)},
		{"read_uncommitted", slices.Concat(committed1, aborted, committed2)},
	} {
		c := e.consumer(tc.isolation, tc.isolation, kafka.ConfigMap{
			"isolation.level":      tc.isolation,
			"enable.partition.eof": true,
		})
		if err := c.Assign(allPartitions(topic, partitions, kafka.OffsetBeginning)); err != nil {
			t.Fatalf("%s: assign: %v", tc.isolation, err)
		}
		got, eof := readToEOF(t, c, topic, partitions)
		sortRecs(got)
		sortRecs(tc.want)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s read:\n got %v\nwant %v", tc.isolation, got, tc.want)
		}
		// With every transaction ended the last stable offset is the high
		// watermark, so both isolation levels end there.
		if want := wantEnds(partitions, end); !maps.Equal(eof, want) {
			t.Errorf("%s: end of partition reported at %v, want %v", tc.isolation, eof, want)
		}
	}
}

// TestLibrdkafkaConsumerGroupThreeNodes runs a librdkafka group member
// against three nodes (docs/cluster.md): it finds the group's
// coordinator, fetches each partition from its leader, validates its
// positions with OffsetForLeaderEpoch, reads to the end of every partition
// and commits there.
func TestLibrdkafkaConsumerGroupThreeNodes(t *testing.T) {
	e := startRdkafka(t, sharebrokertest.WithNodes(3))
	const topic, group, partitions = "spread", "spread-readers", 6
	e.createTopic(topic, partitions)
	p := e.producer(nil)
	sent := e.produce(p, topic, makeRecs("spread", partitions, 10))

	c := e.consumer("spread-reader", group, kafka.ConfigMap{
		"enable.partition.eof": true,
		"enable.auto.commit":   false,
		"auto.offset.reset":    "earliest",
	})
	if err := c.Subscribe(topic, nil); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	got, eof := readToEOF(t, c, topic, partitions)
	if len(eof) != partitions || slices.ContainsFunc(slices.Collect(maps.Values(eof)), func(o int64) bool { return o != 10 }) {
		t.Fatalf("end of partition reported at %v, want 10 each", eof)
	}
	sortRecs(got)
	if sortRecs(sent); !slices.Equal(got, sent) {
		t.Fatalf("records read:\n got %v\nwant %v", got, sent)
	}
	if _, err := c.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	committed := e.committed(group, topic)
	for part := range int32(partitions) {
		if committed[part] != 10 {
			t.Fatalf("committed %v, want 10 in each partition", committed)
		}
	}
}

// settleSplit polls members (librdkafka applies assignments from Poll)
// until the group has settled with an even split of topic's partitions
// and no partition held twice, before anything is produced, so no record
// is read by a member that then loses its partition. It returns each
// partition's owner.
// awaitAssignment polls c until it holds all partitions of its topic,
// failing the test after rdWait.
func awaitAssignment(t *testing.T, c *rdConsumer, partitions int32) {
	t.Helper()
	deadline := time.Now().Add(rdWait)
	for {
		if ev := c.Poll(50); ev != nil {
			if _, ok := ev.(*kafka.Message); ok {
				t.Fatalf("%s read a record while taking over its peer's partitions", c.name)
			}
			t.Logf("%s: event %T: %v", c.name, ev, ev)
		}
		as, err := c.Assignment()
		if err != nil {
			t.Fatalf("%s: assignment: %v", c.name, err)
		}
		if int32(len(as)) == partitions {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %d of %d partitions after %v", c.name, len(as), partitions, rdWait)
		}
	}
}

func settleSplit(t *testing.T, topic string, partitions int32, members []*rdConsumer) map[int32]*rdConsumer {
	t.Helper()
	owner := map[int32]*rdConsumer{}
	deadline := time.Now().Add(rdWait)
	for {
		for _, c := range members {
			if ev := c.Poll(50); ev != nil {
				if m, ok := ev.(*kafka.Message); ok {
					t.Fatalf("%s read %v from an empty topic", c.name, message(t, topic, m))
				}
				t.Logf("%s: event %T: %v", c.name, ev, ev)
			}
		}
		clear(owner)
		split := true
		for _, c := range members {
			as, err := c.Assignment()
			if err != nil {
				t.Fatalf("%s: assignment: %v", c.name, err)
			}
			split = split && int32(len(as)) == partitions/2
			for _, tp := range as {
				if _, ok := owner[tp.Partition]; ok {
					split = false // both hold it: a rebalance is under way
				}
				owner[tp.Partition] = c
			}
		}
		if split && int32(len(owner)) == partitions {
			return owner
		}
		if time.Now().After(deadline) {
			for _, c := range members {
				as, _ := c.Assignment()
				t.Logf("%s has %v", c.name, as)
			}
			t.Fatalf("no even split within %v", rdWait)
		}
	}
}

// Rules: leader-move, coordinator-move, offsets-survive (docs/cluster.md):
// a librdkafka consumer group of two on three nodes reads to the end of
// every partition, then a partition's leader and the group's coordinator
// move and more is produced; the members read on to the new ends without
// a rebalance. Every record is read once, and the offsets committed at the
// end are the high watermarks.
func TestLibrdkafkaConsumerGroupThroughMoves(t *testing.T) {
	e := startRdkafka(t, sharebrokertest.WithNodes(3))
	const topic, group, partitions = "moving", "moving-readers", 4
	e.createTopic(topic, partitions)
	var members []*rdConsumer
	for _, name := range []string{"mover-1", "mover-2"} {
		c := e.consumer(name, group, kafka.ConfigMap{
			"enable.partition.eof":          true,
			"partition.assignment.strategy": "range",
		})
		if err := c.Subscribe(topic, nil); err != nil {
			t.Fatalf("%s: subscribe: %v", name, err)
		}
		members = append(members, c)
	}
	settleSplit(t, topic, partitions, members)
	p := e.producer(nil)

	// read polls both members until every partition has reported its end
	// at ends, and returns the records they read meanwhile.
	read := func(ends map[int32]int64) []rec {
		t.Helper()
		var got []rec
		eof := map[int32]int64{}
		deadline := time.Now().Add(rdWait)
		for !maps.Equal(eof, ends) {
			if time.Now().After(deadline) {
				t.Fatalf("after %v, ends reported %v, want %v (read %d records)", rdWait, eof, ends, len(got))
			}
			for _, c := range members {
				switch r, ev := pollEvent(t, c, topic, 20); {
				case r != nil:
					got = append(got, *r)
				case ev != nil:
					eof[ev.Partition] = int64(ev.Offset)
				}
			}
		}
		return got
	}
	sent := e.produce(p, topic, makeRecs("before", partitions, 10))
	got := read(wantEnds(partitions, 10))
	for _, c := range members {
		if _, err := c.Commit(); err != nil {
			t.Fatalf("%s: commit: %v", c.name, err)
		}
	}

	cl := e.b.Broker().Cluster()
	var coord int32
	for _, co := range cl.Coordinators {
		if co.Type == "group" && co.Key == group {
			coord = co.Node
		}
	}
	for _, l := range cl.Partitions {
		if l.Topic == topic && l.Partition == 1 {
			if err := e.b.MoveLeader(topic, 1, (l.Leader+1)%3); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.b.MoveGroupCoordinator(group, (coord+1)%3); err != nil {
		t.Fatal(err)
	}
	sent = append(sent, e.produce(p, topic, makeRecs("after", partitions, 10))...)
	got = append(got, read(wantEnds(partitions, 20))...)
	for _, c := range members {
		if _, err := c.Commit(); err != nil {
			t.Fatalf("%s: commit after the moves: %v", c.name, err)
		}
	}
	sortRecs(got)
	if sortRecs(sent); !slices.Equal(got, sent) {
		t.Fatalf("records read:\n got %v\nwant %v", got, sent)
	}
	if ends, committed := e.endOffsets(topic), e.committed(group, topic); !maps.Equal(committed, ends) {
		t.Fatalf("committed %v, high watermarks %v", committed, ends)
	}
}

// librdkafka over SASL_SSL with SCRAM-SHA-512, trusting the CA the broker
// generated (GET /v1/tls/ca.pem) and verifying the host name, produces and
// consumes; a wrong password fails with an authentication error, bounded.
// Rules (docs/security.md): sasl-listeners, scram-exchange, generated-certificate.
func TestLibrdkafkaSASLSSLSCRAM(t *testing.T) {
	e := startRdkafka(t,
		sharebrokertest.WithProperty("listeners", "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"),
		sharebrokertest.WithSASLUser("alice", "alice-secret"),
		sharebrokertest.WithHTTP())
	ca := servedCAFile(t, e.b.HTTPAddr)
	const topic = "rd-sasl-ssl"
	e.createTopic(topic, 1)
	secure := func(pass string) kafka.ConfigMap {
		return kafka.ConfigMap{
			"bootstrap.servers":                     e.b.Broker().ListenerAddr("SASL_SSL").String(),
			"security.protocol":                     "SASL_SSL",
			"sasl.mechanisms":                       "SCRAM-SHA-512",
			"sasl.username":                         "alice",
			"sasl.password":                         pass,
			"ssl.ca.location":                       ca,
			"ssl.endpoint.identification.algorithm": "https",
		}
	}
	p := e.producer(secure("alice-secret"))
	recs := makeRecs("sasl", 1, 3)
	got := e.produce(p, topic, recs)
	cc := secure("alice-secret")
	cc["enable.partition.eof"] = true
	c := e.consumer("sasl", "rd-sasl-group", cc)
	if err := c.Assign(allPartitions(topic, 1, kafka.OffsetBeginning)); err != nil {
		t.Fatal(err)
	}
	read, _ := readToEOF(t, c, topic, 1)
	if !slices.Equal(read, got) {
		t.Fatalf("read %v, want %v", read, got)
	}

	// A wrong password: librdkafka reports the broker's
	// SASL_AUTHENTICATION_FAILED as an _AUTHENTICATION error event (and
	// keeps retrying, as it does for any broker it cannot reach).
	badConf := secure("wrong")
	start := time.Now()
	bad, err := kafka.NewProducer(&badConf)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	timeout := time.After(rdWait)
	for {
		select {
		case ev := <-bad.Events():
			if kerr, ok := ev.(kafka.Error); ok && kerr.Code() == kafka.ErrAuthentication {
				if took := time.Since(start); took > 3*time.Second {
					t.Fatalf("wrong password reported after %v", took)
				}
				return
			}
			t.Logf("event before the authentication error: %v", ev)
		case <-timeout:
			t.Fatal("no authentication error for a wrong password")
		}
	}
}
