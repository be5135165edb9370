package clientmetrics

import (
	"testing"

	"github.com/sharebroker/sharebroker/internal/layering"
)

// TestLayering keeps the package below the edge (docs/design.md, "The
// layering rule"): nothing it reaches is kmsg, wire, net or broker, and it
// imports only the clock and the OpenTelemetry protobuf module with the
// protobuf runtime it is built on. It does not import the telemetry
// package that serves the Kafka APIs: the broker hands it a plain Client.
func TestLayering(t *testing.T) {
	layering.CheckDeps(t, append(layering.DomainForbidden, "github.com/sharebroker/sharebroker/telemetry"))
	layering.CheckImports(t,
		"github.com/sharebroker/sharebroker/locktimer",
		"go.opentelemetry.io/proto/otlp/common/v1",
		"go.opentelemetry.io/proto/otlp/metrics/v1",
		"google.golang.org/protobuf/proto",
	)
}
