package durable

import (
	"testing"

	"github.com/sharebroker/sharebroker/internal/layering"
)

// TestImports keeps durable's row of docs/design.md: storage and the
// standard library only; no kmsg, wire or net.
func TestImports(t *testing.T) {
	layering.CheckImports(t, "github.com/sharebroker/sharebroker/storage")
}
