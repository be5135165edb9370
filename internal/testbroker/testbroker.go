// Package testbroker starts a broker for the rest of one test: the start,
// the log going to the test, and the bounded close every package's tests
// (and sharebrokertest) would otherwise each write. What a package adds
// around it (a manual clock, options, a peer interface) stays in that
// package.
package testbroker

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/broker"
)

// closeTimeout bounds closing a broker when its test ends.
const closeTimeout = 10 * time.Second

// Start runs a broker with cfg until the test ends, then closes it. An
// empty cfg.Listen is a free loopback port; a nil cfg.Logger logs from
// Info up to the test's log, so a failing test shows the broker's side.
func Start(t testing.TB, cfg broker.Config) *broker.Broker {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = Logger(t, slog.LevelInfo)
	}
	b, err := broker.New(cfg)
	if err != nil {
		t.Fatalf("broker.New: %v", err)
	}
	if err := b.Start(); err != nil {
		_ = Close(b) // what Start began before failing: the HTTP server, the data directory
		t.Fatalf("broker.Start: %v", err)
	}
	t.Cleanup(func() {
		if err := Close(b); err != nil {
			t.Errorf("broker.Close: %v", err)
		}
	})
	return b
}

// Close closes b, bounded; closing it again does nothing. For tests that
// stop a broker before they end.
func Close(b *broker.Broker) error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return b.Close(ctx)
}

// Logger returns a text logger writing to the test's log from level up.
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: level}))
}

// logWriter sends each log line to t.Log.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}
