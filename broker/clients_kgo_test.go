package broker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/broker"
)

// kgoPartitions is the partition count of the auto-created topics below.
const kgoPartitions = 4

// TestKgoRoundTripCodecs produces records with headers through kgo with every
// compression codec and reads each one back by direct partition assignment,
// checking key, value, headers, partition and offset. The broker stores
// batches as produced, so this proves that every codec's batches survive the
// base-offset rewrite and are served back byte for byte.
// Each codec gets 100k small records in its own topic.
func TestKgoRoundTripCodecs(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"num.partitions": strconv.Itoa(kgoPartitions)}})
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		n     int
	}{
		{"none", kgo.NoCompression(), 100_000},
		{"gzip", kgo.GzipCompression(), 100_000},
		{"snappy", kgo.SnappyCompression(), 100_000},
		{"lz4", kgo.Lz4Compression(), 100_000},
		{"zstd", kgo.ZstdCompression(), 100_000},
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "kgo-codec-" + c.name
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			produceKgo(ctx, t, addr, topic, c.codec, c.n)
			consumeKgo(ctx, t, addr, topic, c.n)
		})
	}
}

// kgoRecord returns record i of a test run. Record i goes to partition
// i%kgoPartitions, so with an ordered (idempotent) producer it lands at
// offset i/kgoPartitions. Every fifth record has an empty value and every
// seventh no headers, so those encodings are covered too.
func kgoRecord(topic string, i int) *kgo.Record {
	r := &kgo.Record{
		Topic:     topic,
		Partition: int32(i % kgoPartitions),
		Key:       fmt.Appendf(nil, "k%d", i),
		Value:     fmt.Appendf(nil, "value-%d", i),
	}
	if i%5 == 0 {
		r.Value = []byte{}
	}
	if i%7 != 0 {
		r.Headers = []kgo.RecordHeader{
			{Key: "idx", Value: []byte(strconv.Itoa(i))},
			{Key: "empty", Value: nil},
		}
	}
	return r
}

