package telemetry

import (
	"testing"

	"github.com/sharebroker/sharebroker/internal/layering"
)

// TestDeps keeps telemetry where docs/design.md puts composing packages:
// nothing it depends on, directly or not, is kmsg, the wire package, net
// or broker; it imports only the clock, storage (for its codecs) and
// internal/refusal (the errors carrying Kafka's messages).
func TestDeps(t *testing.T) {
	layering.CheckDeps(t, layering.DomainForbidden)
	const m = "github.com/sharebroker/sharebroker/"
	layering.CheckImports(t, m+"storage", m+"locktimer", m+"internal/refusal")
}
