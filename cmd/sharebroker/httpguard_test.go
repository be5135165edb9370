package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// nofileEnv, set for a broker process the test starts, lowers its limit
// of open files (RLIMIT_NOFILE) to the value before it serves.
const nofileEnv = "SHAREBROKER_TEST_NOFILE"

// limitOpenFiles applies nofileEnv in the child process (TestMain).
func limitOpenFiles() {
	if v := os.Getenv(nofileEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err == nil {
			err = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n})
		}
		if err != nil {
			panic(nofileEnv + ": " + err.Error())
		}
	}
}

// httpAddrOf waits, bounded, for p to log its HTTP listener's address
// (without a data directory it binds after the Kafka listeners).
func httpAddrOf(t *testing.T, p *brokerProc) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := httpListening.FindStringSubmatch(p.logged()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no HTTP listener logged within 20 s:\n%s", p.logged())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Rule: http-guard. --enable-test-api on an address other hosts reach,
// without a token, does not start, naming the flags that fix it; on
// loopback, with a token (or its file), or with the explicit allowance it
// does.
func TestOpenTestAPIRefused(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("  from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, http := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "broker.example:0"} {
		_, err := runCommand(t, context.Background(), "serve", "--listen", "127.0.0.1:0", "--http", http, "--enable-test-api")
		if err == nil {
			t.Errorf("--http %s --enable-test-api without a token: accepted", http)
			continue
		}
		for _, flag := range []string{"--enable-test-api", "--http-token", "--allow-unauthenticated-test-api"} {
			if !strings.Contains(err.Error(), flag) {
				t.Errorf("--http %s: error %q does not name %s", http, err, flag)
			}
		}
	}
	for name, f := range map[string]serveFlags{
		"loopback":   {http: "127.0.0.1:0", testAPI: true},
		"localhost":  {http: "localhost:0", testAPI: true},
		"ipv6":       {http: "[::1]:0", testAPI: true},
		"token":      {http: "0.0.0.0:0", testAPI: true, httpGuard: httpGuardFlags{token: "t"}},
		"token file": {http: "0.0.0.0:0", testAPI: true, httpGuard: httpGuardFlags{tokenFile: tokenFile}},
		"allowed":    {http: "0.0.0.0:0", testAPI: true, httpGuard: httpGuardFlags{allowOpenTestAPI: true}},
		"no testAPI": {http: "0.0.0.0:0"},
	} {
		f.logLevel, f.logFormat, f.nodes = "info", "text", 1
		f.httpGuard.maxConnections = 256
		cfg, err := buildConfig(f, io.Discard)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if name == "token file" && cfg.HTTPToken != "from-file" {
			t.Errorf("token from its file: %q", cfg.HTTPToken)
		}
	}
	for name, g := range map[string]httpGuardFlags{
		"both":        {token: "a", tokenFile: tokenFile, maxConnections: 1},
		"no file":     {tokenFile: filepath.Join(t.TempDir(), "none"), maxConnections: 1},
		"space":       {token: "a b", maxConnections: 1},
		"connections": {maxConnections: 0},
	} {
		if _, err := buildConfig(serveFlags{http: "127.0.0.1:0", logLevel: "info", logFormat: "text", nodes: 1, httpGuard: g}, io.Discard); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Rule: http-guard. The token comes from SHAREBROKER_HTTP_TOKEN too, and a
// served broker then answers /v1/topics only with it.
func TestHTTPTokenFromEnvironment(t *testing.T) {
	p := startBrokerProc(t, []string{"SHAREBROKER_HTTP_TOKEN=env-token", "SHAREBROKER_HTTP=127.0.0.1:0"}, "serve", "--listen", "127.0.0.1:0")
	httpAddr := httpAddrOf(t, p)
	for auth, want := range map[string]int{"": 401, "Bearer env-token": 200, "Bearer other": 401} {
		req, _ := http.NewRequest("GET", "http://"+httpAddr+"/v1/topics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /v1/topics with %q: %d, want %d", auth, resp.StatusCode, want)
		}
	}
}

// Rule: http-limits. 1,250 idle HTTP connections to a broker allowed
// 1,200 file descriptors leave its Kafka listener serving: the HTTP
// listener holds at most --http-max-connections (256) and the rest wait in
// the kernel's backlog. On main every HTTP connection was accepted, the
// descriptors ran out (accept4: too many open files) and the Kafka client
// below could not connect.
func TestIdleHTTPConnectionsDoNotStarveKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 1,250 connections")
	}
	p := startBrokerProc(t, []string{nofileEnv + "=1200"}, "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	httpAddr := httpAddrOf(t, p)
	for range 1250 {
		c, err := net.DialTimeout("tcp", httpAddr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		// A request that keeps the connection alive once answered.
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("canary"),
		kgo.ConsumeTopics("canary"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("alive")}).FirstErr(); err != nil {
		t.Fatalf("produce with 1,250 HTTP connections open: %v\nbroker log:\n%s", err, tail(p.logged(), 2000))
	}
	fetches := cl.PollFetches(ctx)
	if err := fetches.Err0(); err != nil || fetches.NumRecords() != 1 {
		t.Fatalf("consume: %v, %d records\nbroker log:\n%s", err, fetches.NumRecords(), tail(p.logged(), 2000))
	}
	if strings.Contains(p.logged(), "too many open files") {
		t.Fatalf("the broker ran out of descriptors:\n%s", tail(p.logged(), 2000))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
