package bench_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	// scaleFetchTopic is the topic the partitions sweep creates, with as
	// many partitions as the point names.
	scaleFetchTopic = "scale-fetch"
	// scaleFetchMaxBytes is the consumer's fetch.max.bytes. kgo's 50 MiB
	// default would bring the 22 MB preload in one or two fetches, so the
	// sweep would time one answer; at 1 MiB the consumer needs about
	// twenty, each of which lists (without a fetch session) or may leave
	// out (with one) every partition: the case fetch sessions are for.
	scaleFetchMaxBytes = 1 << 20
)

// BenchmarkScaleFetchPartitions sweeps the partitions one kgo consumer
// reads (16 → 4096, SHAREBROKER_BENCH_SCALE_PARTITIONS picks points):
// 200k preloaded 100-byte records spread round robin over a topic of N
// partitions, read by a consumer assigned them all directly from the
// start, on a fresh broker process of each peer per op (the
// BenchmarkShareServer harness). kgo uses fetch sessions (KIP-227) with
// both peers.
//
//   - server-cpu-ns/record: the broker process's CPU (schedstat) from
//     creating the consumer until the last record arrived.
//   - records/s: records over that span.
func BenchmarkScaleFetchPartitions(b *testing.B) {
	skipUnlessScale(b)
	for _, n := range scalePoints(b, "PARTITIONS", 16, 256, 1024, 4096) {
		for _, p := range processPeers {
			b.Run(fmt.Sprintf("partitions=%d/%s", n, p.name), func(b *testing.B) {
				benchScaleFetch(b, p, int32(n))
			})
		}
	}
}

func benchScaleFetch(b *testing.B, p processPeer, partitions int32) {
	var (
		elapsed, serverCPU time.Duration
		read               int64
	)
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		child := p.start(b)
		ctx, cancel := context.WithTimeout(context.Background(), benchDeadline)
		preloadPartitions(b, ctx, child.addr, partitions, fetchRecords)

		b.StartTimer()
		srv0 := child.cpu(b)
		start := time.Now()
		cl := newClient(b, child.addr, kgo.FetchMaxBytes(scaleFetchMaxBytes),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{scaleFetchTopic: fromStartOf(partitions)}))
		n, _, err := consume(ctx, cl, fetchRecords)
		elapsed += time.Since(start)
		serverCPU += child.cpu(b) - srv0
		b.StopTimer()

		read += int64(n)
		cl.Close()
		cancel()
		child.stop()
		if err != nil {
			b.Fatal(err)
		}
	}
	r := float64(max(read, 1))
	b.ReportMetric(float64(read)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(serverCPU.Nanoseconds())/r, "server-cpu-ns/record")
}

// preloadPartitions creates the sweep's topic with the given partitions
// and stores n records round robin over them, flushed by hand in rounds
// of preloadBatch records per partition at most, so both peers store the
// same batches.
func preloadPartitions(tb testing.TB, ctx context.Context, addr string, partitions int32, n int) {
	tb.Helper()
	round := min(n, int(partitions)*preloadBatch)
	cl := newClient(tb, addr, kgo.ManualFlushing(), kgo.MaxBufferedRecords(round))
	defer cl.Close()
	createTopic(tb, ctx, cl, scaleFetchTopic, partitions)
	var errs errBox
	promise := func(_ *kgo.Record, err error) { errs.set(err) }
	for sent := 0; sent < n; {
		k := min(n-sent, round)
		for i := 0; i < k; i++ {
			cl.Produce(ctx, &kgo.Record{Topic: scaleFetchTopic, Partition: int32((sent + i) % int(partitions)), Value: benchValue}, promise)
		}
		if err := cl.Flush(ctx); err != nil {
			tb.Fatalf("preload flush: %v", err)
		}
		if err := errs.get(); err != nil {
			tb.Fatalf("preload produce: %v", err)
		}
		sent += k
	}
}

// fromStartOf assigns partitions 0..n-1 from their first offset.
func fromStartOf(n int32) map[int32]kgo.Offset {
	assign := make(map[int32]kgo.Offset, n)
	for p := int32(0); p < n; p++ {
		assign[p] = kgo.NewOffset().AtStart()
	}
	return assign
}
