package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

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
