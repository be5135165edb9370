package brokerconfig

import (
	"testing"

	"github.com/sharebroker/sharebroker/internal/layering"
)

// TestLayering keeps the configuration below the edge (docs/design.md,
// "The layering rule"): nothing it reaches, directly or through another
// package, is kmsg, wire or broker; it reads the property declarations
// (configdef) and the group package's. net is allowed for its address
// functions (SplitHostPort, JoinHostPort): listeners are its to check.
func TestLayering(t *testing.T) {
	layering.CheckDeps(t, []string{layering.Kmsg, layering.Wire, layering.Broker})
	layering.CheckImports(t,
		"github.com/sharebroker/sharebroker/configdef",
		"github.com/sharebroker/sharebroker/group",
	)
}
