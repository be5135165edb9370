package persist

import (
	"testing"

	"github.com/sharebroker/sharebroker/internal/layering"
)

// TestDeps keeps the binding where docs/design.md puts it: below broker,
// beside the domain. Nothing it depends on, directly or not, is kmsg, the
// wire package, net or broker, and it imports only durable and the domain
// packages whose state it keeps.
func TestDeps(t *testing.T) {
	layering.CheckDeps(t, layering.DomainForbidden)
	const m = "github.com/sharebroker/sharebroker/"
	layering.CheckImports(t, m+"durable", m+"storage", m+"group", m+"txn", m+"acl", m+"sharepartition", m+"locktimer", m+"features")
}
