package sharebrokertest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/sharebrokertest"
)

// The README's share-consumer example as written (docs/seeding.md
// seed-before-listen): records produced before the share consumer starts
// reach it because WithGroupConfig set share.auto.offset.reset=earliest
// before any member joined. Without it the group starts at the log end
// (Kafka's default, latest) and the consumer waits for new records: the
// trap issue 23 describes.
func TestREADMEShareConsumerExample(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	b := sharebrokertest.Start(t,
		sharebrokertest.WithTopic("jobs", 1),
		sharebrokertest.WithGroupConfig("workers", "share.auto.offset.reset", "earliest"))

	producer, _ := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("jobs"))
	defer producer.Close()
	for i := range 5 {
		producer.Produce(ctx, &kgo.Record{Value: []byte{byte('0' + i)}}, nil)
	}
	if err := producer.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	cl, _ := kgo.NewClient(kgo.SeedBrokers(b.Addr),
		kgo.ShareGroup("workers"), kgo.ConsumeTopics("jobs"))
	defer cl.Close()
	var got int
	for got < 5 && ctx.Err() == nil {
		for _, r := range cl.PollFetches(ctx).Records() {
			r.Ack(kgo.AckAccept)
			got++
		}
	}
	if got != 5 {
		t.Fatalf("the share consumer got %d of the 5 records produced before it started", got)
	}
	flushAcks(t, ctx, b, cl)
	window, ok := b.ShareGroup("workers")
	if !ok || len(window.Partitions) != 1 || window.Partitions[0].SPSO != 5 {
		t.Fatalf("workers' window after accepting all 5: %+v", window)
	}
}

// WithSeedFile applies --seed's file format; WithTopic's configs are set
// on the topic.
func TestWithSeedFileAndTopicConfigs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	file := filepath.Join(t.TempDir(), "seed.json")
	if err := os.WriteFile(file, []byte(`{"topics": [{"name": "from-file", "partitions": 4}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	b := sharebrokertest.Start(t, sharebrokertest.WithSeedFile(file),
		sharebrokertest.WithTopic("from-option", 2, "retention.ms=60000"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(topics["from-file"].Partitions); n != 4 {
		t.Errorf("from-file has %d partitions, want 4", n)
	}
	if n := len(topics["from-option"].Partitions); n != 2 {
		t.Errorf("from-option has %d partitions, want 2", n)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "from-option")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("from-option", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" && c.MaybeValue() != "60000" {
			t.Errorf("from-option retention.ms = %q, want 60000", c.MaybeValue())
		}
	}
}

// flushAcks flushes cl's acknowledgements while moving the broker's clock
// on in steps of 500 ms, as the README says a test must: kgo keeps a fetch
// parked after a poll returns and sends acknowledgements on that fetch's
// connection after it, and on the manual clock the parked fetch answers
// only when its MaxWait passes there. The steps stop once the flush
// returns, far short of the 30 s acquisition lock.
func flushAcks(t *testing.T, ctx context.Context, b *sharebrokertest.Broker, cl *kgo.Client) {
	t.Helper()
	flushed := make(chan error, 1)
	go func() { flushed <- cl.FlushAcks(ctx) }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for moved := time.Duration(0); ; {
		select {
		case err := <-flushed:
			if err != nil {
				t.Fatal(err)
			}
			return
		case <-tick.C:
			if moved < 10*time.Second {
				b.Advance(500 * time.Millisecond)
				moved += 500 * time.Millisecond
			}
		case <-ctx.Done():
			t.Fatal("acknowledgements not flushed before the deadline")
		}
	}
}
