package metrics

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoWireNoSockets keeps the package on the domain side of the edge
// (docs/design.md, "The layering rule"): nothing it depends on, directly
// or not, is kmsg or the wire package, and nothing it depends on reaches
// net except through the Prometheus client, whose exposition handler is
// built on net/http. The walk is over `go list -deps`, so an import of
// net two packages down fails as surely as one in this package.
func TestNoWireNoSockets(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list dependencies with")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	imports := make(map[string][]string)
	var self string
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		imports[f[0]] = f[1:]
		self = f[0] // -deps lists the package itself last
		if isWire(f[0]) {
			t.Errorf("metrics depends on %s", f[0])
		}
	}
	// Walk from the package without entering the Prometheus client: what
	// is left must not reach net.
	seen := map[string]string{self: ""} // package -> the one that imported it
	queue := []string{self}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, dep := range imports[p] {
			if _, ok := seen[dep]; ok || strings.HasPrefix(dep, "github.com/prometheus/") {
				continue
			}
			seen[dep] = p
			if dep == "net" {
				t.Errorf("metrics reaches net: %s", chain(seen, dep))
			}
			queue = append(queue, dep)
		}
	}
	if len(seen) < 2 {
		t.Fatalf("go list -deps named no dependencies of %s: %q", self, out)
	}
}

// isWire reports whether the package at path speaks the Kafka protocol.
func isWire(path string) bool {
	return strings.Contains(path, "franz-go/pkg/kmsg") || strings.HasSuffix(path, "/wire")
}

// chain is the import path from the package to p, for the failure message.
func chain(importedBy map[string]string, p string) string {
	path := []string{p}
	for by := importedBy[p]; by != ""; by = importedBy[by] {
		path = append([]string{by}, path...)
	}
	return strings.Join(path, " → ")
}
