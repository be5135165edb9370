package broker_test

import (
	"testing"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/testbroker"
)

// startBroker runs a broker (internal/testbroker) for the test's lifetime
// and returns it with its address, the pair most tests here start from.
func startBroker(t testing.TB, cfg broker.Config) (*broker.Broker, string) {
	t.Helper()
	b := testbroker.Start(t, cfg)
	return b, b.Addr().String()
}
