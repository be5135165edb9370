package httpapi

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/storage"
)

// served starts cfg's handler with Listen and lim on a loopback port and
// returns its base URL.
func served(t *testing.T, cfg Config, lim Limits) string {
	t.Helper()
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	srv, err := Listen("127.0.0.1:0", Handler(cfg), lim)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + srv.Addr().String()
}

// request sends method path with the Authorization header auth (none when
// empty) and returns the status and the WWW-Authenticate header.
func request(t *testing.T, base, method, path, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// Rule: http-guard. With a token, every path but the probes and the
// console's static pages answers 401 with a Bearer challenge unless the
// request carries the token; /metrics needs it unless made public; a path
// that is not clean is never let through on the console's prefix. On main
// there was no token: /v1/topics and the test API answered anyone.
func TestHTTPGuard(t *testing.T) {
	f := &fake{ready: true, store: storage.NewStore(), clock: locktimer.NewManualClock(time.Unix(1000, 0))}
	const token = "s3cret-token"
	guarded := served(t, Config{State: f, Control: f, Token: token}, Limits{})
	public := served(t, Config{State: f, Token: token, MetricsPublic: true}, Limits{})
	open := served(t, Config{State: f, Control: f}, Limits{})
	for _, tc := range []struct {
		base, method, path, auth, body string
		status                         int
		challenge                      string
	}{
		{guarded, "GET", "/healthz", "", "", 200, ""},
		{guarded, "GET", "/readyz", "", "", 200, ""},
		{guarded, "GET", "/metrics", "", "", 401, `Bearer realm="sharebroker"`},
		{guarded, "GET", "/metrics", "Bearer " + token, "", 200, ""},
		{public, "GET", "/metrics", "", "", 200, ""},
		{public, "GET", "/v1/topics", "", "", 401, `Bearer realm="sharebroker"`},
		{guarded, "GET", "/v1/topics", "", "", 401, `Bearer realm="sharebroker"`},
		{guarded, "GET", "/v1/topics", "Bearer wrong", "", 401, `Bearer realm="sharebroker", error="invalid_token"`},
		{guarded, "GET", "/v1/topics", "Bearer " + token + "x", "", 401, `Bearer realm="sharebroker", error="invalid_token"`},
		{guarded, "GET", "/v1/topics", "Basic " + token, "", 401, `Bearer realm="sharebroker"`},
		{guarded, "GET", "/v1/topics", "Bearer " + token, "", 200, ""},
		{guarded, "GET", "/v1/topics", "bearer " + token, "", 200, ""},
		{guarded, "GET", "/v1/acls", "", "", 401, `Bearer realm="sharebroker"`},
		{guarded, "GET", "/v1/test/clock", "", "", 401, `Bearer realm="sharebroker"`},
		{guarded, "POST", "/v1/test/clock/advance", "", `{"duration":"30s"}`, 401, `Bearer realm="sharebroker"`},
		{guarded, "POST", "/v1/test/clock/advance", "Bearer " + token, `{"duration":"30s"}`, 200, ""},
		// The console's pages pass the guard; anything else under them
		// does not.
		{guarded, "GET", "/", "", "", 200, ""},
		{guarded, "GET", "/console/console.js", "", "", 200, ""},
		{guarded, "GET", "/console/missing.js", "", "", 404, ""},
		{guarded, "POST", "/", "", "", 401, `Bearer realm="sharebroker"`},
		{guarded, "GET", "/console/../v1/topics", "", "", 401, `Bearer realm="sharebroker"`},
		{guarded, "GET", "/nowhere", "", "", 401, `Bearer realm="sharebroker"`},
		{open, "GET", "/v1/topics", "", "", 200, ""},
		{open, "GET", "/metrics", "", "", 200, ""},
	} {
		status, challenge := request(t, tc.base, tc.method, tc.path, tc.auth, tc.body)
		if status != tc.status || challenge != tc.challenge {
			t.Errorf("%s %s (auth %q): %d %q, want %d %q", tc.method, tc.path, tc.auth, status, challenge, tc.status, tc.challenge)
		}
	}
	if now := f.clock.Now(); !now.Equal(time.Unix(1030, 0)) {
		t.Errorf("clock %v: only the advance with the token should have moved it", now)
	}
}

// keptAlive opens a connection to base and makes one request on it,
// leaving it open (keep-alive).
func keptAlive(t *testing.T, base string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return c
}

// readStatus reads one response's status line from c within d.
func readStatus(c net.Conn, d time.Duration) (string, error) {
	c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	return resp.Status, nil
}

// Rule: http-limits. The listener holds at most MaxConnections: the next
// connection is not served until one closes. On main every connection was
// held, so idle HTTP clients could take every file descriptor.
func TestHTTPMaxConnections(t *testing.T) {
	f := &fake{ready: true, store: storage.NewStore(), clock: locktimer.NewManualClock(time.Unix(1000, 0))}
	base := served(t, Config{State: f}, Limits{MaxConnections: 2})
	a, b := keptAlive(t, base), keptAlive(t, base)
	for _, c := range []net.Conn{a, b} {
		if _, err := readStatus(c, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	third := keptAlive(t, base)
	if status, err := readStatus(third, 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a third connection over the cap of 2 was answered: %q %v", status, err)
	}
	a.Close()
	if _, err := readStatus(third, 10*time.Second); err != nil {
		t.Fatalf("once a slot freed: %v", err)
	}
}

// Rule: http-limits. A keep-alive connection with no request for
// IdleTimeout is closed, and one that never finishes its request is closed
// after ReadTimeout. On main only a 10 s header timeout existed, so a
// kept-alive connection was held for ever.
func TestHTTPIdleAndSlowConnectionsClosed(t *testing.T) {
	f := &fake{ready: true, store: storage.NewStore(), clock: locktimer.NewManualClock(time.Unix(1000, 0))}
	base := served(t, Config{State: f}, Limits{IdleTimeout: 100 * time.Millisecond, ReadTimeout: 200 * time.Millisecond})
	idle := keptAlive(t, base)
	if _, err := readStatus(idle, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	slow, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, "POST /healthz HTTP/1.1\r\nHost: x\r\n") // headers never end
	for name, c := range map[string]net.Conn{"idle": idle, "slow": slow} {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			t.Errorf("%s connection: %v, want it closed by the server", name, err)
		}
	}
}
