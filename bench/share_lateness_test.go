package bench_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// latenessEnv opts in to BenchmarkShareLockLateness, which takes about
// 20 s of wall time per peer:
//
//	SHAREBROKER_BENCH_LATENESS=1 go test -run '^$' -bench ShareLockLateness ./bench/
const latenessEnv = "SHAREBROKER_BENCH_LATENESS"

const (
	latenessTopic = "lateness"
	latenessGroup = "bench-lateness"
	// latenessLock is the group's share.record.lock.duration.ms: Kafka's
	// minimum, to keep the run short.
	latenessLock = 15 * time.Second
	// latenessWaves holders each take latenessWaveRecords records; the
	// waves are acquired one after another, so their deadlines differ.
	latenessWaves       = 4
	latenessWaveRecords = 10
	// latenessWaveSpacing paces the waves (the workload's shape, not a
	// wait for an outcome) over one kfake sweep interval (5 s), so their
	// deadlines fall at four phases of kfake's sweep ticker rather than
	// one.
	latenessWaveSpacing = 5 * time.Second / latenessWaves
)

// BenchmarkShareLockLateness measures how late, after its acquisition lock
// deadline, a record that its holder never acknowledges is handed to
// another consumer, with the real clock and the peers' default settings
// except the lock duration.
//
// Per op, on a fresh broker and a one-partition topic (with more members
// than partitions every member is assigned the partition, so the
// collector below can fetch what the holders held):
//
//  1. Four waves, 1.25 s apart: produce 10 records, one batch each, then
//     a new holder (a kgo share consumer in strict mode, so it fetches
//     only when polled) polls once and holds what it got: it never acks
//     and never polls again (a later poll would accept them).
//  2. A collector (kgo defaults: non-strict, background fetches) polls
//     and accepts until every held record came back, its delivery count
//     raised. A record's lateness is the time its poll returned minus the
//     holder's Record.AcquisitionDeadline().
//
// AcquisitionDeadline is the holder's decode time plus the lock duration
// the broker reported, so it is later than the broker's own deadline by
// the fetch's response time (well under a millisecond on loopback);
// lateness is understated by that much and can come out slightly
// negative. It does include the collector's fetch: the broker waking the
// parked ShareFetch, the response, kgo's decode and poll.
//
// The lock duration: both peers get share.record.lock.duration.ms=15000 on
// the group. kfake accepts that config but reads the lock duration from
// its broker config group.share.record.lock.duration.ms only (30 s by
// default), so its cluster is started with that set to 15000 as well.
// kfake's share.record.lock.sweep.interval.ms stays at its 5 s default:
// it releases expired records when that ticker fires, so its lateness
// falls anywhere in [0, 5 s) depending on the phase of the ticker. The
// ticker starts with the group, just before the first wave is acquired,
// and 15 s is three intervals, so without pacing every wave would land
// just after a tick (lateness ~5 s, kfake's worst case); spreading the
// waves over one interval samples four phases.
//
// Records one holder acquired together share one deadline (sharebroker
// locks per acquired batch, and these are acquired in one fetch), so the
// 40 samples are four waves of correlated values; p99 over 40 samples is
// the maximum (nearest rank).
//
// Metrics: lateness-p50-ms, lateness-p99-ms, lateness-max-ms and samples
// (records measured), over all ops.
func BenchmarkShareLockLateness(b *testing.B) {
	if os.Getenv(latenessEnv) == "" {
		b.Skipf("takes ~25 s per peer; set %s=1 to run it", latenessEnv)
	}
	starts := map[string]func(testing.TB) (string, func()){
		"sharebroker": startSharebroker,
		"kfake":       startKfakeLateness,
	}
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) { benchLateness(b, starts[p.name]) })
	}
}

// startKfakeLateness starts kfake with the lock duration of
// BenchmarkShareLockLateness, which kfake reads from its broker config.
func startKfakeLateness(tb testing.TB) (string, func()) {
	tb.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{
		"group.share.record.lock.duration.ms": fmt.Sprint(latenessLock.Milliseconds()),
	}))
	if err != nil {
		tb.Fatalf("kfake.NewCluster: %v", err)
	}
	return c.ListenAddrs()[0], c.Close
}

