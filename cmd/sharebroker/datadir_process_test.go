package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/internal/batchtest"
	"github.com/sharebroker/sharebroker/internal/rawconn"
)

// These tests run sharebroker as a process on a data directory, kill it
// with SIGKILL in the middle of work, and start it again on the same
// directory (docs/durability.md).

// brokerProc is a sharebroker process and what it logged.
type brokerProc struct {
	cmd  *exec.Cmd
	addr string // the Kafka listener
	// ready is how long the process took from exec to its Kafka listener,
	// which binds after recovery (ready-after-recovery).
	ready time.Duration

	mu  sync.Mutex
	log bytes.Buffer
}

var kafkaListening = regexp.MustCompile(`msg=listening .*listener=PLAINTEXT addr=(127\.0\.0\.1:\d+)`)

// startDataDir starts sharebroker on dir and waits for its Kafka listener.
func startDataDir(t *testing.T, dir string, extra ...string) *brokerProc {
	t.Helper()
	return startBrokerProc(t, nil, append([]string{"serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--data-dir", dir}, extra...)...)
}

// startBrokerProc starts sharebroker with args and the variables env, and
// waits for its Kafka listener.
func startBrokerProc(t *testing.T, env []string, args ...string) *brokerProc {
	t.Helper()
	p := &brokerProc{cmd: exec.Command(os.Args[0], args...)}
	p.cmd.Env = append(append(os.Environ(), runMainEnv+"=1"), env...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := kafkaListening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case p.addr = <-found:
		p.ready = time.Since(began)
	case <-time.After(30 * time.Second):
		t.Fatalf("sharebroker did not listen within 30 s; its log:\n%s", p.logged())
	}
	return p
}

func (p *brokerProc) logged() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// kill sends SIGKILL and waits for the process to go.
func (p *brokerProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

// rawLog fetches a whole partition's batches as the broker sends them.
func rawLog(t *testing.T, addr, topic string) ([]byte, int64) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID = -1
	req.MaxBytes = 256 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 256 << 20
	rp.CurrentLeaderEpoch = -1
	rp.LogStartOffset = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := rawconn.Dial(t, addr).Request(req).(*kmsg.FetchResponse)
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		t.Fatalf("fetch %s: error code %d", topic, sp.ErrorCode)
	}
	return sp.RecordBatches, sp.HighWatermark
}

// consumeAll reads offsets [0, hw) of partition 0 with kgo and returns
// each record's value by offset.
func consumeAll(t *testing.T, addr, topic string, hw int64) map[int64]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(map[int64]string)
	for int64(len(got)) < hw {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", len(got), hw)
		}
		fs.EachRecord(func(r *kgo.Record) { got[r.Offset] = string(r.Value) })
	}
	return got
}

// ack-after-write, same-bytes: every record acknowledged before a SIGKILL
// is there after a restart, at its offset, and the log the broker served
// before the kill comes back byte for byte.
func TestDataDirSurvivesSIGKILL(t *testing.T) {
	dir := t.TempDir()
	p := startDataDir(t, dir)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.DefaultProduceTopic("events"),
		kgo.AllowAutoTopicCreation(), kgo.RecordRetries(0), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := make(map[int64]string)
	enough := make(chan struct{})
	ctx, stop := context.WithCancel(context.Background())
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; ctx.Err() == nil; i++ {
			value := fmt.Sprintf("value-%07d", i)
			cl.Produce(ctx, &kgo.Record{Value: []byte(value)}, func(r *kgo.Record, err error) {
				if err != nil {
					return
				}
				mu.Lock()
				acked[r.Offset] = value
				if len(acked) == 2000 {
					close(enough)
				}
				mu.Unlock()
			})
		}
	}()
	select {
	case <-enough:
	case <-time.After(30 * time.Second):
		t.Fatal("2000 records not acknowledged within 30 s")
	}
	before, _ := rawLog(t, p.addr, "events")
	p.kill(t) // producing goes on until the kill
	stop()
	<-produced
	cl.Close() // fails what was in flight: those were never acknowledged
	mu.Lock()
	defer mu.Unlock()

	p2 := startDataDir(t, dir)
	after, hw := rawLog(t, p2.addr, "events")
	if !bytes.HasPrefix(after, before) {
		t.Fatalf("the log served before the kill (%d bytes) is not a prefix of the log after it (%d bytes)", len(before), len(after))
	}
	if hw < int64(len(acked)) {
		t.Fatalf("high watermark %d after restart, but %d records were acknowledged", hw, len(acked))
	}
	got := consumeAll(t, p2.addr, "events", hw)
	for off, v := range acked {
		if got[off] != v {
			t.Fatalf("offset %d: %q after restart, %q was acknowledged", off, got[off], v)
		}
	}
	t.Logf("%d records acknowledged before SIGKILL, %d after restart; ready in %v", len(acked), hw, p2.ready)
}

