package configdef

import (
	"testing"

	"github.com/sharebroker/sharebroker/internal/layering"
)

// TestStandardLibraryOnly keeps configdef a leaf every package may import
// (docs/design.md, "The layering rule"): the standard library only, and
// nothing of it that reaches a socket.
func TestStandardLibraryOnly(t *testing.T) {
	layering.CheckDeps(t, layering.DomainForbidden)
	layering.CheckImports(t)
}
