package sharebrokertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/sharebrokertest"
)

// The stuck share partition of issue 24 §3: three nodes, two kgo share
// consumers, 20,000 records on 6 partitions; while the members consume,
// partitions 0 and 3 move from node 0 to node 1, the group's coordinator
// moves from node 2 to node 0, and node 1 stops for 2 s. Every record must
// reach a member.
//
// Rule unseen-round-trip (docs/cluster.md §5.2): partitions 0 and 3 go
// 0 → 1 → 0 within milliseconds, so a member often sends no request while
// node 1 leads and its share session on node 0 never hears of the trip. Its
// next acknowledgement of the partition may then name both records it
// acquired again after the trip and records acquired before it, which the
// trip freed; the broker refuses the partition's acknowledgements whole, as
// Kafka's SharePartition.acknowledge does, and the records the member does
// hold stay ACQUIRED until their lock expires. While they are the lowest
// unfinished offsets the window stays full, so the partition delivers
// nothing else until then. So a run must drain within one acquisition lock
// (plus stuckMargin) of the end of production; it fails, printing what
// each side was waiting on (stuckRun.dump), if it does not. A run still
// draining stuckProbe after production ended is checked against the rule
// while it waits: every record held in a partition not yet drained must be
// one whose acknowledgement by its holder the broker refused, else the
// run fails. A run counts as stalled when a lock expired in it. The lock
// is short (stuckLock, or SHAREBROKER_STUCK_LOCK) so a stalled run costs
// seconds, not Kafka's default 30 s.
//
// go test runs it once (the short form, in make test). To loop it:
//
//	SHAREBROKER_STUCK_LOOP=50 go test -race -count=1 -run TestShareStuckAfterNodeStop -timeout 60m ./sharebrokertest/
//
// With SHAREBROKER_STUCK_LOGDIR=dir, a run that stalled also prints its
// dump and writes the members' full kgo debug logs into dir.

const (
	stuckTopic   = "orders" // javaHash places partitions 0 and 3 on node 0 (cluster.md replica-order)
	stuckGroup   = "movers" // coordinator slot led by node 2 (coordinator-node)
	stuckRecords = 20_000
	// stuckLock is the group's share.record.lock.duration.ms: what an
	// unseen round trip may cost (Kafka's default is 30 s). It must last
	// past stuckProbe (production ends about 4 s after the disturbance),
	// so a stall is still on when the probe looks.
	stuckLock = 10 * time.Second
	// stuckProbe is how long after production ends a healthy run has
	// drained (well under a second: the moves free acquired records at
	// once); a run still draining then is checked against the rule.
	stuckProbe = 2 * time.Second
	// stuckQuiet is how long a partition not yet drained must have
	// delivered nothing to count as stalled (kgo's pause on a full window,
	// share-groups.md §2.11, lasts one MaxWait, 500 ms).
	stuckQuiet = 1500 * time.Millisecond
	// stuckMargin is the time beyond one lock a run may take to drain.
	stuckMargin = 10 * time.Second
)

func TestShareStuckAfterNodeStop(t *testing.T) {
	runs := 1
	if v := os.Getenv("SHAREBROKER_STUCK_LOOP"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SHAREBROKER_STUCK_LOOP=%q: want a positive number of runs", v)
		}
		runs = n
	}
	lock := stuckLock
	if v := os.Getenv("SHAREBROKER_STUCK_LOCK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			t.Fatalf("SHAREBROKER_STUCK_LOCK=%q: want a duration of at least 1s", v)
		}
		lock = d
	}
	var failed, stalled []int
	for i := range runs {
		start := time.Now()
		var didStall bool
		ok := t.Run(fmt.Sprintf("run%d", i), func(t *testing.T) { didStall = runStuckScenario(t, lock) })
		t.Logf("run %d: ok=%v stalled=%v in %v", i, ok, didStall, time.Since(start).Round(time.Millisecond))
		if !ok {
			failed = append(failed, i)
		}
		if didStall {
			stalled = append(stalled, i)
		}
	}
	if runs > 1 {
		t.Logf("%d of %d runs failed %v; %d stalled until an acquisition lock expired (unseen-round-trip) %v",
			len(failed), runs, failed, len(stalled), stalled)
	}
}

