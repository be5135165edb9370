package bench_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkScaleShareMembers sweeps the members of one share group: N kgo
// share consumers in this process (axis MEMBERS, default 1, 4, 16, 64)
// consume and accept 200k preloaded 100-byte records of a topic of 64
// partitions, each point on a fresh broker process of each peer (the
// child-process harness of BenchmarkShareServer). It is a scale sweep:
// skipped unless SHAREBROKER_BENCH_SCALE=1 (`make bench-scale`).
//
// Both peers run with 10000 record locks per partition
// (scaleSharePeers), as BenchmarkShareConsume does: while a group of 64
// settles, members keep fetching partitions the assignor has moved on
// until their next heartbeat, and at Kafka's 2000 such sharing pauses a
// run for a MaxWait now and then (docs/share-groups.md §2.11). The sweep
// times the broker, not those pauses.
//
// Metrics: records/s, server-cpu-ns/record and HWM-KB, as in
// BenchmarkShareServer (records/s from creating the consumers to the
// poll that brings the last record; the broker's CPU over that span and
// the final acknowledgements; its peak RSS, the preload included).
func BenchmarkScaleShareMembers(b *testing.B) {
	skipUnlessScale(b)
	topic := shareTopic{name: "scale-members", partitions: 64}
	for _, n := range scalePoints(b, "MEMBERS", 1, 4, 16, 64) {
		for _, p := range scaleSharePeers {
			b.Run(fmt.Sprintf("members=%d/%s", n, p.name), func(b *testing.B) {
				var m scaleShareMetrics
				for range b.N {
					m.add(runScaleShare(b, p, topic, n, shareRecords, nil))
				}
				m.report(b)
			})
		}
	}
}

// BenchmarkScaleIdleConns sweeps idle connections (axis CONNS, default 0,
// 1000, 5000): before the share run, N plain TCP connections are opened
// to the fresh broker, each sends one ApiVersions request, reads its
// answer and then stays open and silent until the run is over. The run
// is two kgo share consumers on 16 partitions, 200k records, with the
// peers of BenchmarkScaleShareMembers. A scale sweep (skipUnlessScale).
//
// Metrics: those of BenchmarkScaleShareMembers, and KB/conn: how much the
// broker's RSS grew from before the first connection to after the last
// had its answer (sampled until it stops growing), per connection.
func BenchmarkScaleIdleConns(b *testing.B) {
	skipUnlessScale(b)
	points := scalePoints(b, "CONNS", 0, 1000, 5000)
	// Both ends of every connection are on this machine, ours here and
	// the broker's in the child, which inherits this process's limit.
	raiseOpenFiles(b, uint64(slices.Max(append([]int{0}, points...)))+1024)
	topic := shareTopic{name: "scale-conns", partitions: 16}
	for _, n := range points {
		for _, p := range scaleSharePeers {
			b.Run(fmt.Sprintf("conns=%d/%s", n, p.name), func(b *testing.B) {
				var (
					m      scaleShareMetrics
					growth int64
				)
				for range b.N {
					m.add(runScaleShare(b, p, topic, 2, shareRecords, func(child *childBroker) func() {
						conns, kb := openIdleConns(b, child, n)
						growth += kb
						return func() {
							for _, c := range conns {
								c.Close()
							}
						}
					}))
				}
				m.report(b)
				if n > 0 {
					b.ReportMetric(float64(growth)/float64(b.N)/float64(n), "KB/conn")
				}
			})
		}
	}
}

// BenchmarkScaleOnePartition is the one-partition test with a fast
// producer (docs/share-groups.md §2.12): one kgo share consumer, with
// kgo's defaults, accepts 50k 100-byte records preloaded into a topic of
// one partition in producer batches of at most N KiB (axis BATCH_KB,
// default 1024, 256, 64, 16; kgo's default ProducerBatchMaxBytes is
// 1,000,012 bytes, about 1024 KiB). Both peers run at Kafka's default
// in-flight limit, 2000 record locks per partition (processPeers), as an
// untuned test would. A scale sweep (skipUnlessScale); metrics those of
// BenchmarkScaleShareMembers.
func BenchmarkScaleOnePartition(b *testing.B) {
	skipUnlessScale(b)
	benchOnePartition(b)
}

// BenchmarkScaleOnePartitionStrict is BenchmarkScaleOnePartition with the
// consumer in kgo's record-limit mode (ShareMaxRecordsStrict: ShareFetch
// acquire mode 1, at most 500 records per fetch whatever the batch size,
// and one fetch per poll), the setting share-groups.md §2.12 suggests
// for a one-partition test.
func BenchmarkScaleOnePartitionStrict(b *testing.B) {
	skipUnlessScale(b)
	benchOnePartition(b, kgo.ShareMaxRecordsStrict())
}

func benchOnePartition(b *testing.B, consumer ...kgo.Opt) {
	for _, kb := range scalePoints(b, "BATCH_KB", 1024, 256, 64, 16) {
		topic := shareTopic{
			name:       "scale-one-partition",
			partitions: 1,
			// Flush every four batches' worth or so, so that the
			// producer's byte limit, not the flush, cuts the batches.
			batch:    4 * (kb << 10) / valueBytes,
			producer: []kgo.Opt{kgo.ProducerBatchMaxBytes(int32(kb << 10))},
			consumer: consumer,
		}
		for _, p := range processPeers {
			b.Run(fmt.Sprintf("batchKB=%d/%s", kb, p.name), func(b *testing.B) {
				var m scaleShareMetrics
				for range b.N {
					m.add(runScaleShare(b, p, topic, 1, onePartitionRecords, nil))
				}
				m.report(b)
			})
		}
	}
}

