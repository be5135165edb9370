package auth

import (
	"testing"

	"github.com/sharebroker/sharebroker/internal/layering"
)

// TestImports keeps auth off the wire: nothing it depends on, directly or
// not, is a Kafka message (kmsg, kerr), the wire package or the broker,
// and it imports no other package of this module but internal/refusal
// (the errors carrying Kafka's messages) nor any library but the SCRAM
// one. net and crypto/tls are allowed: TLS is its job (package doc).
func TestImports(t *testing.T) {
	layering.CheckDeps(t, []string{"github.com/twmb/franz-go", layering.Wire, layering.Broker})
	layering.CheckImports(t, "github.com/xdg-go/scram", "github.com/sharebroker/sharebroker/internal/refusal")
}
