package refusal

import (
	"testing"

	"github.com/sharebroker/sharebroker/internal/layering"
)

// TestStandardLibraryOnly keeps the package importable from any domain
// package (docs/design.md, "The layering rule"): it imports the standard
// library only.
func TestStandardLibraryOnly(t *testing.T) {
	layering.CheckImports(t)
}
