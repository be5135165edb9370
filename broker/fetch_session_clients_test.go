package broker_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/broker"
)

// Real clients consuming many partitions through Fetch sessions
// (fetch-session-incremental). kgo opens a session and sends incremental
// fetches; sarama and kafka-go fetch with epoch -1 (sessionless, so the
// broker must make no session for them). Each test checks every record
// arrives once and in order per partition.

// produceSessionRound writes perPartition records to each of partitions
// partitions of topic with kgo, the value of each "round/partition/i".
func produceSessionRound(t *testing.T, cl *kgo.Client, topic string, round string, partitions, perPartition int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rs []*kgo.Record
	for p := range partitions {
		for i := range perPartition {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(p), Value: fmt.Appendf(nil, "%s/%d/%d", round, p, i)})
		}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// inOrder tracks what a consumer read of each partition: the next offset
// and record expected, failing on a gap, repeat or reorder.
type inOrder struct {
	t    *testing.T
	next map[int32]int64
	n    int
}

func (o *inOrder) saw(p int32, offset int64) {
	o.t.Helper()
	if offset != o.next[p] {
		o.t.Fatalf("partition %d: offset %d read, want %d", p, offset, o.next[p])
	}
	o.next[p]++
	o.n++
}

// TestFetchSessionKgoManyPartitions consumes 256 partitions with kgo, which
// uses a fetch session by default, with a small fetch.max.bytes so that
// most fetches are incremental and leave partitions out: three rounds of
// records, the later two produced while the consumer is caught up and
// parked. The broker must hold exactly kgo's one session at the end.
func TestFetchSessionKgoManyPartitions(t *testing.T) {
	const topic, partitions, perPartition = "kgo-many", 256, 20
	b, addr := startBroker(t, broker.Config{HTTP: "127.0.0.1:0", Props: map[string]string{"num.partitions": strconv.Itoa(partitions)}})
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produceSessionRound(t, prod, topic, "r0", partitions, perPartition)

	assign := map[int32]kgo.Offset{}
	for p := range int32(partitions) {
		assign[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.FetchMaxBytes(16<<10), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seen := &inOrder{t: t, next: map[int32]int64{}}
	for round := 1; round <= 3; round++ {
		want := round * partitions * perPartition
		for seen.n < want {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("round %d: read %d of %d records: %v", round, seen.n, want, err)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				seen.saw(r.Partition, r.Offset)
				wantValue := fmt.Sprintf("r%d/%d/%d", r.Offset/perPartition, r.Partition, r.Offset%perPartition)
				if string(r.Value) != wantValue {
					t.Fatalf("p%d@%d: value %q, want %q", r.Partition, r.Offset, r.Value, wantValue)
				}
			})
		}
		if seen.n != want {
			t.Fatalf("round %d: read %d records, want %d", round, seen.n, want)
		}
		if round < 3 {
			produceSessionRound(t, prod, topic, "r"+strconv.Itoa(round), partitions, perPartition)
		}
	}
	if st := broker.FetchSessionStats(b); st.Sessions != 1 || st.Partitions != partitions {
		t.Fatalf("session cache %+v, want kgo's one session of %d partitions", st, partitions)
	}
	// fetch-session-metrics: the cache as Kafka's FetchSessionCache
	// gauges show it.
	node := map[string]string{"node": "0"}
	wantMetrics(t, scrape(t, "http://"+b.HTTPAddr().String()), []metricWant{
		{"sharebroker_fetch_sessions", node, 1},
		{"sharebroker_fetch_session_partitions", node, partitions},
		{"sharebroker_fetch_session_evictions_total", node, 0},
	})
}

// TestFetchSessionSaramaManyPartitions consumes 64 partitions with sarama's
// consumer, which fetches every partition of a broker in one sessionless
// request (epoch -1): all records arrive, and no session is made.
func TestFetchSessionSaramaManyPartitions(t *testing.T) {
	const topic, partitions, perPartition = "sarama-many", 64, 30
	b, addr := startBroker(t, broker.Config{HTTP: "127.0.0.1:0", Props: map[string]string{"num.partitions": strconv.Itoa(partitions)}})
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produceSessionRound(t, prod, topic, "r0", partitions, perPartition)

	cfg := sarama.NewConfig()
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	cfg.Consumer.Fetch.Max = 16 << 10
	cons, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	msgs := make(chan *sarama.ConsumerMessage, partitions*perPartition)
	for p := range int32(partitions) {
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		go func() {
			for m := range pc.Messages() {
				msgs <- m
			}
		}()
	}
	seen := &inOrder{t: t, next: map[int32]int64{}}
	deadline := time.After(60 * time.Second)
	for seen.n < partitions*perPartition {
		select {
		case m := <-msgs:
			seen.saw(m.Partition, m.Offset)
		case <-deadline:
			t.Fatalf("read %d of %d records", seen.n, partitions*perPartition)
		}
	}
	if st := broker.FetchSessionStats(b); st.Sessions != 0 {
		t.Fatalf("sarama's sessionless fetches left %d sessions", st.Sessions)
	}
}

// TestFetchSessionKafkaGoManyPartitions reads 32 partitions with kafka-go's
// Client.Fetch, which sends session ID -1 and epoch -1 (sessionless: the
// unknown ID is closed, as Kafka does, and nothing is made).
func TestFetchSessionKafkaGoManyPartitions(t *testing.T) {
	const topic, partitions, perPartition = "kafkago-many", 32, 25
	b, addr := startBroker(t, broker.Config{HTTP: "127.0.0.1:0", Props: map[string]string{"num.partitions": strconv.Itoa(partitions)}})
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produceSessionRound(t, prod, topic, "r0", partitions, perPartition)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second}
	seen := &inOrder{t: t, next: map[int32]int64{}}
	for p := range partitions {
		for seen.next[int32(p)] < perPartition {
			resp, err := client.Fetch(ctx, &kafka.FetchRequest{Topic: topic, Partition: p, Offset: seen.next[int32(p)],
				MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Error != nil {
				t.Fatalf("p%d: %v", p, resp.Error)
			}
			for {
				r, err := resp.Records.ReadRecord()
				if err != nil {
					break
				}
				if r.Offset >= seen.next[int32(p)] {
					seen.saw(int32(p), r.Offset)
				}
			}
		}
	}
	if st := broker.FetchSessionStats(b); st.Sessions != 0 {
		t.Fatalf("kafka-go's sessionless fetches left %d sessions", st.Sessions)
	}
}
