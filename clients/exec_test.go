package clients

// Helpers shared by the tests that drive non-Go Kafka clients (kcat,
// kafka-python, Node.js) as subprocesses against an in-process broker.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/sharebrokertest"
)

// underCI reports whether missing tools must fail rather than skip: CI
// installs every client, so a skip there would hide a broken install.
func underCI() bool { return os.Getenv("CI") == "true" }

// missing skips the test, or fails it under CI, naming what to install.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if underCI() {
		t.Fatalf("CI=true and %s", msg)
	}
	t.Skip(msg)
}

// lookTool returns the path of an executable on PATH, or skips (fails
// under CI) with the install hint.
func lookTool(t testing.TB, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		missing(t, "%s is not installed (%s)", name, install)
	}
	return path
}

// cmdSpec is one subprocess run.
type cmdSpec struct {
	name    string        // executable
	args    []string      // arguments
	dir     string        // working directory, "" for the test's
	stdin   string        // fed to the process, then closed
	env     []string      // added to the inherited environment
	timeout time.Duration // the process is killed after this
}

// run starts the process, waits for it under its deadline and returns its
// stdout. stderr goes to the test log line by line as it arrives (so a
// hung client shows what it was doing), stdout is logged when it ends.
// A deadline overrun is reported as an error naming the timeout.
func run(t testing.TB, c cmdSpec) (string, error) {
	t.Helper()
	if c.timeout == 0 {
		c.timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.name, c.args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Stdin = strings.NewReader(c.stdin)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr := &lineLogger{t: t, prefix: baseName(c.name) + ": "}
	cmd.Stderr = stderr
	// Do not wait forever for pipes a killed process's children may hold.
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	stderr.flush()
	t.Logf("%s %s: exit after %v: %v", baseName(c.name), strings.Join(c.args, " "), time.Since(start).Round(time.Millisecond), err)
	if stdout.Len() > 0 {
		t.Logf("%s stdout:\n%s", baseName(c.name), stdout.String())
	}
	if ctx.Err() != nil {
		return stdout.String(), fmt.Errorf("%s did not exit within %v: %w", baseName(c.name), c.timeout, errors.Join(err, ctx.Err()))
	}
	return stdout.String(), err
}

func baseName(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// lineLogger writes whole lines to the test log as they arrive.
type lineLogger struct {
	t      testing.TB
	prefix string
	mu     sync.Mutex
	buf    []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.t.Log(l.prefix + string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.t.Log(l.prefix + string(l.buf))
		l.buf = nil
	}
}

var _ io.Writer = (*lineLogger)(nil)

// startBroker starts a broker for a subprocess client: on real time,
// because these clients park fetches and expect the wait to run out, and
// with no initial rebalance delay, so a group's first join answers at once.
func startBroker(t *testing.T, opts ...sharebrokertest.Option) *sharebrokertest.Broker {
	t.Helper()
	opts = append([]sharebrokertest.Option{
		sharebrokertest.WithRealClock(),
		sharebrokertest.WithProperty("group.initial.rebalance.delay.ms", "0"),
	}, opts...)
	return sharebrokertest.Start(t, opts...)
}

// admin returns a kadm client for the broker, closed when the test ends.
func admin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// createTopic creates a topic with the given partition count.
func createTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// endOffsets returns each partition's high watermark.
func endOffsets(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	out := make(map[int32]int64)
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out
}

// committed returns the group's committed offset per partition of topic.
func committed(t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	out := make(map[int32]int64)
	for p, o := range offs[topic] {
		out[p] = o.At
	}
	return out
}

// servedCAFile fetches the CA the broker generated (GET /v1/tls/ca.pem on
// its HTTP address) and writes it to a file for a client's CA location.
func servedCAFile(t *testing.T, httpAddr string) string {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/v1/tls/ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	pem, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/tls/ca.pem: %d %v", resp.StatusCode, err)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	return ca
}
