// Package httpapi is sharebroker's HTTP listener (--http): Prometheus
// metrics, health and readiness, the JSON inspection API (topics, groups,
// share-partition windows, ACLs, the cluster, the generated CA) and, with
// --enable-test-api, the test control API under /v1/test/ (clock, faults,
// leader and coordinator moves, nodes stopping and starting).
//
// It owns the HTTP side only: paths, methods, status codes and the JSON
// shapes users' scripts read. What it shows it reads through State, and
// what it changes it asks of Control; the broker implements both, so this
// package never imports the broker, and the broker starts it (Listen,
// Serve) when its config names an HTTP address. The routes are one table
// (routes), so further pages — a browser console at / — sit beside the
// JSON handlers on the same State.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sharebroker/sharebroker/clientmetrics"
	"github.com/sharebroker/sharebroker/internal/connquota"
	"github.com/sharebroker/sharebroker/locktimer"
)

// readHeaderTimeout bounds how long a client may take to send request
// headers, so an idle connection cannot hold a server goroutine forever.
const readHeaderTimeout = 10 * time.Second

// The defaults of Limits (http-limits in docs/security.md): a connection
// must send its request, headers and body, within DefaultReadTimeout; an
// answer must be written within DefaultWriteTimeout of the request's
// arrival; a keep-alive connection with no request for DefaultIdleTimeout
// is closed; and the listener holds at most DefaultMaxConnections
// connections, so idle or slow HTTP clients cannot take the file
// descriptors the Kafka listeners need.
const (
	DefaultReadTimeout    = 30 * time.Second
	DefaultWriteTimeout   = 2 * time.Minute
	DefaultIdleTimeout    = time.Minute
	DefaultMaxConnections = 256
)

// Limits bound the HTTP listener's connections; a zero field takes its
// default.
type Limits struct {
	// MaxConnections caps the connections held at once. At the cap the
	// listener accepts the next only when one closes (internal/connquota):
	// the client waits in the kernel's backlog, costing no descriptor.
	MaxConnections int
	// ReadTimeout, WriteTimeout and IdleTimeout are net/http's, in real
	// time.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MaxConnections <= 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = DefaultReadTimeout
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = DefaultWriteTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	return l
}

// Config is what the HTTP listener serves.
type Config struct {
	// Metrics is gathered on every GET /metrics.
	Metrics prometheus.Gatherer
	// State is read by the health and inspection endpoints.
	State State
	// Control is the test API's; nil leaves /v1/test/ unrouted (404), as
	// without --enable-test-api.
	Control Control
	// Log receives one line for each change the test API makes.
	Log *slog.Logger
	// Token, when set, must come as "Authorization: Bearer <Token>" on
	// every request but /healthz, /readyz, GETs of the console's static
	// pages (/ and /console/...) and, with MetricsPublic, /metrics; any
	// other is 401 (guard.go). Empty leaves the listener open.
	Token string
	// MetricsPublic serves /metrics without the token.
	MetricsPublic bool
	// Clients are the metrics clients push through KIP-714 telemetry,
	// shown by GET /v1/clients (clients.go); nil when telemetry is off.
	Clients *clientmetrics.Store
}

// Handler returns the HTTP API of cfg, behind its token if it has one.
func Handler(cfg Config) http.Handler {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	routes(mux, cfg)
	return guard(mux, cfg.Token, cfg.MetricsPublic)
}

// routes is every path the listener answers. A path or status here is
// part of the API scripts depend on: add, never change.
func routes(mux *http.ServeMux, cfg Config) {
	mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Metrics, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "up"})
	})
	s := cfg.State
	mux.HandleFunc("GET /readyz", serveReady(s))
	mux.HandleFunc("GET /v1/topics", serveTopics(s))
	mux.HandleFunc("GET /v1/cluster", serveCluster(s))
	mux.HandleFunc("GET /v1/groups", serveGroups(s))
	mux.HandleFunc("GET /v1/share-groups/{group}", serveShareGroup(s))
	mux.HandleFunc("GET /v1/share-groups/{group}/topics/{topic}/partitions/{p}/records/{offset}", serveRecordStory(s))
	mux.HandleFunc("GET /v1/tls/ca.pem", serveCA(s))
	mux.HandleFunc("GET /v1/acls", serveACLs(s))
	mux.HandleFunc("GET /v1/clients", serveClients(cfg.Clients))
	mux.HandleFunc("GET /v1/clients/{instance}", serveClient(cfg.Clients))
	if cfg.Control != nil {
		t := testAPI{state: s, ctl: cfg.Control, log: cfg.Log}
		// The test API is served behind the cross-site guard (console.go).
		test := http.NewServeMux()
		t.register(test)
		mux.Handle("/v1/test/", crossSiteGuard(test))
	}
	// The browser console and the endpoints it reads (console.go).
	consoleRoutes(mux, cfg)
}

// Server is a bound HTTP listener and the server answering on it.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Listen binds addr for h, within lim. Nothing is answered until Serve.
func Listen(addr string, h http.Handler, lim Limits) (*Server, error) {
	raw, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http listen on %s: %w", addr, err)
	}
	lim = lim.withDefaults()
	// Only the cap: net/http keeps the idle time, in real time.
	ln := connquota.New(locktimer.RealClock{}, connquota.Limits{MaxConnections: lim.MaxConnections}, nil).Listener(raw)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(readHeaderTimeout, lim.ReadTimeout),
		ReadTimeout:       lim.ReadTimeout,
		WriteTimeout:      lim.WriteTimeout, // the event streams extend it write by write (events.go)
		IdleTimeout:       lim.IdleTimeout,
	}
	// Requests' contexts end when Shutdown begins, so the console's event
	// streams (events.go), which never finish on their own, end with it.
	base, cancel := context.WithCancel(context.Background())
	srv.BaseContext = func(net.Listener) context.Context { return base }
	srv.RegisterOnShutdown(cancel)
	return &Server{ln: ln, srv: srv}, nil
}

// Addr is the address the listener is bound to.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve answers requests until Shutdown or Close, after which it returns
// nil; any other error means the listener failed.
func (s *Server) Serve() error {
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops the server, waiting for requests in flight until ctx
// ends, then closing whatever is left.
func (s *Server) Shutdown(ctx context.Context) {
	if err := s.srv.Shutdown(ctx); err != nil {
		s.srv.Close()
	}
}

// Close stops the server and its listener at once, served or not.
func (s *Server) Close() {
	s.srv.Close()
	s.ln.Close()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away: nothing to do
}

func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, map[string]string{"error": fmt.Sprintf(format, args...)})
}
