package brokerconfig

import (
	"testing"

	"github.com/sharebroker/sharebroker/internal/layering"
)

// TestLayering keeps the configuration below the edge (docs/design.md,
// "The layering rule"): nothing it reaches, directly or through another
// package, is kmsg, wire, net or broker; it reads the property
// declarations (configdef) and the group package's.
func TestLayering(t *testing.T) {
	layering.CheckDeps(t, layering.DomainForbidden)
	layering.CheckImports(t,
		"github.com/sharebroker/sharebroker/configdef",
		"github.com/sharebroker/sharebroker/group",
	)
}
