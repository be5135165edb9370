package httpapi

import (
	"testing"

	"github.com/sharebroker/sharebroker/internal/layering"
)

// TestNoWireNoBroker keeps the HTTP listener beside the Kafka edge, not in
// it: nothing it depends on, directly or not, is kmsg, the wire package or
// the broker (which imports this package and implements its State and
// Control). net is allowed: serving HTTP is this package's job.
func TestNoWireNoBroker(t *testing.T) {
	layering.CheckDeps(t, []string{layering.Kmsg, layering.Wire, layering.Broker})
}