func produceKgo(ctx context.Context, t *testing.T, addr, topic string, codec kgo.CompressionCodec, n int) {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(20_000),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	errs := make(chan error, 1)
	for i := range n {
		cl.Produce(ctx, kgoRecord(topic, i), func(r *kgo.Record, err error) {
			if err == nil && r.Offset != int64(i/kgoPartitions) {
				err = fmt.Errorf("record %d acknowledged at p%d@%d, want p%d@%d", i, r.Partition, r.Offset, i%kgoPartitions, i/kgoPartitions)
			}
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	select {
	case err := <-errs:
		t.Fatalf("produce: %v", err)
	default:
	}

	// ListOffsets (through kadm) must agree with what was acknowledged.
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	seen := 0
	ends.Each(func(o kadm.ListedOffset) {
		seen++
		want := int64((n - int(o.Partition) + kgoPartitions - 1) / kgoPartitions)
		if o.Err != nil || o.Offset != want {
			t.Errorf("p%d: end offset %d (%v), want %d", o.Partition, o.Offset, o.Err, want)
		}
	})
	if seen != kgoPartitions {
		t.Fatalf("ListEndOffsets listed %d partitions, want %d", seen, kgoPartitions)
	}
}

func consumeKgo(ctx context.Context, t *testing.T, addr, topic string, n int) {
	t.Helper()
	assign := make(map[int32]kgo.Offset, kgoPartitions)
	for p := range int32(kgoPartitions) {
		assign[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	seen := make([]bool, n)
	var next [kgoPartitions]int64 // next offset expected per partition
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records before the deadline", got, n)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s/%d: %v", topic, p, err)
		})
		for _, r := range fs.Records() {
			i, err := strconv.Atoi(string(bytes.TrimPrefix(r.Key, []byte("k"))))
			if err != nil || i < 0 || i >= n {
				t.Fatalf("p%d@%d: unexpected key %q", r.Partition, r.Offset, r.Key)
			}
			if seen[i] {
				t.Fatalf("record %d delivered twice (p%d@%d)", i, r.Partition, r.Offset)
			}
			seen[i] = true
			checkKgoRecord(t, kgoRecord(topic, i), r)
			if r.Offset != next[r.Partition] {
				t.Fatalf("p%d: got offset %d, want %d (gap or reorder)", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			got++
		}
	}
}

func checkKgoRecord(t *testing.T, want, got *kgo.Record) {
	t.Helper()
	i, _ := strconv.Atoi(string(want.Key[1:]))
	wantOffset := int64(i / kgoPartitions)
	switch {
	case got.Topic != want.Topic:
		t.Fatalf("record %d: topic %q, want %q", i, got.Topic, want.Topic)
	case got.Partition != want.Partition || got.Offset != wantOffset:
		t.Fatalf("record %d: at p%d@%d, want p%d@%d", i, got.Partition, got.Offset, want.Partition, wantOffset)
	case !bytes.Equal(got.Value, want.Value):
		t.Fatalf("record %d: value %q, want %q", i, got.Value, want.Value)
	case len(got.Headers) != len(want.Headers):
		t.Fatalf("record %d: %d headers, want %d", i, len(got.Headers), len(want.Headers))
	}
	for j, h := range want.Headers {
		if g := got.Headers[j]; g.Key != h.Key || !bytes.Equal(g.Value, h.Value) {
			t.Fatalf("record %d header %d: %q=%q, want %q=%q", i, j, g.Key, g.Value, h.Key, h.Value)
		}
	}
}

// TestKgoConsumeWhileProducing runs a consumer that is already polling
// (its fetches long-poll on empty partitions) while several idempotent
// producers write concurrently, so every record reaches the consumer
// through a fetch woken by an append. Each producer's records must arrive
// in its own order within a partition, exactly once.
func TestKgoConsumeWhileProducing(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"num.partitions": strconv.Itoa(kgoPartitions)}})
	const topic = "kgo-concurrent"
	const producers, perProducer = 4, 5000
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	admin, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	// Create the topic (through Metadata) before the consumer asks for it.
	if err := admin.ProduceSync(ctx, &kgo.Record{Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatalf("create topic: %v", err)
	}

	assign := make(map[int32]kgo.Offset)
	for p := range int32(kgoPartitions) {
		assign[p] = kgo.NewOffset().AtStart()
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}),
		kgo.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()

	type result struct {
		got int
		err error
	}
	done := make(chan result, 1)
	go func() {
		// last[producer][partition] is the last sequence number seen.
		var last [producers][kgoPartitions]int
		for i := range last {
			for j := range last[i] {
				last[i][j] = -1
			}
		}
		got := 0
		for got < producers*perProducer {
			fs := consumer.PollFetches(ctx)
			if ctx.Err() != nil {
				done <- result{got, ctx.Err()}
				return
			}
			var ferr error
			fs.EachError(func(_ string, _ int32, err error) { ferr = err })
			if ferr != nil {
				done <- result{got, ferr}
				return
			}
			for _, r := range fs.Records() {
				var who, seq int
				if _, err := fmt.Sscanf(string(r.Value), "p%d-%d", &who, &seq); err != nil {
					continue // the record that created the topic
				}
				if seq <= last[who][r.Partition] {
					done <- result{got, fmt.Errorf("producer %d: seq %d after %d on partition %d", who, seq, last[who][r.Partition], r.Partition)}
					return
				}
				last[who][r.Partition] = seq
				got++
			}
		}
		done <- result{got, nil}
	}()

	errs := make(chan error, producers)
	for w := range producers {
		go func() {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
				kgo.ProducerLinger(time.Millisecond))
			if err != nil {
				errs <- err
				return
			}
			defer cl.Close()
			for i := range perProducer {
				cl.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "%d", i%17), Value: fmt.Appendf(nil, "p%d-%d", w, i)}, nil)
			}
			errs <- cl.Flush(ctx)
		}()
	}
	for range producers {
		if err := <-errs; err != nil {
			t.Fatalf("producer: %v", err)
		}
	}
	r := <-done
	if r.err != nil || r.got != producers*perProducer {
		t.Fatalf("consumer got %d of %d records: %v", r.got, producers*perProducer, r.err)
	}
}

// TestKgoConsumeFromMidBatch starts a consumer at an offset inside a stored
// batch: the broker returns the whole batch and the client must skip the
// records before its offset.
func TestKgoConsumeFromMidBatch(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	const topic = "kgo-mid-batch"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	recs := make([]*kgo.Record, 100)
	for i := range recs {
		recs[i] = &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The test means something only if offset 57 is not a batch's first.
	for _, b := range dialRaw(t, addr).fetchAll(topic, 0) {
		if b.FirstOffset == 57 {
			t.Fatalf("offset 57 starts a batch; the producer did not batch as expected")
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(57)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for want := int64(57); want < 100; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reached offset %d of 100 before the deadline", want)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		for _, r := range fs.Records() {
			if r.Offset != want || string(r.Value) != fmt.Sprintf("v%d", want) {
				t.Fatalf("got offset %d value %q, want offset %d", r.Offset, r.Value, want)
			}
			want++
		}
	}
}

// TestKgoMessageTooLarge checks that kgo surfaces the broker's
// MESSAGE_TOO_LARGE for a batch over message.max.bytes, and that records
// under the limit still go through.
func TestKgoMessageTooLarge(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"message.max.bytes": "4096"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// kgo checks its own ProducerBatchMaxBytes before sending; keep that
	// above the broker's limit so the broker is the one that refuses. The
	// limit applies to the batch as sent, so compression (snappy by
	// default) would shrink the repetitive value under it.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("kgo-too-large"),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	err = cl.ProduceSync(ctx, &kgo.Record{Value: bytes.Repeat([]byte("x"), 8000)}).FirstErr()
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("8000-byte record: got %v, want MESSAGE_TOO_LARGE", err)
	}
	r, err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("small")}).First()
	if err != nil || r.Offset != 0 {
		t.Fatalf("small record after a refused one: offset %v, err %v; want offset 0", r, err)
	}
}
