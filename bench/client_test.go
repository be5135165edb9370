package bench_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// newClient returns a kgo client for addr with the options both peers share:
// no compression (so the client's CPU goes to framing, not snappy, and the
// broker's share of the time shows), manual partitioning (record i goes to
// partition i%4 on both peers) and topic auto-creation.
func newClient(tb testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	tb.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		tb.Fatalf("kgo.NewClient: %v", err)
	}
	return cl
}

// warmUp produces one record to each partition and waits for it, so that
// metadata, the producer ID and the connections exist before timing starts.
func warmUp(tb testing.TB, cl *kgo.Client) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for p := int32(0); p < benchPartitions; p++ {
		r := &kgo.Record{Topic: benchTopic, Partition: p, Value: benchValue}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			tb.Fatalf("warm-up produce to partition %d: %v", p, err)
		}
	}
}

// produceCounter counts, through kgo hooks, the record batches and the
// Produce requests the client wrote.
type produceCounter struct {
	batches  atomic.Int64
	requests atomic.Int64
}

var (
	_ kgo.HookProduceBatchWritten = (*produceCounter)(nil)
	_ kgo.HookBrokerWrite         = (*produceCounter)(nil)
)

func (c *produceCounter) OnProduceBatchWritten(kgo.BrokerMetadata, string, int32, kgo.ProduceBatchMetrics) {
	c.batches.Add(1)
}

func (c *produceCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 0 && err == nil {
		c.requests.Add(1)
	}
}

func (c *produceCounter) reset() {
	c.batches.Store(0)
	c.requests.Store(0)
}

// mallocs returns the process's heap allocations so far. Reading it stops
// the world, so call it outside timed regions.
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}
