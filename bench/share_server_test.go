package bench_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkShareServer runs the BenchmarkShareConsume workload (200k
// preloaded 100-byte records over four partitions, consumed and accepted by
// one kgo share consumer) against each peer in a process of its own, so
// the broker's CPU and memory can be told from the client's:
//
//   - sharebroker: cmd/sharebroker built with `go build` (CGO_ENABLED=0,
//     as the image is), serving on a free loopback port.
//   - kfake: this test binary re-executed with kfakeChildEnv set; TestMain
//     then runs kfake.NewCluster (the pinned version, one broker, the
//     bench topic seeded) on 127.0.0.1:0 and prints its address. kfake's
//     own main.go is not used: it binds fixed ports 9092-9094, starts
//     three brokers and turns on block and mutex profiling.
//
// Metrics, per record unless named otherwise:
//   - records/s: as in BenchmarkShareConsume, over loopback TCP between
//     processes.
//   - server-cpu-ns/record: the broker process's CPU time (the sum over
//     its threads of /proc/<pid>/task/*/schedstat, in ns) from creating
//     the consumer until its final FlushAcks returned.
//   - client-cpu-ns/record: this process's user+sys CPU (getrusage) over
//     the same span: the kgo consumer alone, the baseline that
//     BenchmarkShareConsume's in-process total includes.
//   - B/record: bytes the consumer read from its connections (counted by
//     a wrapping kgo.Dialer): what the broker sent, framing, group
//     heartbeats and metadata included.
//   - RSS-produced-KB, RSS-consumed-KB: the broker's VmRSS after the
//     preload and after the consumer accepted everything; HWM-KB: its
//     VmHWM (peak RSS) then; anon-consumed-KB: the anonymous part
//     (RssAnon: heap, stacks, records) of RSS-consumed, the rest being
//     the executable's pages. The largest over ops.
func BenchmarkShareServer(b *testing.B) {
	for _, p := range processPeers {
		b.Run(p.name, func(b *testing.B) { benchShareServer(b, p) })
	}
}

// A processPeer starts a broker in a child process.
type processPeer struct {
	name  string
	start func(tb testing.TB) *childBroker
	// console, when set, keeps one console's event stream open on the
	// share group from start to stop (BenchmarkShareServerConsole).
	console bool
}

var processPeers = []processPeer{
	{name: "sharebroker", start: startSharebrokerProcess},
	{name: "kfake", start: startKfakeProcess},
}

func benchShareServer(b *testing.B, p processPeer) {
	var (
		elapsed           time.Duration
		serverCPU, client time.Duration
		read, bytesRead   int64
		rssProduced       int64
		rssConsumed, hwm  int64
		anonConsumed      int64
		consoleSeen       consoleCounts
	)
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		child := p.start(b)
		var console *consoleStream
		if p.console {
			var err error
			if console, err = openConsole(child.httpAddr, shareGroup); err != nil {
				child.stop()
				b.Fatal(err)
			}
		}
		preload(b, child.addr, shareRecords)
		rssProduced = max(rssProduced, child.statusKB(b, "VmRSS"))
		setShareGroupConfig(b, child.addr, shareGroup, "share.auto.offset.reset", "earliest")
		ctx, cancel := context.WithTimeout(context.Background(), benchDeadline)

		b.StartTimer()
		srv0, cpu0 := child.cpu(b), processCPU()
		start := time.Now()
		res, err := consumeShare(ctx, child.addr, 1, shareRecords, func() {
			client += processCPU() - cpu0
			serverCPU += child.cpu(b) - srv0
			rssConsumed = max(rssConsumed, child.statusKB(b, "VmRSS"))
			anonConsumed = max(anonConsumed, child.statusKB(b, "RssAnon"))
			hwm = max(hwm, child.statusKB(b, "VmHWM"))
		})
		elapsed += res.lastAt.Sub(start)
		b.StopTimer()

		if console != nil {
			seen, cerr := console.close()
			consoleSeen.add(seen)
			if err == nil && cerr != nil {
				err = cerr
			}
		}
		cancel()
		child.stop()
		if err != nil {
			b.Fatal(err)
		}
		read += int64(res.distinct)
		bytesRead += res.bytesRead
	}
	n := float64(max(read, 1))
	b.ReportMetric(float64(read)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(serverCPU.Nanoseconds())/n, "server-cpu-ns/record")
	b.ReportMetric(float64(client.Nanoseconds())/n, "client-cpu-ns/record")
	b.ReportMetric(float64(bytesRead)/n, "B/record")
	b.ReportMetric(float64(rssProduced), "RSS-produced-KB")
	b.ReportMetric(float64(rssConsumed), "RSS-consumed-KB")
	b.ReportMetric(float64(hwm), "HWM-KB")
	b.ReportMetric(float64(anonConsumed), "anon-consumed-KB")
	if p.console {
		consoleSeen.report(b)
	}
}

