package bench_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// shareRecords are preloaded and then consumed through a share group,
	// per op.
	shareRecords = 200_000
	// shareGroup is the group every share benchmark consumes through; each
	// op starts a fresh broker, so the name never carries state over.
	shareGroup = "bench-share"
)

// BenchmarkShareConsume times kgo share consumers (1 and 2 members of one
// group) reading and accepting 200k preloaded 100-byte records over four
// partitions. Peers run in this process, as in BenchmarkFetch.
//
// records/s runs from creating the consumers (so it includes joining the
// group and being assigned the partitions) to the poll that brings the
// last record, which the consumer then accepts. Every earlier record's
// accept has reached the broker by then: kgo sends a poll's acks on the
// next ShareFetch, which it needs to get the later records. The final
// FlushAcks is left out of the time (not out of the CPU): with nothing
// left to fetch, the ShareFetch carrying the last acks long-polls for
// kgo's 500 ms ack cap on both peers, as Kafka holds it, and so would
// add a fixed half second of idle to a ~0.1 s run. Closing (leaving the
// group) is not timed either. Preloading and the group config are not
// timed; one op is the whole workload on a fresh broker.
//
// Both peers run with the broker's group.share.partition.max.record.locks
// at 10000 instead of 2000 (shareLockProps). With two consumers sharing a
// partition, kgo's pattern stalls a run now and then for its 500 ms
// MaxWait on a full in-flight window, as it would against Kafka
// (share-groups.md §2.11): at 2000, one run in seven to two in five of
// BenchmarkShareConsumeNodes took over half a second instead of about 0.1,
// which timed the client's idle wait, not the broker. The group's highest
// setting, 4000, paused about as often; 10000 did not. kfake honours the
// broker setting too.
//
// The consumers use kgo's defaults for share groups: non-strict mode
// (fetches run in the background, a response may hold whole batches past
// ShareMaxRecords) and ShareMaxRecords 500. That is what an application
// gets without tuning, and the mode that lets the broker's speed show:
// strict mode allows one ShareFetch per poll, so the poll loop, not the
// broker, would set the pace.
//
// Metrics:
//   - records/s: distinct records accepted per second.
//   - cpu-ns/record: user+sys CPU of the whole process (broker and client,
//     getrusage RUSAGE_SELF) from creating the consumers until their final
//     FlushAcks returned, per record. See
//     BenchmarkShareServer for the broker's part alone.
//   - redelivered/op: records delivered more than once (expected 0).
func BenchmarkShareConsume(b *testing.B) {
	for _, consumers := range []int{1, 2} {
		for _, p := range sharePeers {
			name := fmt.Sprintf("consumers=%d/%s", consumers, p.name)
			b.Run(name, func(b *testing.B) { benchShareConsume(b, p, consumers) })
		}
	}
}

// BenchmarkShareConsumeNodes is BenchmarkShareConsume with two consumers
// against three nodes: sharebroker's --nodes 3 in this process, and kfake
// with three brokers. The four partitions' leaders are spread over the
// nodes on both, so each consumer keeps a share session per node and
// fetches from every leader.
func BenchmarkShareConsumeNodes(b *testing.B) {
	for _, p := range []peer{
		{name: "sharebroker", start: func(tb testing.TB) (string, func()) { return startSharebrokerNodes(tb, 3, shareLockProps) }},
		{name: "kfake", start: func(tb testing.TB) (string, func()) { return startKfakeBrokers(tb, 3, kfakeShareLocks) }},
	} {
		b.Run("nodes=3/"+p.name, func(b *testing.B) { benchShareConsume(b, p, 2) })
	}
}

