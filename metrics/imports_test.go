package metrics

import (
	"testing"

	"github.com/sharebroker/sharebroker/internal/layering"
)

// TestNoWireNoSockets keeps the package on the domain side of the edge
// (docs/design.md, "The layering rule"): nothing it depends on is kmsg,
// wire or broker, and nothing reaches net except through the Prometheus
// client, whose exposition handler is built on net/http.
func TestNoWireNoSockets(t *testing.T) {
	layering.CheckDeps(t, layering.DomainForbidden, "github.com/prometheus")
}