// childBroker is a broker process this benchmark started.
type childBroker struct {
	addr     string
	httpAddr string // the HTTP listener's, when started with one
	cmd      *exec.Cmd
	exited   chan struct{} // closed once cmd.Wait returned
}

// stop kills the process and reaps it.
func (c *childBroker) stop() {
	c.cmd.Process.Kill()
	<-c.exited
}

// cpu returns the CPU time the process's threads have used so far: the
// sum of the first field (ns on the CPU) of /proc/<pid>/task/*/schedstat.
// /proc/<pid>/stat would count exited threads too, but in 10 ms ticks, and
// the broker's share of one op is a few such ticks; Go runtime threads do
// not exit.
func (c *childBroker) cpu(tb testing.TB) time.Duration {
	tb.Helper()
	dir := fmt.Sprintf("/proc/%d/task", c.cmd.Process.Pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatalf("broker CPU: %v", err)
	}
	var total int64
	for _, t := range tasks {
		raw, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if errors.Is(err, fs.ErrNotExist) {
			continue // the thread exited since ReadDir
		}
		if err != nil {
			tb.Fatalf("broker CPU: %v", err)
		}
		f := strings.Fields(string(raw))
		if len(f) == 0 {
			tb.Fatalf("broker CPU: empty %s/%s/schedstat", dir, t.Name())
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			tb.Fatalf("broker CPU: %v", err)
		}
		total += ns
	}
	return time.Duration(total)
}

// statusKB returns a kB field of /proc/<pid>/status, such as VmRSS.
func (c *childBroker) statusKB(tb testing.TB, field string) int64 {
	tb.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		tb.Fatalf("broker %s: %v", field, err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				tb.Fatalf("broker %s: %v", field, err)
			}
			return n
		}
	}
	tb.Fatalf("broker %s: not in /proc/%d/status", field, c.cmd.Process.Pid)
	return 0
}

// startSharebrokerProcess execs the built binary on a free loopback port
// and waits for an ApiVersions answer, retrying on a fresh port when the
// process exits first (someone took the port).
func startSharebrokerProcess(tb testing.TB) *childBroker {
	tb.Helper()
	return startSharebrokerProcessArgs(tb)
}

// startSharebrokerProcessArgs is startSharebrokerProcess with extra
// arguments to serve.
func startSharebrokerProcessArgs(tb testing.TB, extra ...string) *childBroker {
	tb.Helper()
	return startSharebrokerProcessHTTP(tb, false, extra...)
}

