package broker_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/locktimer"
)

// txnCreateTopics creates topics with partitions each.
func txnCreateTopics(ctx context.Context, t *testing.T, addr string, partitions int32, topics ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resps, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, 1, nil, topics...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resps {
		if r.Err != nil {
			t.Fatalf("create %s: %v", r.Topic, r.Err)
		}
	}
}

// committedReader consumes a topic from the start under read_committed in
// the background and counts each value it sees.
type committedReader struct {
	cl      *kgo.Client
	mu      sync.Mutex
	seen    map[string]int
	changed chan struct{} // signalled (non-blocking) after each poll with records
}

func newCommittedReader(t *testing.T, addr, topic string) *committedReader {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	r := &committedReader{cl: cl, seen: map[string]int{}, changed: make(chan struct{}, 1)}
	done := make(chan struct{})
	t.Cleanup(func() { cl.Close(); <-done })
	go func() {
		defer close(done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			r.mu.Lock()
			fs.EachRecord(func(rec *kgo.Record) { r.seen[string(rec.Value)]++ })
			r.mu.Unlock()
			select {
			case r.changed <- struct{}{}:
			default:
			}
		}
	}()
	return r
}

// waitFor waits, bounded by ctx, until cond holds over the counts.
func (r *committedReader) waitFor(ctx context.Context, t *testing.T, what string, cond func(map[string]int) bool) {
	t.Helper()
	for {
		r.mu.Lock()
		ok := cond(r.seen)
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
	}
}

func (r *committedReader) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.seen)
}

// TestKgoGroupTransactSessionCopiesExactlyOnce (end-txn, txn-offset-commit,
// read-committed-fetch, require-stable): two kgo GroupTransactSession
// members of a classic group copy topic A to topic B; one leaves mid-way.
// A read_committed reader of B sees every input record exactly once. At
// transaction.version 2 kgo runs KIP-890's transactions (end-txn-bump,
// produce-implicit-add, txn-offset-commit-implicit), at 1 the older ones.
func TestKgoGroupTransactSessionCopiesExactlyOnce(t *testing.T) {
	for _, level := range []string{"2", "1"} {
		t.Run("transaction.version="+level, func(t *testing.T) {
			testGroupTransactSessionCopy(t, broker.Config{Props: map[string]string{"transaction.version": level}}, nil)
		})
	}
}

// TestKgoGroupTransactSession848CopiesExactlyOnce (txn-offset-commit-848,
// end-txn, require-stable): the same with a KIP-848 consumer group, the
// members' transactional commits carrying their member epochs.
func TestKgoGroupTransactSession848CopiesExactlyOnce(t *testing.T) {
	// A short heartbeat interval, so the member that stays takes over the
	// leaver's partitions within milliseconds.
	props := map[string]string{
		"group.consumer.heartbeat.interval.ms":     "100",
		"group.consumer.min.heartbeat.interval.ms": "10",
	}
	testGroupTransactSessionCopy(t, broker.Config{Props: props}, nil, kgo.ServerSideBalancer())
}

// addsCounter counts, through a kgo hook, the AddPartitionsToTxn and
// AddOffsetsToTxn requests a client wrote: KIP-890's transactions send
// none.
type addsCounter struct{ adds atomic.Int64 }

func (c *addsCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if (key == int16(kmsg.AddPartitionsToTxn) || key == int16(kmsg.AddOffsetsToTxn)) && err == nil {
		c.adds.Add(1)
	}
}

