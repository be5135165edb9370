package broker_test

import (
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/locktimer"
)

// Rule: oauthbearer-warning. With OAUTHBEARER enabled on a SASL listener
// the broker warns once at start that its tokens are unsecured; with the
// default mechanisms it does not. On main there was no warning.
func TestUnsecuredOAuthWarnsAtStart(t *testing.T) {
	const warning = "OAUTHBEARER takes unsecured tokens"
	_, logs := startSASLBroker(t, locktimer.NewManualClock(time.Now()), map[string]string{"sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER"})
	if n := logs.lines(warning); n != 1 {
		t.Fatalf("%d start-up warnings about unsecured OAUTHBEARER, want 1", n)
	}
	_, plain := startSASLBroker(t, locktimer.NewManualClock(time.Now()), nil)
	if n := plain.lines(warning); n != 0 {
		t.Fatalf("%d warnings without OAUTHBEARER, want none", n)
	}
}
