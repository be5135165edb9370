package broker_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/broker"
)

// testLogWriter sends broker logs to t.Log so a failing test shows them.
type testLogWriter struct{ t testing.TB }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// startBroker runs a broker on a free loopback port for the test's lifetime
// and returns it with its address.
func startBroker(t testing.TB, cfg broker.Config) (*broker.Broker, string) {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	b, err := broker.New(cfg)
	if err != nil {
		t.Fatalf("broker.New: %v", err)
	}
	if err := b.Start(); err != nil {
		t.Fatalf("broker.Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("broker.Close: %v", err)
		}
	})
	return b, b.Addr().String()
}