// BenchmarkShareConsumeDefaults is BenchmarkShareConsume with two
// consumers at both brokers' default in-flight limit (2000 record locks):
// what an application gets without tuning, the two-consumer stall
// (share-groups.md §2.11) included. Its records/s swing between runs that
// stall and runs that do not, so read it over several rounds.
func BenchmarkShareConsumeDefaults(b *testing.B) {
	for _, p := range []peer{
		{name: "sharebroker", start: func(tb testing.TB) (string, func()) { return startSharebrokerNodes(tb, 1, nil) }},
		{name: "kfake", start: func(tb testing.TB) (string, func()) { return startKfakeBrokers(tb, 1) }},
	} {
		b.Run("consumers=2/"+p.name, func(b *testing.B) { benchShareConsume(b, p, 2) })
	}
}

// shareLockProps gives sharebroker the in-flight limit of the share consume
// benchmarks (see BenchmarkShareConsume); the group maximum must allow it.
var shareLockProps = map[string]string{
	"group.share.partition.max.record.locks":     "10000",
	"group.share.max.partition.max.record.locks": "10000",
}

// kfakeShareLocks is the same limit for kfake, which has no group maximum.
var kfakeShareLocks = kfake.BrokerConfigs(map[string]string{"group.share.partition.max.record.locks": "10000"})

// sharePeers are peers with that limit, for BenchmarkShareConsume.
var sharePeers = []peer{
	{name: "sharebroker", start: func(tb testing.TB) (string, func()) { return startSharebrokerNodes(tb, 1, shareLockProps) }},
	{name: "kfake", start: func(tb testing.TB) (string, func()) { return startKfakeBrokers(tb, 1, kfakeShareLocks) }},
}

func benchShareConsume(b *testing.B, p peer, consumers int) {
	var (
		elapsed time.Duration
		cpu     time.Duration
		read    int64
		dups    int64
	)
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		addr, stop := p.start(b)
		preload(b, addr, shareRecords)
		setShareGroupConfig(b, addr, shareGroup, "share.auto.offset.reset", "earliest")
		ctx, cancel := context.WithTimeout(context.Background(), benchDeadline)

		b.StartTimer()
		cpu0 := processCPU()
		start := time.Now()
		res, err := consumeShare(ctx, addr, consumers, shareRecords, func() {
			cpu += processCPU() - cpu0
		})
		elapsed += res.lastAt.Sub(start)
		b.StopTimer()

		cancel()
		stop()
		if err != nil {
			b.Fatal(err)
		}
		read += int64(res.distinct)
		dups += int64(res.redelivered)
	}
	b.ReportMetric(float64(read)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(max(read, 1)), "cpu-ns/record")
	b.ReportMetric(float64(dups)/float64(b.N), "redelivered/op")
}

// shareResult is what consumeShare saw.
type shareResult struct {
	distinct    int       // distinct records accepted
	redelivered int       // deliveries of records already seen
	bytesRead   int64     // bytes the consumers read from the broker
	lastAt      time.Time // when the last new record was polled
}

// consumeShare creates n share consumers of shareGroup on benchTopic and
// has each poll and accept until, together, they accepted want distinct
// records (offsets 0..want/4-1 of each partition, as preload writes them).
// Each then flushes its acks; flushed, if not nil, runs once all have, and
// then the consumers close. The consumers' connections count the bytes
// they read, up to the close.
func consumeShare(ctx context.Context, addr string, n, want int, flushed func()) (shareResult, error) {
	return consumeShareTopic(ctx, addr, shareTopic{}, n, want, flushed)
}

