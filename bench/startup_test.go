package bench_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// startDeadline bounds one start: exec to first answered ApiVersions.
const startDeadline = 10 * time.Second

// BenchmarkStartup builds cmd/sharebroker and bench/kfakebroker (kfake as
// a one-broker program; both CGO_ENABLED=0, as the image is built) and,
// per op, execs one on a free loopback port and polls that port until an
// ApiVersions request is answered.
//
// Metrics:
//   - ms/start: from exec to the first ApiVersions response, mean over ops.
//   - idle-RSS-KB: VmRSS from /proc/<pid>/status right after that answer,
//     the largest over ops (omitted where /proc is missing).
//
// ns/op also counts killing and reaping the process.
func BenchmarkStartup(b *testing.B) {
	for _, p := range []struct {
		name string
		pkg  string
		args func(addr string) []string
	}{
		{"sharebroker", "github.com/sharebroker/sharebroker/cmd/sharebroker", func(addr string) []string {
			return []string{"serve", "--listen", addr, "--http", "127.0.0.1:0", "--log-level", "error"}
		}},
		{"kfake", "github.com/sharebroker/sharebroker/bench/kfakebroker", func(addr string) []string {
			return []string{"-listen", addr}
		}},
	} {
		b.Run(p.name, func(b *testing.B) {
			b.StopTimer()
			bin, err := buildProgram(p.pkg)
			if err != nil {
				b.Fatal(err)
			}
			benchStartup(b, bin, p.args)
		})
	}
}

func benchStartup(b *testing.B, bin string, args func(addr string) []string) {
	probe := appendFrame(nil, kmsg.NewPtrApiVersionsRequest())

	var total time.Duration
	var maxRSS int64 = -1
	b.StartTimer()
	for i := 0; i < b.N; i++ {
		d, rss, err := startOnce(bin, args, probe)
		if err != nil {
			b.Fatal(err)
		}
		total += d
		maxRSS = max(maxRSS, rss)
	}
	b.StopTimer()
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/start")
	if maxRSS >= 0 {
		b.ReportMetric(float64(maxRSS), "idle-RSS-KB")
	}
}

// Each program is built once per test process (a benchmark function runs
// once per b.N it tries) into buildDir, which TestMain removes.
var (
	buildMu   sync.Mutex
	buildDir  string
	buildBins = map[string]string{} // package path -> binary
)

func buildBroker() (string, error) {
	return buildProgram("github.com/sharebroker/sharebroker/cmd/sharebroker")
}

// buildProgram builds the main package pkg (CGO_ENABLED=0) once and
// returns the binary's path.
func buildProgram(pkg string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := buildBins[pkg]; ok {
		return bin, nil
	}
	if buildDir == "" {
		dir, err := os.MkdirTemp("", "sharebroker-bench-")
		if err != nil {
			return "", err
		}
		buildDir = dir
	}
	bin := filepath.Join(buildDir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	buildBins[pkg] = bin
	return bin, nil
}

// TestMain removes the binary buildBroker built. With kfakeChildEnv set it
// runs a kfake broker instead of the tests (see BenchmarkShareServer).
func TestMain(m *testing.M) {
	if os.Getenv(kfakeChildEnv) != "" {
		os.Exit(runKfakeChild())
	}
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// errPortTaken means the broker exited before answering, most likely because
// another process took the port between our probe and its bind.
var errPortTaken = errors.New("broker exited before answering")

// startOnce starts the binary, retrying on a fresh port when it exits early,
// and returns the time to the first answer and the RSS after it (-1 when
// unknown). The process is killed before returning.
func startOnce(bin string, args func(addr string) []string, probe []byte) (time.Duration, int64, error) {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		var d time.Duration
		var rss int64
		d, rss, err = startOnPort(bin, args, probe)
		if !errors.Is(err, errPortTaken) {
			return d, rss, err
		}
	}
	return 0, -1, err
}

func startOnPort(bin string, args func(addr string) []string, probe []byte) (time.Duration, int64, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return 0, -1, err
	}
	cmd := exec.Command(bin, args(addr)...)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, -1, fmt.Errorf("exec %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	defer func() {
		cmd.Process.Kill()
		<-exited
	}()

	deadline := start.Add(startDeadline)
	for {
		if answered(addr, probe, deadline) {
			d := time.Since(start)
			return d, readRSSKB(cmd.Process.Pid), nil
		}
		select {
		case <-exited:
			return 0, -1, fmt.Errorf("%w on %s", errPortTaken, addr)
		default:
		}
		if time.Now().After(deadline) {
			return 0, -1, fmt.Errorf("no ApiVersions answer on %s within %v", addr, startDeadline)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// freeLoopbackAddr asks the kernel for a free port and releases it at once;
// the caller retries if someone else takes it meanwhile.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, nil
}

// answered reports whether an ApiVersions request on a new connection to
// addr gets a response frame carrying our correlation ID.
func answered(addr string, probe []byte, deadline time.Time) bool {
	nc, err := net.DialTimeout("tcp", addr, time.Until(deadline))
	if err != nil {
		return false
	}
	defer nc.Close()
	c := &rawConn{nc: nc}
	body, err := c.roundTrip(probe)
	return err == nil && len(body) >= 4 && body[3] == 1 // correlation ID 1, big-endian
}

// readRSSKB returns VmRSS of pid in KiB, or -1 when it cannot be read.
func readRSSKB(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}
