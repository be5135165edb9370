package bench_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	// fetchRecords are preloaded and then read, per op.
	fetchRecords = 200_000
	// preloadBatch is how many records each partition's batch holds while
	// preloading. Preloading flushes by hand, so every peer stores the
	// same batches (1000 records of ~110 bytes, well under the 1 MB batch
	// limit) whatever its speed.
	preloadBatch = 1000
)

// BenchmarkFetch times one kgo consumer, assigned all four partitions
// directly from the start, reading 200k preloaded records. The clock runs
// from AddConsumePartitions to the poll that brings the last record, so it
// includes the ListOffsets round trip and every Fetch. One op is the whole
// workload on a fresh broker; preloading is not timed.
func BenchmarkFetch(b *testing.B) {
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) { benchFetch(b, p) })
	}
}

func benchFetch(b *testing.B, p peer) {
	var (
		elapsed time.Duration
		read    int64
		polls   int64
		allocs  uint64
	)
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		addr, stop := p.start(b)
		preload(b, addr, fetchRecords)
		cl := newClient(b, addr)
		if err := cl.Ping(context.Background()); err != nil {
			b.Fatalf("ping: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), benchDeadline)
		assign := fromStart()
		m0 := mallocs()

		b.StartTimer()
		start := time.Now()
		cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{benchTopic: assign})
		n, np, err := consume(ctx, cl, fetchRecords)
		elapsed += time.Since(start)
		b.StopTimer()

		allocs += mallocs() - m0
		read += int64(n)
		polls += int64(np)
		cancel()
		cl.Close()
		stop()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(read)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(read)/float64(max(polls, 1)), "records/poll")
	b.ReportMetric(float64(allocs)/float64(max(read, 1)), "allocs/record")
}

// consume polls until want records arrived, returning how many did and in
// how many polls.
func consume(ctx context.Context, cl *kgo.Client, want int) (read, polls int, err error) {
	for read < want {
		fs := cl.PollFetches(ctx)
		polls++
		if err := ctx.Err(); err != nil {
			return read, polls, fmt.Errorf("read %d of %d records: %w", read, want, err)
		}
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) {
				return read, polls, fmt.Errorf("fetch %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		read += fs.NumRecords()
	}
	return read, polls, nil
}

// preload stores n records round robin over the partitions, in batches of
// preloadBatch records per partition, through a producer that only sends
// when told to.
func preload(tb testing.TB, addr string, n int) {
	tb.Helper()
	preloadPartitions(tb, addr, n, benchPartitions)
}

// preloadPartitions is preload over the first partitions partitions of
// benchTopic (the scale sweeps').
func preloadPartitions(tb testing.TB, addr string, n, partitions int) {
	tb.Helper()
	cl := newClient(tb, addr, kgo.ManualFlushing(), kgo.MaxBufferedRecords(partitions*preloadBatch))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), benchDeadline)
	defer cancel()
	var errs errBox
	promise := func(_ *kgo.Record, err error) { errs.set(err) }
	for sent := 0; sent < n; {
		round := min(n-sent, partitions*preloadBatch)
		for i := 0; i < round; i++ {
			r := &kgo.Record{Topic: benchTopic, Partition: int32(i % partitions), Value: benchValue}
			cl.Produce(ctx, r, promise)
		}
		if err := cl.Flush(ctx); err != nil {
			tb.Fatalf("preload flush: %v", err)
		}
		if err := errs.get(); err != nil {
			tb.Fatalf("preload produce: %v", err)
		}
		sent += round
	}
}

// fromStart assigns every benchmark partition from its first offset.
func fromStart() map[int32]kgo.Offset {
	assign := make(map[int32]kgo.Offset, benchPartitions)
	for p := int32(0); p < benchPartitions; p++ {
		assign[p] = kgo.NewOffset().AtStart()
	}
	return assign
}