// stuckRun is one run's clients and what they have seen.
type stuckRun struct {
	t        *testing.T
	b        *sharebrokertest.Broker
	tap      *wireTap
	logs     []*syncBuffer // per consumer, kgo's debug log
	mu       sync.Mutex
	produced [6]int64          // records produced per partition (offsets 0..n-1)
	seen     [6]map[int64]bool // distinct offsets delivered per partition
	lastSeen [6]time.Time      // when a partition last delivered a new record
	disturb  time.Duration     // since the tap started: when the disturbance began
	stalled  []int32           // the partitions explainStall found stalled
}

// runStuckScenario runs the scenario once and reports whether it stalled
// until a lock expired.
func runStuckScenario(t *testing.T, lock time.Duration) (stalled bool) {
	b := sharebrokertest.Start(t,
		sharebrokertest.WithProperty("group.share.min.record.lock.duration.ms", "1000"),
		sharebrokertest.WithGroupConfig(stuckGroup, "share.record.lock.duration.ms", strconv.FormatInt(lock.Milliseconds(), 10)),
		sharebrokertest.WithNodes(3),
		sharebrokertest.WithRealClock(),
		sharebrokertest.WithHTTP(),
		sharebrokertest.WithTopic(stuckTopic, 6),
		sharebrokertest.WithGroupConfig(stuckGroup, "share.auto.offset.reset", "earliest"),
		sharebrokertest.WithoutFailureReport(), // stuckRun.dump prints it at the moment of the stall
	)
	// The real clock: kgo parks its fetches and expects the broker to
	// answer at MaxWait, and the scenario is the race between the
	// members' requests and the moves. The waits below are bounded by
	// deadlines, and what ends a stall is the group's short lock.
	r := &stuckRun{t: t, b: b, tap: newWireTap(b.NodeAddrs)}
	for p := range r.seen {
		r.seen[p] = map[int64]bool{}
	}
	cl := b.Broker().Cluster()
	for _, p := range cl.Partitions {
		if (p.Partition == 0 || p.Partition == 3) && p.Leader != 0 {
			t.Fatalf("partition %d led by node %d; the scenario needs node 0", p.Partition, p.Leader)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(b.NodeAddrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	r.produce(ctx, producer, 0, stuckRecords/2)

	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range 2 {
		buf := &syncBuffer{}
		r.logs = append(r.logs, buf)
		name := fmt.Sprintf("c%d", i)
		start := r.tap.start
		c, err := kgo.NewClient(
			kgo.SeedBrokers(b.NodeAddrs...),
			kgo.ConsumeTopics(stuckTopic),
			kgo.ShareGroup(stuckGroup),
			kgo.Dialer(r.tap.dialer(name)),
			kgo.WithLogger(kgo.BasicLogger(buf, kgo.LogLevelDebug, func() string {
				return fmt.Sprintf("%8.3fs %s ", time.Since(start).Seconds(), name)
			})),
		)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.consume(runCtx, c)
		}()
	}
	defer func() { stop(); wg.Wait() }()

	// Disturb once the members are well into the first half.
	r.waitSeen(ctx, 3000)
	if c := coordinatorOf(b, stuckGroup); c != 2 {
		t.Fatalf("group %s coordinated by node %d; the scenario needs node 2", stuckGroup, c)
	}
	r.mu.Lock()
	r.disturb = time.Since(r.tap.start)
	r.mu.Unlock()
	for _, p := range []int32{0, 3} {
		r.tap.note(fmt.Sprintf("moving partition %d to node 1", p))
		if err := b.MoveLeader(stuckTopic, p, 1); err != nil {
			t.Fatal(err)
		}
	}
	r.tap.note("moving the coordinator to node 0")
	if err := b.MoveGroupCoordinator(stuckGroup, 0); err != nil {
		t.Fatal(err)
	}
	r.tap.note("stopping node 1")
	if err := b.StopNode(1); err != nil {
		t.Fatal(err)
	}
	r.tap.note("node 1 stopped")
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		r.produce(ctx, producer, stuckRecords/2, stuckRecords/2)
	}()
	// The scenario's outage: node 1 stays down for 2 s of real time while
	// the members work on the other nodes.
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
	}
	r.tap.note("starting node 1")
	if err := b.StartNode(1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-produced:
	case <-ctx.Done():
		t.Fatal("producing the second half did not finish")
	}

	producedAt := time.Now()
	if !r.waitDrained(ctx, producedAt.Add(stuckProbe)) {
		// Still draining: while the stall (if it is one) lasts, every
		// record held where records are missing must be explained.
		why, explained := r.explainStall()
		if !explained {
			t.Error(r.dump("a stall unseen-round-trip does not explain: " + why))
			return false
		}
		if !r.waitDrained(ctx, producedAt.Add(lock+stuckMargin)) {
			t.Error(r.dump(fmt.Sprintf("not drained %v after production ended (acquisition lock %v); at %v: %s", lock+stuckMargin, lock, stuckProbe, why)))
			return false
		}
		t.Logf("draining at %v: %s", stuckProbe, why)
	}
	expired := lockExpirations(t, b.HTTPAddr)
	if expired == 0 {
		return false
	}
	t.Logf("stalled until the locks of %v records expired, drained %v after production ended (unseen-round-trip)", expired, time.Since(producedAt).Round(time.Millisecond))
	if os.Getenv("SHAREBROKER_STUCK_LOGDIR") != "" {
		t.Log(r.dump("a stalled run, for the record"))
	}
	return true
}