func benchLateness(b *testing.B, start func(testing.TB) (string, func())) {
	var lateness []time.Duration
	for i := 0; i < b.N; i++ {
		addr, stop := start(b)
		lateness = append(lateness, latenessOnce(b, addr)...)
		stop()
	}
	slices.Sort(lateness)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(percentile(lateness, 0.50)), "lateness-p50-ms")
	b.ReportMetric(ms(percentile(lateness, 0.99)), "lateness-p99-ms")
	b.ReportMetric(ms(lateness[len(lateness)-1]), "lateness-max-ms")
	b.ReportMetric(float64(len(lateness)), "samples")
}

// percentile returns the nearest-rank q-th value of sorted.
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// latenessOnce runs the holders and the collector against addr and
// returns the lateness of every held record.
func latenessOnce(tb testing.TB, addr string) []time.Duration {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), latenessLock+time.Minute)
	defer cancel()
	admin := newClient(tb, addr, kgo.DefaultProduceTopic(latenessTopic))
	defer admin.Close()
	createTopic(tb, ctx, admin, latenessTopic, 1)
	setShareGroupConfig(tb, addr, latenessGroup,
		"share.auto.offset.reset", "earliest",
		"share.record.lock.duration.ms", fmt.Sprint(latenessLock.Milliseconds()))

	deadlines := make(map[int64]time.Time) // offset -> holder's lock deadline
	first := time.Now()
	for w := 0; w < latenessWaves; w++ {
		pace := time.NewTimer(time.Until(first.Add(time.Duration(w) * latenessWaveSpacing)))
		select {
		case <-pace.C:
		case <-ctx.Done():
			tb.Fatalf("wave %d: %v", w, ctx.Err())
		}
		for i := 0; i < latenessWaveRecords; i++ {
			if err := admin.ProduceSync(ctx, &kgo.Record{Value: benchValue}).FirstErr(); err != nil {
				tb.Fatalf("produce: %v", err)
			}
		}
		holder := newLatenessConsumer(tb, addr,
			kgo.ShareMaxRecordsStrict(), kgo.ShareMaxRecords(latenessWaveRecords),
			// The holder's fetch connection is idle while it holds; kgo
			// would close it after the default 20 s, releasing the records.
			kgo.ConnIdleTimeout(latenessLock+time.Minute))
		defer holder.Close()
		for got := false; !got; {
			fs := holder.PollFetches(ctx)
			if ctx.Err() != nil {
				tb.Fatalf("wave %d: holder got no records: %v", w, ctx.Err())
			}
			fs.EachRecord(func(r *kgo.Record) {
				deadlines[r.Offset] = r.AcquisitionDeadline()
				got = true
			})
		}
	}

	collector := newLatenessConsumer(tb, addr)
	defer collector.Close()
	var lateness []time.Duration
	for len(lateness) < len(deadlines) {
		fs := collector.PollFetches(ctx)
		now := time.Now()
		if ctx.Err() != nil {
			tb.Fatalf("%d of %d held records redelivered: %v", len(lateness), len(deadlines), ctx.Err())
		}
		for _, fe := range fs.Errors() {
			tb.Fatalf("collector fetch: %v", fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			r.Ack(kgo.AckAccept)
			if d, held := deadlines[r.Offset]; held && r.DeliveryCount() >= 2 {
				lateness = append(lateness, now.Sub(d))
			}
		})
	}
	if err := collector.FlushAcks(ctx); err != nil {
		tb.Fatalf("collector flush acks: %v", err)
	}
	return lateness
}

func newLatenessConsumer(tb testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	tb.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ConsumeTopics(latenessTopic),
		kgo.ShareGroup(latenessGroup),
	}, opts...)...)
	if err != nil {
		tb.Fatalf("kgo.NewClient: %v", err)
	}
	return cl
}

// createTopic creates topic with the given partitions; it may exist.
func createTopic(tb testing.TB, ctx context.Context, cl *kgo.Client, topic string, partitions int32) {
	tb.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, partitions, 1
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		tb.Fatalf("create topic %s: %v", topic, err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		tb.Fatalf("create topic %s: %v", topic, err)
	}
}
