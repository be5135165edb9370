package sharepartition

import (
	"testing"

	"github.com/sharebroker/sharebroker/internal/layering"
)

// TestImportsStayInside keeps the package a leaf of the domain: the
// standard library and locktimer only (docs/design.md, "The layering rule").
func TestImportsStayInside(t *testing.T) {
	layering.CheckImports(t, "github.com/sharebroker/sharebroker/locktimer")
}
