package faults

import (
	"testing"

	"github.com/sharebroker/sharebroker/internal/layering"
)

// TestDeps keeps the package below the edge: nothing it depends on,
// directly or not, is kmsg, the wire package, net or broker, and it
// imports nothing of this module (docs/design.md, "The layering rule").
func TestDeps(t *testing.T) {
	layering.CheckDeps(t, layering.DomainForbidden)
	layering.CheckImports(t)
}