// onePartitionRecords is BenchmarkScaleOnePartition's workload: at about
// 15k records/s (one 1 MiB batch per 500 ms MaxWait) a run takes ~3 s.
const onePartitionRecords = 50_000

// scaleSharePeers start the broker processes of the share sweeps, both
// with 10000 record locks per partition (BenchmarkScaleShareMembers).
var scaleSharePeers = []processPeer{
	{name: "sharebroker", start: func(tb testing.TB) *childBroker {
		var args []string
		for k, v := range shareLockProps {
			args = append(args, "--config", k+"="+v)
		}
		return startSharebrokerProcessArgs(tb, args...)
	}},
	{name: "kfake", start: func(tb testing.TB) *childBroker {
		// kfake has no group maximum to raise.
		return startKfakeProcessConfigs(tb, map[string]string{"group.share.partition.max.record.locks": "10000"})
	}},
}

// scaleShareMetrics sums what runScaleShare measured over a benchmark's ops.
type scaleShareMetrics struct {
	elapsed, serverCPU time.Duration
	records            int64
	hwm                int64
}

func (m *scaleShareMetrics) add(o scaleShareMetrics) {
	m.elapsed += o.elapsed
	m.serverCPU += o.serverCPU
	m.records += o.records
	m.hwm = max(m.hwm, o.hwm)
}

func (m *scaleShareMetrics) report(b *testing.B) {
	n := float64(max(m.records, 1))
	b.ReportMetric(float64(m.records)/m.elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(m.serverCPU.Nanoseconds())/n, "server-cpu-ns/record")
	b.ReportMetric(float64(m.hwm), "HWM-KB")
}

// runScaleShare is one op of a share sweep, untimed by b (the sweeps
// report their own metrics): a fresh broker of p, then hold (if not nil)
// and the topic t preloaded with records records, then members kgo share
// consumers accept them all, measured as BenchmarkShareServer measures.
// What hold returns runs after the consumers closed.
func runScaleShare(b *testing.B, p processPeer, t shareTopic, members, records int, hold func(*childBroker) (release func())) scaleShareMetrics {
	b.Helper()
	b.StopTimer()
	child := p.start(b)
	defer child.stop()
	if hold != nil {
		release := hold(child)
		defer release()
	}
	preloadTopic(b, child.addr, t, records)
	setShareGroupConfig(b, child.addr, shareGroup, "share.auto.offset.reset", "earliest")
	ctx, cancel := context.WithTimeout(context.Background(), benchDeadline)
	defer cancel()

	var m scaleShareMetrics
	srv0 := child.cpu(b)
	start := time.Now()
	res, err := consumeShareTopic(ctx, child.addr, t, members, records, func() {
		m.serverCPU = child.cpu(b) - srv0
		m.hwm = child.statusKB(b, "VmHWM")
	})
	if err != nil {
		b.Fatal(err)
	}
	m.elapsed = res.lastAt.Sub(start)
	m.records = int64(res.distinct)
	return m
}

// openIdleConns opens n connections to child, has each answer one
// ApiVersions request, and returns them with the growth of the broker's
// RSS meanwhile in KB. The connections then send nothing more; the caller
// closes them.
func openIdleConns(b *testing.B, child *childBroker, n int) ([]net.Conn, int64) {
	b.Helper()
	probe := appendFrame(nil, kmsg.NewPtrApiVersionsRequest())
	before := settledRSS(b, child)
	conns := make([]net.Conn, 0, n)
	for i := range n {
		c := dialRaw(b, child.addr)
		conns = append(conns, c.nc)
		body, err := c.roundTrip(probe)
		if err != nil || len(body) < 4 || body[3] != 1 { // correlation ID 1, big-endian
			for _, c := range conns {
				c.Close()
			}
			b.Fatalf("idle connection %d: no ApiVersions answer: %v", i, err)
		}
		c.nc.SetDeadline(time.Time{})
	}
	return conns, settledRSS(b, child) - before
}

// settledRSS samples the broker's VmRSS until two samples 100 ms apart
// agree, or 5 s passed, and returns the last: goroutines of connections
// just answered may still be growing stacks and buffers.
func settledRSS(b *testing.B, child *childBroker) int64 {
	b.Helper()
	deadline := time.Now().Add(5 * time.Second)
	last := child.statusKB(b, "VmRSS")
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond) // sampling interval, bounded by deadline
		cur := child.statusKB(b, "VmRSS")
		if cur == last {
			break
		}
		last = cur
	}
	return last
}

// raiseOpenFiles raises this process's soft limit on open files to at
// least want (children inherit it), or skips b when the hard limit does
// not allow that.
func raiseOpenFiles(b *testing.B, want uint64) {
	b.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Skipf("open-file limit unknown (%v); cannot hold idle connections", err)
	}
	if lim.Cur >= want {
		return
	}
	if lim.Max < want {
		b.Skipf("open-file hard limit %d is below the %d this sweep needs; lower SHAREBROKER_BENCH_SCALE_CONNS", lim.Max, want)
	}
	lim.Cur = want
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Skipf("raising the open-file limit to %d: %v", want, err)
	}
}
