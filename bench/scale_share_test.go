package bench_test

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkScaleSharePartitions sweeps the partitions of the one topic two
// kgo share consumers of one group read: 200k preloaded 100-byte records
// spread round robin over N partitions, every record accepted, each point
// on a fresh broker of each peer in a process of its own
// (BenchmarkShareServer's harness). A ShareFetch carries at most
// kgo's 500 records, so as N grows each fetch finds records on a few of the
// partitions of its share session; what the broker does for the others is
// what this sweep shows (docs/share-groups.md share-fetch-ready-set).
//
// Points come from SHAREBROKER_BENCH_SCALE_PARTITIONS (default 16, 256,
// 1024, 4096); the sweep runs only with SHAREBROKER_BENCH_SCALE=1.
//
// Metrics (the largest over ops for HWM-KB, else per record over all ops):
//   - server-cpu-ns/record: the broker process's CPU (schedstat) from
//     creating the consumers until their final FlushAcks returned.
//   - records/s: distinct records accepted per second, creating the
//     consumers to the last new record.
//   - HWM-KB: the broker's peak RSS (VmHWM) at the end.
func BenchmarkScaleSharePartitions(b *testing.B) {
	skipUnlessScale(b)
	for _, n := range scalePoints(b, "PARTITIONS", 16, 256, 1024, 4096) {
		for _, p := range []processPeer{
			{name: "sharebroker", start: func(tb testing.TB) *childBroker {
				// No HTTP listener: its default port is shared by every
				// broker on the machine, and the sweep reads none of it.
				return startSharebrokerProcessArgs(tb, "--http", "", "--config", fmt.Sprintf("num.partitions=%d", n))
			}},
			{name: "kfake", start: func(tb testing.TB) *childBroker { return startKfakeProcessPartitions(tb, n) }},
		} {
			b.Run(fmt.Sprintf("partitions=%d/%s", n, p.name), func(b *testing.B) { benchScaleSharePartitions(b, p, n) })
		}
	}
}

// scaleShareConsumers is the sweep's consumers, as in the issue that set
// the workload.
const scaleShareConsumers = 2

func benchScaleSharePartitions(b *testing.B, p processPeer, partitions int) {
	var (
		elapsed   time.Duration
		serverCPU time.Duration
		read      int64
		hwm       int64
	)
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		child := p.start(b)
		preloadPartitions(b, child.addr, shareRecords, partitions)
		setShareGroupConfig(b, child.addr, shareGroup, "share.auto.offset.reset", "earliest")
		ctx, cancel := context.WithTimeout(context.Background(), benchDeadline)

		b.StartTimer()
		srv0 := child.cpu(b)
		start := time.Now()
		res, err := consumeSharePartitions(ctx, child.addr, scaleShareConsumers, shareRecords, partitions, func() {
			serverCPU += child.cpu(b) - srv0
			hwm = max(hwm, child.statusKB(b, "VmHWM"))
		})
		elapsed += res.lastAt.Sub(start)
		b.StopTimer()

		cancel()
		child.stop()
		if err != nil {
			b.Fatal(err)
		}
		read += int64(res.distinct)
	}
	n := float64(max(read, 1))
	b.ReportMetric(float64(serverCPU.Nanoseconds())/n, "server-cpu-ns/record")
	b.ReportMetric(float64(read)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(hwm), "HWM-KB")
}