// lockExpirations is sharebroker_share_lock_expirations_total.
func lockExpirations(t *testing.T, httpAddr string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	const name = "sharebroker_share_lock_expirations_total"
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return 0
}

// waitDrained waits until every record produced was delivered or deadline
// passes, and reports which.
func (r *stuckRun) waitDrained(ctx context.Context, deadline time.Time) bool {
	for !r.drained() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, bounded by the deadline
	}
	return true
}

// explainStall looks at the partitions that are stalled: not drained, and
// no new record delivered for stuckQuiet. Every ACQUIRED range there must
// be held by a member whose acknowledgement naming it the broker refused
// (unseen-round-trip). It says what it found, and whether each held range
// is so explained.
func (r *stuckRun) explainStall() (string, bool) {
	g, _ := r.b.ShareGroup(stuckGroup)
	var sb strings.Builder
	explained, stalled := true, false
	for _, p := range g.Partitions {
		if !r.partitionStalled(p.Partition) {
			continue
		}
		stalled = true
		r.stalled = append(r.stalled, p.Partition)
		for _, rg := range p.Ranges {
			if rg.State != "ACQUIRED" {
				continue
			}
			ref, ok := r.tap.refusedCovering(rg.Owner, p.Partition, rg.FirstOffset, rg.LastOffset)
			if !ok {
				explained = false
				fmt.Fprintf(&sb, "partition %d: %d-%d held by %s, no refused acknowledgement names it; ", p.Partition, rg.FirstOffset, rg.LastOffset, rg.Owner)
				continue
			}
			fmt.Fprintf(&sb, "partition %d: %d-%d held by %s, whose acknowledgement %v sent at %.3fs was refused with code %d by node %d; ",
				p.Partition, rg.FirstOffset, rg.LastOffset, rg.Owner, ref.acks, ref.sentAt.Seconds(), ref.code, ref.node)
		}
	}
	if !stalled {
		return "every partition still draining is still delivering", true
	}
	return sb.String(), explained
}

// partitionStalled reports whether p has records not yet delivered and
// delivered nothing new for stuckQuiet.
func (r *stuckRun) partitionStalled(p int32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int64(len(r.seen[p])) < r.produced[p] && time.Since(r.lastSeen[p]) > stuckQuiet
}

// produce writes n records, record i to partition i%6, and waits for them.
func (r *stuckRun) produce(ctx context.Context, cl *kgo.Client, from, n int) {
	var wg sync.WaitGroup
	for i := from; i < from+n; i++ {
		wg.Add(1)
		rec := &kgo.Record{Topic: stuckTopic, Partition: int32(i % 6), Value: fmt.Appendf(nil, "v%d", i)}
		cl.Produce(ctx, rec, func(rec *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				r.t.Errorf("produce: %v", err)
				return
			}
			r.mu.Lock()
			r.produced[rec.Partition]++
			r.mu.Unlock()
		})
	}
	wg.Wait()
}