// testGroupTransactSessionCopy runs two GroupTransactSession members ("a"
// and "b", transactional IDs eos-a and eos-b, group eos-group) copying 400
// records from eos-in to eos-out on a broker started with cfg, then checks
// that eos-out holds each once under read_committed. midCopy, unless nil,
// runs once when the reader has seen half the records committed.
func testGroupTransactSessionCopy(t *testing.T, cfg broker.Config, midCopy func(b *broker.Broker), groupOpts ...kgo.Opt) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	props := cfg.Props
	b, addr := startBroker(t, cfg)
	var adds addsCounter
	defer func() {
		tv2 := props["transaction.version"] != "1" && props["transaction.version"] != "0"
		if n := adds.adds.Load(); tv2 && n != 0 || !tv2 && n == 0 {
			t.Errorf("members sent %d AddPartitionsToTxn/AddOffsetsToTxn requests; want none exactly when transaction.version is 2", n)
		}
	}()
	const n = 400
	txnCreateTopics(ctx, t, addr, 4, "eos-in", "eos-out")

	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("eos-in"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		r := kgo.StringRecord("v" + strconv.Itoa(i))
		r.Key = []byte(strconv.Itoa(i))
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce input: %v", err)
		}
	}
	prod.Close()

	// run copies until stop is closed or, with leaveAfter > 0, until it
	// has committed that many records; then it closes its session, leaving
	// the group. Only polling watches stop, so no transaction is left open.
	stop := make(chan struct{})
	run := func(name string, leaveAfter int) error {
		sess, err := kgo.NewGroupTransactSession(append([]kgo.Opt{
			kgo.SeedBrokers(addr),
			kgo.TransactionalID("eos-" + name),
			kgo.ConsumerGroup("eos-group"),
			kgo.ConsumeTopics("eos-in"),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.FetchMaxBytes(4096),
			kgo.FetchMaxPartitionBytes(1024),
			kgo.WithHooks(&adds),
		}, groupOpts...)...)
		if err != nil {
			return err
		}
		defer sess.Close()
		mine := 0
		for {
			pollCtx, cancelPoll := context.WithCancel(ctx)
			go func() {
				select {
				case <-stop:
				case <-pollCtx.Done():
				}
				cancelPoll()
			}()
			fs := sess.PollFetches(pollCtx)
			stopped := pollCtx.Err() != nil
			cancelPoll()
			if stopped {
				return nil
			}
			var fetchErr error
			fs.EachError(func(_ string, _ int32, err error) {
				// A coordinator move between a member's JoinGroup and
				// SyncGroup answers the SyncGroup ILLEGAL_GENERATION, as
				// Kafka's new coordinator does for a generation it never
				// stored; kgo reports it here as ErrGroupSession, aborts
				// the session's transaction and rejoins on its own, so a
				// member keeps polling, as an application would.
				var lost *kgo.ErrGroupSession
				if errors.As(err, &lost) {
					t.Logf("%s poll: %v (kgo rejoins)", name, err)
					return
				}
				fetchErr = err
			})
			if fetchErr != nil {
				return fmt.Errorf("%s poll: %w", name, fetchErr)
			}
			if err := sess.Begin(); err != nil {
				return fmt.Errorf("%s begin: %w", name, err)
			}
			var recs []*kgo.Record
			fs.EachRecord(func(r *kgo.Record) {
				recs = append(recs, &kgo.Record{Topic: "eos-out", Key: r.Key, Value: r.Value})
			})
			if err := sess.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Logf("%s produce: %v (the session aborts)", name, err)
			}
			committed, err := sess.End(ctx, kgo.TryCommit)
			if err != nil {
				return fmt.Errorf("%s end: %w", name, err)
			}
			if committed {
				mine += len(recs)
				if leaveAfter > 0 && mine >= leaveAfter {
					t.Logf("%s leaves after copying %d records", name, mine)
					return nil
				}
			}
		}
	}

	reader := newCommittedReader(t, addr, "eos-out")
	errs := make(chan error, 2)
	go func() { errs <- run("a", 0) }()
	go func() { errs <- run("b", 40) }()
	if midCopy != nil {
		reader.waitFor(ctx, t, "half the records in eos-out", func(seen map[string]int) bool { return len(seen) >= n/2 })
		midCopy(b)
	}
	reader.waitFor(ctx, t, "every input record in eos-out", func(seen map[string]int) bool { return len(seen) >= n })
	close(stop)
	for range 2 {
		select {
		case err := <-errs:
			if err != nil {
				t.Error(err)
			}
		case <-ctx.Done():
			t.Fatalf("members did not stop: %v", ctx.Err())
		}
	}

	// A sentinel after everything the members wrote: once the reader has
	// seen it in every partition, it has read all committed data.
	end, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer end.Close()
	for p := range int32(4) {
		r := &kgo.Record{Topic: "eos-out", Partition: p, Value: []byte("end-" + strconv.Itoa(int(p)))}
		if err := end.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce sentinel: %v", err)
		}
	}
	reader.waitFor(ctx, t, "the sentinels", func(seen map[string]int) bool {
		return seen["end-0"] > 0 && seen["end-1"] > 0 && seen["end-2"] > 0 && seen["end-3"] > 0
	})
	seen := reader.counts()
	for i := range n {
		if c := seen["v"+strconv.Itoa(i)]; c != 1 {
			t.Errorf("record v%d seen %d times under read_committed, want 1", i, c)
		}
	}
	if len(seen) != n+4 {
		t.Errorf("read %d distinct values, want %d and 4 sentinels", len(seen), n)
	}
}

// TestKgoTxnTimeoutFencesProducer (txn-timeout, fenced,
// read-committed-fetch): a kgo transaction left open past its timeout is
// aborted by the broker when the manual clock moves; its records stay
// invisible to a read_committed kgo consumer, and the producer's EndTxn is
// fenced.
func TestKgoTxnTimeoutFencesProducer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clock := locktimer.NewManualClock(time.Now())
	_, addr := startBroker(t, broker.Config{Clock: clock})
	txnCreateTopics(ctx, t, addr, 1, "kto")

	p, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("kto"),
		kgo.TransactionalID("kto-producer"), kgo.TransactionTimeout(15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := p.ProduceSync(ctx, kgo.StringRecord("aborted-"+strconv.Itoa(i))).FirstErr(); err != nil {
			t.Fatalf("transactional produce: %v", err)
		}
	}
	clock.Advance(20 * time.Second)
	err = p.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("EndTransaction after the timeout: %v, want fenced", err)
	}

	plain, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("kto"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	reader := newCommittedReader(t, addr, "kto")
	reader.waitFor(ctx, t, "the record after the aborted transaction", func(seen map[string]int) bool { return seen["after"] > 0 })
	if seen := reader.counts(); len(seen) != 1 {
		t.Fatalf("read_committed saw %v, want only the record after the aborted transaction", seen)
	}
}