// consumeShareTopic is consumeShare from t, as preloadTopic wrote it.
func consumeShareTopic(ctx context.Context, addr string, t shareTopic, n, want int, flushed func()) (shareResult, error) {
	var (
		counted  countingDialer
		seen     = newSeenSet(t.parts(), want)
		distinct atomic.Int64
		redeliv  atomic.Int64
		lastAt   time.Time // written once, before finish; read after wg.Wait
		errs     errBox
		wg       sync.WaitGroup
	)
	// done ends every consumer's poll once the last record is in.
	done, finish := context.WithCancel(ctx)
	defer finish()
	clients := make([]*kgo.Client, n)
	for i := range clients {
		cl, err := kgo.NewClient(append([]kgo.Opt{
			kgo.SeedBrokers(addr),
			kgo.ConsumeTopics(t.topic()),
			kgo.ShareGroup(shareGroup),
			kgo.Dialer(counted.dial),
		}, t.consumer...)...)
		if err != nil {
			return shareResult{}, fmt.Errorf("kgo.NewClient: %w", err)
		}
		clients[i] = cl
	}
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Err() == nil {
				fs := cl.PollFetches(done)
				for _, fe := range fs.Errors() {
					if !errors.Is(fe.Err, context.Canceled) && !errors.Is(fe.Err, context.DeadlineExceeded) {
						errs.set(fmt.Errorf("share fetch %s/%d: %w", fe.Topic, fe.Partition, fe.Err))
						finish()
					}
				}
				fs.EachRecord(func(r *kgo.Record) {
					r.Ack(kgo.AckAccept)
					if !seen.add(r.Partition, r.Offset) {
						redeliv.Add(1)
					} else if distinct.Add(1) == int64(want) {
						lastAt = time.Now()
						finish()
					}
				})
			}
			if err := cl.FlushAcks(ctx); err != nil {
				errs.set(fmt.Errorf("flush acks: %w", err))
			}
		}()
	}
	wg.Wait()
	if flushed != nil {
		flushed()
	}
	for _, cl := range clients {
		cl.Close()
	}
	res := shareResult{
		distinct:    int(distinct.Load()),
		redelivered: int(redeliv.Load()),
		bytesRead:   counted.read.Load(),
		lastAt:      lastAt,
	}
	if err := errs.get(); err != nil {
		return res, err
	}
	if res.distinct < want {
		return res, fmt.Errorf("accepted %d of %d records: %w", res.distinct, want, ctx.Err())
	}
	return res, nil
}

// seenSet records which (partition, offset) pairs were delivered; it
// holds offsets below want/partitions+1 per partition, which is all
// preload writes.
type seenSet struct {
	parts [][]atomic.Bool
}

func newSeenSet(partitions, want int) *seenSet {
	s := &seenSet{parts: make([][]atomic.Bool, partitions)}
	for p := range s.parts {
		s.parts[p] = make([]atomic.Bool, want/partitions+1)
	}
	return s
}

// add reports whether (partition, offset) is new. Offsets out of range
// count as new: they are not ours to judge.
func (s *seenSet) add(partition int32, offset int64) bool {
	if partition < 0 || int(partition) >= len(s.parts) || offset < 0 || offset >= int64(len(s.parts[partition])) {
		return true
	}
	return s.parts[partition][offset].CompareAndSwap(false, true)
}

// countingDialer dials plain TCP and counts the bytes read from every
// connection it made: the bytes the broker sent to this client.
type countingDialer struct {
	read atomic.Int64
}

func (d *countingDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, read: &d.read}, nil
}

type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// setShareGroupConfig sets one GROUP (resource type 32) config through
// IncrementalAlterConfigs; both peers accept the share.* group configs.
func setShareGroupConfig(tb testing.TB, addr, group string, kv ...string) {
	tb.Helper()
	setConfigs(tb, addr, kmsg.ConfigResourceTypeGroupConfig, group, kv...)
}

// setConfigs sets configs (name, value pairs) of one resource through
// IncrementalAlterConfigs, failing tb on any error.
func setConfigs(tb testing.TB, addr string, typ kmsg.ConfigResourceType, name string, kv ...string) {
	tb.Helper()
	cl := newClient(tb, addr)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = kv[i], kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(kv[i+1])
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		tb.Fatalf("set configs %v on %v %s: %v", kv, typ, name, err)
	}
	if code := resp.Resources[0].ErrorCode; code != 0 {
		tb.Fatalf("set configs %v on %v %s: error code %d", kv, typ, name, code)
	}
}

// processCPU returns this process's user+sys CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
