package features

import (
	"testing"

	"github.com/sharebroker/sharebroker/internal/layering"
)

// TestNoWireNoSockets keeps the package below the edge: nothing it depends
// on, directly or not, is kmsg (kversion, which imports it, is read at the
// edge), wire, net or broker (docs/design.md, "The layering rule"), and it
// imports no module package at all.
func TestNoWireNoSockets(t *testing.T) {
	layering.CheckDeps(t, layering.DomainForbidden)
	layering.CheckImports(t)
}
