package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Records per op. Each op starts a fresh broker, so both peers always do the
// same work from the same (empty) state, and an op lasts long enough (tens
// to hundreds of ms) for the default -benchtime to run a few of them.
const (
	produceRecords     = 200_000
	produceSyncRecords = 20_000
	// syncRound is how many records each ProduceSync call carries in
	// BenchmarkProduceSync: 10 per partition, so one small batch each.
	syncRound = 10 * benchPartitions
)

// produceTotals accumulates what the ops of one benchmark measured.
type produceTotals struct {
	elapsed  time.Duration
	records  int64
	batches  int64
	requests int64
	allocs   uint64
}

func (t *produceTotals) report(b *testing.B) {
	batches := float64(max(t.batches, 1))
	b.ReportMetric(float64(t.records)/t.elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(t.records)/batches, "records/batch")
	b.ReportMetric(batches/float64(max(t.requests, 1)), "batches/req")
	b.ReportMetric(float64(t.allocs)/batches, "allocs/batch")
}

// BenchmarkProduce times one idempotent kgo producer (default linger and
// buffering, one request in flight) sending 200k records of 100 bytes round
// robin over four partitions, from the first Produce call until Flush
// returns. One op is the whole workload on a fresh broker.
//
// Metrics:
//   - records/s: records over the measured time.
//   - records/batch, batches/req: counted by the client's
//     OnProduceBatchWritten and OnBrokerWrite hooks. Batches here are large
//     (the producer outruns any broker, so they fill up to the 1 MB limit),
//     which makes this mostly a client benchmark; see BenchmarkProduceSync.
//   - allocs/batch: heap allocations of the whole process (kgo client and
//     broker together, both in-process) during the measured time, per
//     batch. The broker's own share is in BenchmarkServerAllocs.
func BenchmarkProduce(b *testing.B) {
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			benchProduceOps(b, p, produceAsync, produceRecords)
		})
	}
}

// produceAsync is BenchmarkProduce's workload: produceRecords records
// round robin, then Flush.
func produceAsync(ctx context.Context, cl *kgo.Client) error {
	var errs errBox
	promise := func(_ *kgo.Record, err error) { errs.set(err) }
	for i := 0; i < produceRecords; i++ {
		r := &kgo.Record{Topic: benchTopic, Partition: int32(i % benchPartitions), Value: benchValue}
		cl.Produce(ctx, r, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	return errs.get()
}

// BenchmarkProduceSync is the pattern of a test that produces and waits:
// ProduceSync of 40 records (10 per partition) at a time, 20k records in
// all. Batches are small and every call waits for its answer, so the
// broker's per-request cost shows.
func BenchmarkProduceSync(b *testing.B) {
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			benchProduceOps(b, p, func(ctx context.Context, cl *kgo.Client) error {
				rs := make([]*kgo.Record, syncRound)
				for sent := 0; sent < produceSyncRecords; sent += syncRound {
					for i := range rs {
						rs[i] = &kgo.Record{Topic: benchTopic, Partition: int32(i % benchPartitions), Value: benchValue}
					}
					if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
						return err
					}
				}
				return nil
			}, produceSyncRecords)
		})
	}
}

// benchProduceOps runs b.N ops of produce, each on a fresh broker with a
// warmed-up client, timing produce only.
func benchProduceOps(b *testing.B, p peer, produce func(context.Context, *kgo.Client) error, records int) {
	var tot produceTotals
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		addr, stop := p.start(b)
		var counter produceCounter
		cl := newClient(b, addr, kgo.WithHooks(&counter))
		warmUp(b, cl)
		ctx, cancel := context.WithTimeout(context.Background(), benchDeadline)
		counter.reset()
		m0 := mallocs()

		b.StartTimer()
		start := time.Now()
		err := produce(ctx, cl)
		elapsed := time.Since(start)
		b.StopTimer()

		tot.allocs += mallocs() - m0
		tot.elapsed += elapsed
		tot.records += int64(records)
		tot.batches += counter.batches.Load()
		tot.requests += counter.requests.Load()
		cancel()
		cl.Close()
		stop()
		if err != nil {
			b.Fatalf("produce: %v", err)
		}
	}
	tot.report(b)
}
