package seed

import (
	"testing"

	"github.com/sharebroker/sharebroker/internal/layering"
)

// TestLayering keeps the seed below the edge (docs/design.md, "The
// layering rule"): nothing it reaches is a Kafka message, wire or the
// broker, and it makes each item through the package that owns it. net
// comes only through auth, whose TLS needs it.
func TestLayering(t *testing.T) {
	layering.CheckDeps(t, []string{"github.com/twmb/franz-go", layering.Wire, layering.Broker})
	const m = "github.com/sharebroker/sharebroker/"
	layering.CheckImports(t, m+"acl", m+"auth", m+"brokerconfig", m+"group", m+"storage")
}
