// Package layering checks, from a package's own tests, that the package
// keeps to the layering rule of docs/design.md: which non-standard
// packages its files may import.
package layering

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// CheckImports fails t for every import of a non-test Go file in the
// current directory (a test's working directory is its package's) that is
// neither from the standard library nor one of allowed. A path whose first
// element has no dot is the standard library's.
func CheckImports(t *testing.T, allowed ...string) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if strings.Contains(first, ".") && !slices.Contains(allowed, path) {
				t.Errorf("%s imports %s", file, path)
			}
		}
	}
}
