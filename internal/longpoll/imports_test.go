package longpoll

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoWireNoSockets keeps the package on the domain side of the edge:
// nothing it depends on, directly or not, is kmsg, the wire package or
// net (docs/design.md, "The layering rule"). It walks go list -deps, so
// an import through another package counts too.
func TestNoWireNoSockets(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list dependencies with")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "franz-go/pkg/kmsg") || strings.HasSuffix(dep, "/wire") || dep == "net" {
			t.Errorf("longpoll depends on %s", dep)
		}
	}
}