// consume polls and accepts every record until ctx ends; kgo sends the
// acknowledgements with its next fetch.
func (r *stuckRun) consume(ctx context.Context, cl *kgo.Client) {
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		now := time.Now()
		r.mu.Lock()
		fs.EachRecord(func(rec *kgo.Record) {
			if !r.seen[rec.Partition][rec.Offset] {
				r.seen[rec.Partition][rec.Offset] = true
				r.lastSeen[rec.Partition] = now
			}
			rec.Ack(kgo.AckAccept)
		})
		r.mu.Unlock()
	}
}

func (r *stuckRun) waitSeen(ctx context.Context, n int) {
	for ctx.Err() == nil {
		r.mu.Lock()
		total := 0
		for _, s := range r.seen {
			total += len(s)
		}
		r.mu.Unlock()
		if total >= n {
			return
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, bounded by ctx
	}
	r.t.Fatalf("the members never consumed %d records", n)
}

func (r *stuckRun) drained() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p := range r.seen {
		if int64(len(r.seen[p])) < r.produced[p] {
			return false
		}
	}
	return true
}

// dump is what a stuck run prints: per partition what was produced and
// delivered, the cluster, the share group as the /v1 API shows it (members,
// each share partition's window, record stories), the story of the first
// undelivered record, the share requests each member sent for that
// partition and their answers, and kgo's debug log.
func (r *stuckRun) dump(headline string) string {
	var sb strings.Builder
	r.mu.Lock()
	disturb := r.disturb
	var stuck []int32
	fmt.Fprintf(&sb, "%s; the tap's times count from %s\n", headline, r.tap.start.UTC().Format(time.RFC3339Nano))
	for p := range r.seen {
		missing := int64(-1)
		for o := range r.produced[p] {
			if !r.seen[p][o] {
				missing = o
				break
			}
		}
		fmt.Fprintf(&sb, "partition %d: produced %d, delivered %d distinct, last new delivery %v ago", p, r.produced[p], len(r.seen[p]), time.Since(r.lastSeen[p]).Round(time.Millisecond))
		if missing >= 0 {
			stuck = append(stuck, int32(p))
			fmt.Fprintf(&sb, ", first undelivered offset %d", missing)
		}
		sb.WriteString("\n")
	}
	r.mu.Unlock()
	if len(stuck) == 0 {
		stuck = r.stalled // drained since: show the partitions that stalled
	}

	cl, _ := json.Marshal(r.b.Broker().Cluster())
	fmt.Fprintf(&sb, "cluster: %s\n", cl)
	sb.WriteString(r.b.Report())
	g, _ := r.b.ShareGroup(stuckGroup)
	for _, p := range g.Partitions {
		if containsPart(stuck, p.Partition) {
			js, _ := json.Marshal(p)
			fmt.Fprintf(&sb, "share partition %d (/v1 JSON): %s\n", p.Partition, js)
			if st, err := r.b.RecordStory(stuckGroup, stuckTopic, p.Partition, p.SPSO); err == nil {
				js, _ := json.Marshal(st)
				fmt.Fprintf(&sb, "story of offset %d (SPSO): %s\n", p.SPSO, js)
			}
		}
	}
	for _, p := range stuck {
		fmt.Fprintf(&sb, "share requests for partition %d (and session-level ones) since the disturbance at %.3fs:\n", p, disturb.Seconds())
		r.tap.dump(&sb, disturb-300*time.Millisecond, p, 300, 40)
	}
	dir := os.Getenv("SHAREBROKER_STUCK_LOGDIR")
	for i, l := range r.logs {
		if dir != "" {
			path := filepath.Join(dir, fmt.Sprintf("%s-c%d.log", strings.ReplaceAll(r.t.Name(), "/", "-"), i))
			if err := os.WriteFile(path, l.bytes(), 0o644); err != nil {
				fmt.Fprintf(&sb, "writing %s: %v\n", path, err)
			} else {
				fmt.Fprintf(&sb, "kgo debug log of c%d: %s\n", i, path)
			}
		}
		fmt.Fprintf(&sb, "kgo debug log of c%d, last lines:\n%s", i, lastLines(l.bytes(), 150))
	}
	return sb.String()
}

func lastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n"))) + "\n"
}

func coordinatorOf(b *sharebrokertest.Broker, group string) int32 {
	for _, c := range b.Broker().Cluster().Coordinators {
		if c.Key == group {
			return c.Node
		}
	}
	return -1
}

// syncBuffer is a log destination several goroutines write to.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.buf.Bytes()...)
}