// startSharebrokerProcessHTTP is startSharebrokerProcessArgs that, with
// withHTTP, also serves the HTTP listener on a free loopback port (in
// childBroker.httpAddr) and waits for its /healthz too. A port someone
// took meanwhile makes the child exit, and a fresh pair is tried.
func startSharebrokerProcessHTTP(tb testing.TB, withHTTP bool, extra ...string) *childBroker {
	tb.Helper()
	bin, err := buildBroker()
	if err != nil {
		tb.Fatal(err)
	}
	probe := appendFrame(nil, kmsg.NewPtrApiVersionsRequest())
	for attempt := 0; attempt < 5; attempt++ {
		addr, err := freeLoopbackAddr()
		if err != nil {
			tb.Fatal(err)
		}
		args := append([]string{"serve", "--listen", addr, "--log-level", "error",
			"--config", fmt.Sprintf("num.partitions=%d", benchPartitions)}, extra...)
		httpAddr := ""
		if withHTTP {
			if httpAddr, err = freeLoopbackAddr(); err != nil {
				tb.Fatal(err)
			}
			args = append(args, "--http", httpAddr)
		} else {
			// No HTTP listener: its default port is one for the whole
			// machine, and a child that finds it taken exits.
			args = append(args, "--http", "")
		}
		cmd := exec.Command(bin, args...)
		cmd.Stderr = os.Stderr
		child := startChild(tb, cmd)
		child.addr, child.httpAddr = addr, httpAddr
		deadline := time.Now().Add(startDeadline)
		for {
			// The HTTP listener binds after the Kafka one (broker.Start).
			if answered(addr, probe, deadline) && (httpAddr == "" || healthy(httpAddr)) {
				return child
			}
			select {
			case <-child.exited:
			default:
				if time.Now().After(deadline) {
					child.stop()
					tb.Fatalf("sharebroker: no ApiVersions answer on %s within %v", addr, startDeadline)
				}
				time.Sleep(time.Millisecond) // polling a condition, bounded by deadline
				continue
			}
			break
		}
	}
	tb.Fatal("sharebroker exited before answering, five times")
	return nil
}

// kfakeChildEnv, when set, makes this test binary run a kfake cluster
// instead of its tests (see TestMain).
const kfakeChildEnv = "SHAREBROKER_BENCH_KFAKE_CHILD"

// kfakeChildConfigsEnv, when set in a kfake child's environment, holds
// broker configs for it as KEY=VALUE,KEY=VALUE.
const kfakeChildConfigsEnv = "SHAREBROKER_BENCH_KFAKE_CONFIGS"

// startKfakeProcess re-executes this test binary as a kfake broker and
// reads the address it prints.
func startKfakeProcess(tb testing.TB) *childBroker {
	tb.Helper()
	return startKfakeProcessConfigs(tb, nil)
}

// startKfakeProcessConfigs is startKfakeProcess with broker configs
// (kfake.BrokerConfigs) set in the child.
func startKfakeProcessConfigs(tb testing.TB, configs map[string]string) *childBroker {
	tb.Helper()
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), kfakeChildEnv+"=1")
	var kv []string
	for k, v := range configs {
		kv = append(kv, k+"="+v)
	}
	cmd.Env = append(cmd.Env, kfakeChildConfigsEnv+"="+strings.Join(kv, ","))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	child := startChild(tb, cmd)
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		s.Scan()
		line <- s.Text()
		io.Copy(io.Discard, stdout)
	}()
	select {
	case addr := <-line:
		if addr == "" {
			child.stop()
			tb.Fatal("kfake child exited without printing its address")
		}
		child.addr = addr
		return child
	case <-time.After(startDeadline):
		child.stop()
		tb.Fatalf("kfake child printed no address within %v", startDeadline)
		return nil
	}
}

// startChild starts cmd with a pipe on its stdin, which the child may
// watch to exit with us.
func startChild(tb testing.TB, cmd *exec.Cmd) *childBroker {
	tb.Helper()
	if _, err := cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("exec %s: %v", cmd.Path, err)
	}
	c := &childBroker{cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(c.exited)
	}()
	return c
}

// runKfakeChild serves a one-broker kfake cluster with the bench topic and
// the broker configs of kfakeChildConfigsEnv on 127.0.0.1:0, prints its
// address and returns when stdin closes (the parent closed it or died).
func runKfakeChild() int {
	configs := map[string]string{}
	if kv := os.Getenv(kfakeChildConfigsEnv); kv != "" {
		for _, f := range strings.Split(kv, ",") {
			k, v, _ := strings.Cut(f, "=")
			configs[k] = v
		}
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(benchPartitions, benchTopic), kfake.BrokerConfigs(configs))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake.NewCluster:", err)
		return 1
	}
	defer c.Close()
	fmt.Println(c.ListenAddrs()[0])
	io.Copy(io.Discard, os.Stdin)
	return 0
}