// torn-tail: bytes of a batch cut short at the end of a segment are cut
// off at start, with one log line naming the file and the bytes.
func TestDataDirTornTail(t *testing.T) {
	dir := t.TempDir()
	p := startDataDir(t, dir)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.DefaultProduceTopic("torn"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	before, _ := rawLog(t, p.addr, "torn")
	p.kill(t)
	segs, _ := filepath.Glob(filepath.Join(dir, "logs", "*", "0", "*.log"))
	if len(segs) != 1 {
		t.Fatalf("segments %v, want one", segs)
	}
	f, err := os.OpenFile(segs[0], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The start of the next batch (offset 3) whose write(2) was cut
	// short: a torn write is a prefix of the batch that comes next.
	torn := append([]byte(nil), before[:30]...)
	binary.BigEndian.PutUint64(torn, 3)
	f.Write(torn)
	f.Close()

	p2 := startDataDir(t, dir)
	after, hw := rawLog(t, p2.addr, "torn")
	if !bytes.Equal(after, before) || hw != 3 {
		t.Fatalf("after recovery: %d bytes, high watermark %d; want the %d bytes before and 3", len(after), hw, len(before))
	}
	var lines []string
	for line := range strings.Lines(p2.logged()) {
		if strings.Contains(line, "torn tail cut off") {
			lines = append(lines, line)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "file="+segs[0]) || !strings.Contains(lines[0], "bytes_dropped=30") {
		t.Fatalf("log lines about the torn tail: %q; want one naming %s and 30 bytes", lines, segs[0])
	}
}

// lock-dir, format-version: a directory held by a running broker, or
// written by a newer format, fails the start with a message naming it.
func TestDataDirRefused(t *testing.T) {
	held := t.TempDir()
	startDataDir(t, held)
	newer := t.TempDir()
	if err := os.WriteFile(filepath.Join(newer, "format"), []byte("sharebroker-data 99\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{held: "locked by another running broker", newer: "format version 99"} {
		cmd := exec.Command(os.Args[0], "serve", "--listen", "127.0.0.1:0", "--http", "", "--data-dir", dir)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
			t.Fatalf("start on %s: %v, want exit status 1", dir, err)
		}
		if !strings.Contains(stderr.String(), dir) || !strings.Contains(stderr.String(), want) {
			t.Fatalf("start on %s: stderr %q, want it to name the directory and %q", dir, stderr.String(), want)
		}
	}
}

// one-data-dir: SHAREBROKER_DATA_DIR and the property log.dirs name the
// data directory as --data-dir does.
func TestDataDirFromEnvAndProperty(t *testing.T) {
	for name, how := range map[string]func(dir string) (env, args []string){
		"SHAREBROKER_DATA_DIR": func(dir string) ([]string, []string) { return []string{"SHAREBROKER_DATA_DIR=" + dir}, nil },
		"log.dirs":             func(dir string) ([]string, []string) { return nil, []string{"--config", "log.dirs=" + dir} },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			env, args := how(dir)
			p := startBrokerProc(t, env, append([]string{"serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"}, args...)...)
			if !strings.Contains(p.logged(), "data directory recovered") {
				t.Fatalf("no recovery logged:\n%s", p.logged())
			}
			if _, err := os.Stat(filepath.Join(dir, "format")); err != nil {
				t.Fatalf("%s is not the data directory: %v", dir, err)
			}
		})
	}
}

// ack-after-write with a non-Go client: what kcat (librdkafka) produced
// with acks=all before a SIGKILL, kcat reads back after the restart.
func TestDataDirKcatSIGKILL(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (apt-get install kcat); CI installs it")
	}
	dir := t.TempDir()
	p := startDataDir(t, dir)
	var in strings.Builder
	for i := range 200 {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produce := exec.CommandContext(ctx, kcat, "-b", p.addr, "-X", "acks=all", "-P", "-t", "kc", "-K:")
	produce.Stdin = strings.NewReader(in.String())
	if out, err := produce.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
	p.kill(t)

	p2 := startDataDir(t, dir)
	out, err := exec.CommandContext(ctx, kcat, "-b", p2.addr, "-C", "-t", "kc", "-o", "beginning", "-e", "-f", `%o|%k|%s\n`).Output()
	if err != nil {
		t.Fatalf("kcat -C: %v", err)
	}
	var want strings.Builder
	for i := range 200 {
		fmt.Fprintf(&want, "%d|k%d|v%d\n", i, i, i)
	}
	if string(out) != want.String() {
		t.Fatalf("kcat read back after the restart:\n%s\nwant offsets 0-199 with k0:v0 to k199:v199", out)
	}
}

// group-offsets-kept: a kgo group consumer's commit survives a SIGKILL; a
// consumer of the same group after the restart starts at that commit.
func TestDataDirCommittedOffsetsSurviveSIGKILL(t *testing.T) {
	dir := t.TempDir()
	p := startDataDir(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.DefaultProduceTopic("orders"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "o%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()
	consumer := func(addr string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"),
			kgo.DisableAutoCommit(), kgo.FetchMaxWait(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	cl := consumer(p.addr)
	var seen int
	for seen < 6 {
		fs := cl.PollRecords(ctx, 6-seen)
		if ctx.Err() != nil {
			t.Fatal("records not consumed before the deadline")
		}
		seen += fs.NumRecords()
		if err := cl.CommitRecords(ctx, fs.Records()...); err != nil {
			t.Fatal(err)
		}
	}
	p.kill(t)
	cl.Close()

	p2 := startDataDir(t, dir)
	cl2 := consumer(p2.addr)
	defer cl2.Close()
	var first *kgo.Record
	for first == nil {
		fs := cl2.PollRecords(ctx, 1)
		if ctx.Err() != nil {
			t.Fatal("nothing consumed after the restart before the deadline")
		}
		if recs := fs.Records(); len(recs) > 0 {
			first = recs[0]
		}
	}
	if first.Offset != int64(seen) {
		t.Fatalf("after the restart the group resumed at offset %d, want %d (the commit before SIGKILL)", first.Offset, seen)
	}
}

// A crash soak, issue 14's: soakKills times, produce, consume-and-commit and
// share-consume-and-accept until a random number of records are
// acknowledged, SIGKILL the broker, start it again on the same directory.
// After every restart every record acknowledged so far is at its offset,
// the group's committed offset is not below the last commit the broker
// acknowledged, and no record whose acceptance the broker confirmed is
// delivered to the share group again (share-state-as-kafka). At the end
// the share group drains the topic: every acknowledged record was
// delivered to it.
// soakKills is how many times the crash soak kills the broker (issue 14
// asks for 20).
const soakKills = 20

func TestDataDirCrashSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("crash soak: not in -short")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(14, uint64(time.Now().UnixNano())))
	acked := make(map[int64]string)
	committed := int64(-1) // the highest commit the broker acknowledged; mu guards it in a round
	var closing sync.WaitGroup
	share := newShareSoak()
	next := 0
	compacted := false
	for round := range soakKills {
		// The metadata log is compacted in the background as often as it
		// can be (each time it has doubled), so kills land in the middle
		// of compactions too (meta-compaction).
		p := startDataDir(t, dir, "--log-level", "debug",
			"--config", "share.coordinator.snapshot.update.records.per.snapshot=0")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if round > 0 {
			checkSoak(t, ctx, p.addr, acked, committed)
		} else {
			setShareGroupConfig(t, rawconn.Dial(t, p.addr), soakShareGroup, "share.auto.offset.reset", "earliest")
		}
		target := 50 + rng.IntN(400)
		prod, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.DefaultProduceTopic("soak"), kgo.AllowAutoTopicCreation(), kgo.RecordRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		// promised counts produce promises not yet run: kgo may run the
		// last ones after Close returns, and the next round reads acked.
		var promised sync.WaitGroup
		roundAcked := 0
		enough := make(chan struct{})
		pctx, stopProducing := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ; pctx.Err() == nil; next++ {
				value := fmt.Sprintf("soak-%07d", next)
				promised.Add(1)
				prod.Produce(pctx, &kgo.Record{Value: []byte(value)}, func(r *kgo.Record, err error) {
					defer promised.Done()
					if err != nil {
						return
					}
					mu.Lock()
					defer mu.Unlock()
					acked[r.Offset] = value
					if roundAcked++; roundAcked == target {
						close(enough)
					}
				})
			}
		}()
		cons, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.ConsumerGroup("soak-group"), kgo.ConsumeTopics("soak"),
			kgo.DisableAutoCommit(), kgo.FetchMaxWait(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		consumed := make(chan struct{})
		go func() {
			defer close(consumed)
			for pctx.Err() == nil {
				recs := cons.PollRecords(pctx, 100).Records()
				if len(recs) == 0 {
					continue
				}
				if err := cons.CommitRecords(pctx, recs...); err == nil {
					mu.Lock()
					committed = max(committed, recs[len(recs)-1].Offset+1)
					mu.Unlock()
				}
			}
		}()
		shareCl, shared := share.consume(t, pctx, p.addr)
		select {
		case <-enough:
		case <-ctx.Done():
			t.Fatalf("round %d: %d records not acknowledged in time", round, target)
		}
		p.kill(t) // mid-work: producing, committing and accepting go on until it
		compacted = compacted || strings.Contains(p.logged(), "msg=\"metadata log compacted\"")
		stopProducing()
		<-done
		<-consumed
		<-shared
		prod.Close()
		allPromised := make(chan struct{})
		go func() { promised.Wait(); close(allPromised) }()
		select {
		case <-allPromised:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: produce promises still outstanding 10 s after the producer closed", round)
		}
		// A group member's close retries LeaveGroup against the killed
		// broker for a second or two; let it, beside the next rounds.
		closing.Add(2)
		go func() { defer closing.Done(); cons.Close() }()
		go func() { defer closing.Done(); shareCl.Close() }()
		cancel()
		share.check(t)
	}
	closing.Wait()
	if !compacted {
		t.Error("no round compacted the metadata log in the background")
	}
	p := startDataDir(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	checkSoak(t, ctx, p.addr, acked, committed)
	share.drain(t, ctx, p.addr, acked)
	t.Logf("%d records acknowledged over %d kills; the group committed up to %d; the share group accepted %d with confirmation",
		len(acked), soakKills, committed, share.confirmed())
}

// checkSoak checks a restarted broker against what it acknowledged.
func checkSoak(t *testing.T, ctx context.Context, addr string, acked map[int64]string, committed int64) {
	t.Helper()
	_, hw := rawLog(t, addr, "soak")
	got := consumeAll(t, addr, "soak", hw)
	for off, v := range acked {
		if got[off] != v {
			t.Fatalf("offset %d: %q after restart, %q was acknowledged", off, got[off], v)
		}
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(7)
	req.Group = "soak-group"
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "soak", []int32{0}
	req.Topics = append(req.Topics, rt)
	resp := rawconn.Dial(t, addr).Request(req).(*kmsg.OffsetFetchResponse)
	if off := resp.Topics[0].Partitions[0].Offset; off < committed {
		t.Fatalf("committed offset %d after restart, but a commit of %d was acknowledged", off, committed)
	}
}

// producer-state-from-log, producer-ids-reserved: a batch an idempotent
// producer retries after a SIGKILL and restart is recognised as the
// duplicate it is, and no new producer gets the old producer's ID.
func TestDataDirIdempotentRetryAfterSIGKILL(t *testing.T) {
	dir := t.TempDir()
	p := startDataDir(t, dir)
	c := rawconn.Dial(t, p.addr)
	meta := &kmsg.MetadataRequest{Version: 12, AllowAutoTopicCreation: true, Topics: []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("idem")}}}
	c.Request(meta)
	initPID := func(c *rawconn.Conn) int64 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.SetVersion(4)
		req.ProducerID, req.ProducerEpoch = -1, -1
		return c.Request(req).(*kmsg.InitProducerIDResponse).ProducerID
	}
	produce := func(c *rawconn.Conn, batch []byte) (int16, int64) {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks, req.TimeoutMillis = -1, 5000
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: "idem", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batch}}}}
		rp := c.Request(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		return rp.ErrorCode, rp.BaseOffset
	}
	pid := initPID(c)
	first := batchtest.Idempotent(pid, 0, 0, 3).Build()
	if code, off := produce(c, first); code != 0 || off != 0 {
		t.Fatalf("first produce: code %d offset %d", code, off)
	}
	p.kill(t)

	p2 := startDataDir(t, dir)
	c2 := rawconn.Dial(t, p2.addr)
	if code, off := produce(c2, first); code != 0 || off != 0 {
		t.Fatalf("retry after SIGKILL: code %d offset %d, want the duplicate's offset 0", code, off)
	}
	if code, off := produce(c2, batchtest.Idempotent(pid, 0, 3, 1).Build()); code != 0 || off != 3 {
		t.Fatalf("next batch after SIGKILL: code %d offset %d, want 3", code, off)
	}
	if pid2 := initPID(c2); pid2 <= pid {
		t.Fatalf("producer ID %d after restart, %d was handed out before", pid2, pid)
	}
	if _, hw := rawLog(t, p2.addr, "idem"); hw != 4 {
		t.Fatalf("high watermark %d, want 4: the retry must not be stored twice", hw)
	}
}
