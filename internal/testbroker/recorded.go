package testbroker

import (
	"log/slog"
	"testing"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/clientframes"
)

// StartBehindProxy runs a broker with cfg behind a recording proxy until
// the test ends, for capturing the request frames real clients send
// (testdata/frames). The broker advertises the proxy's address, so every
// connection a client opens after bootstrapping goes through it too;
// clients dial the returned proxy's Addr. A nil cfg.Logger discards the
// broker's logs: a capture run is about the clients.
func StartBehindProxy(t testing.TB, cfg broker.Config) *clientframes.Proxy {
	t.Helper()
	p, err := clientframes.ListenProxy()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Advertise = p.Addr()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	b := Start(t, cfg)
	p.Serve(b.Addr().String())
	// Cleanups run last-in first-out: the proxy closes before the broker.
	t.Cleanup(p.Close)
	return p
}
