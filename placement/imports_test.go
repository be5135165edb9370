package placement

import (
	"testing"

	"github.com/sharebroker/sharebroker/internal/layering"
)

// TestDeps keeps the package below the edge: nothing it depends on,
// directly or not, is kmsg, the wire package, net or broker, and it
// imports only the cluster and the packages whose state it places
// (docs/design.md, "The layering rule").
func TestDeps(t *testing.T) {
	layering.CheckDeps(t, layering.DomainForbidden)
	const m = "github.com/sharebroker/sharebroker/"
	layering.CheckImports(t, m+"cluster", m+"storage", m+"group", m+"txn")
}
