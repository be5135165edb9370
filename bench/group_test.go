package bench_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	// groupRecords are preloaded and then read by one classic group
	// member, per op.
	groupRecords = 100_000
	// txnRecords are preloaded and then copied transactionally, per op.
	txnRecords = 50_000
	// txnPollRecords caps each poll, and so each transaction, of
	// BenchmarkTxnCopy: 50 transactions per op. Uncapped, a poll brings
	// whole fetches and an op is two transactions.
	txnPollRecords = 1000
	// copyTopic is where BenchmarkTxnCopy writes.
	copyTopic = "bench-copy"
)

// groupPeers are the peers with classic group joins made immediate:
// sharebroker's group.initial.rebalance.delay.ms is 0 by default (Kafka's
// is 3 s), and kfake has no such delay (nor a setting for it). The
// property is set anyway so the benchmark keeps measuring joins without
// a delay if the default ever changes.
var groupPeers = []peer{
	{name: "sharebroker", start: func(tb testing.TB) (string, func()) {
		tb.Helper()
		return startSharebrokerProps(tb, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	}},
	{name: "kfake", start: startKfake},
}

// commitCounter counts, through a kgo hook, the OffsetCommit and
// TxnOffsetCommit requests the client wrote.
type commitCounter struct {
	commits atomic.Int64
}

var _ kgo.HookBrokerWrite = (*commitCounter)(nil)

func (c *commitCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if (key == 8 || key == 28) && err == nil {
		c.commits.Add(1)
	}
}

// BenchmarkGroupConsume times one kgo consumer in a classic consumer group
// (default range/cooperative-sticky balancing, default auto-commit) reading
// 100k preloaded records from the four partitions. The clock runs from
// creating the client, so it includes FindCoordinator, JoinGroup,
// SyncGroup, OffsetFetch, ListOffsets and every Fetch, up to the poll that
// brings the last record. One op is the whole workload on a fresh broker;
// preloading is not timed.
//
// commits/op counts the OffsetCommit requests the member sent over its
// whole life, including the commit on Close (untimed); the default
// auto-commit interval is 5 s, so ops shorter than that commit only on
// Close.
func BenchmarkGroupConsume(b *testing.B) {
	for _, p := range groupPeers {
		b.Run(p.name, func(b *testing.B) { benchGroupConsume(b, p) })
	}
}

func benchGroupConsume(b *testing.B, p peer) {
	var (
		elapsed time.Duration
		read    int64
		commits int64
	)
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		addr, stop := p.start(b)
		preload(b, addr, groupRecords)
		ctx, cancel := context.WithTimeout(context.Background(), benchDeadline)
		var counter commitCounter

		b.StartTimer()
		start := time.Now()
		cl := newClient(b, addr,
			kgo.ConsumerGroup(fmt.Sprintf("bench-group-%d", i)),
			kgo.ConsumeTopics(benchTopic),
			kgo.WithHooks(&counter),
		)
		n, _, err := consume(ctx, cl, groupRecords)
		elapsed += time.Since(start)
		b.StopTimer()

		read += int64(n)
		cl.Close()
		commits += counter.commits.Load()
		cancel()
		stop()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(read)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(commits)/float64(b.N), "commits/op")
}

// BenchmarkTxnCopy times one kgo GroupTransactSession (a classic group
// member on the preloaded topic and a transactional producer) copying 50k
// records to a second topic of four partitions, one transaction per poll
// of at most 1000 records: Begin, Produce each polled record,
// End(TryCommit), which flushes and commits the consumed offsets in the
// transaction. The clock runs from
// creating the session until the transactions committed hold all records.
// Preloading, creating the output topic and the check afterwards (a
// read_committed consumer reads all records from the output topic) are
// not timed.
//
// txns/op counts committed transactions; commits/op counts
// TxnOffsetCommit (and any OffsetCommit) requests.
func BenchmarkTxnCopy(b *testing.B) {
	for _, p := range groupPeers {
		b.Run(p.name, func(b *testing.B) { benchTxnCopy(b, p) })
	}
}

func benchTxnCopy(b *testing.B, p peer) {
	var (
		elapsed time.Duration
		copied  int64
		txns    int64
		commits int64
	)
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		addr, stop := p.start(b)
		preload(b, addr, txnRecords)
		ctx, cancel := context.WithTimeout(context.Background(), benchDeadline)
		admin := newClient(b, addr)
		createTopic(b, ctx, admin, copyTopic, benchPartitions)
		admin.Close()
		var counter commitCounter

		b.StartTimer()
		start := time.Now()
		sess, err := kgo.NewGroupTransactSession(
			kgo.SeedBrokers(addr),
			kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.TransactionalID(fmt.Sprintf("bench-txn-%d", i)),
			kgo.ConsumerGroup(fmt.Sprintf("bench-txn-group-%d", i)),
			kgo.ConsumeTopics(benchTopic),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.WithHooks(&counter),
		)
		if err != nil {
			b.Fatalf("kgo.NewGroupTransactSession: %v", err)
		}
		n, nt, err := txnCopy(ctx, sess, txnRecords)
		elapsed += time.Since(start)
		b.StopTimer()

		copied += int64(n)
		txns += int64(nt)
		sess.Close()
		commits += counter.commits.Load()
		if err == nil {
			err = checkCommitted(ctx, addr, txnRecords)
		}
		cancel()
		stop()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(copied)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(txns)/float64(b.N), "txns/op")
	b.ReportMetric(float64(commits)/float64(b.N), "commits/op")
}

// txnCopy copies polled records to copyTopic, one transaction per poll,
// until committed transactions hold want records. Each record keeps its
// partition.
func txnCopy(ctx context.Context, sess *kgo.GroupTransactSession, want int) (copied, txns int, err error) {
	for copied < want {
		fs := sess.PollRecords(ctx, txnPollRecords)
		if err := ctx.Err(); err != nil {
			return copied, txns, fmt.Errorf("copied %d of %d records: %w", copied, want, err)
		}
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) {
				return copied, txns, fmt.Errorf("fetch %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return copied, txns, fmt.Errorf("begin: %w", err)
		}
		var errs errBox
		promise := func(_ *kgo.Record, err error) { errs.set(err) }
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Topic: copyTopic, Partition: r.Partition, Value: r.Value}, promise)
			n++
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			return copied, txns, fmt.Errorf("end: %w", err)
		}
		if err := errs.get(); err != nil && committed {
			return copied, txns, fmt.Errorf("produce in a committed transaction: %w", err)
		}
		if committed {
			copied += n
			txns++
		}
	}
	return copied, txns, nil
}

// checkCommitted reads copyTopic from the start under read_committed and
// fails unless it holds exactly want records.
func checkCommitted(ctx context.Context, addr string, want int) error {
	assign := fromStart()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{copyTopic: assign}),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	n, _, err := consume(ctx, cl, want)
	if err != nil {
		return fmt.Errorf("read_committed check: %w", err)
	}
	if n != want {
		return fmt.Errorf("read_committed check: %d records, want %d", n, want)
	}
	return nil
}
