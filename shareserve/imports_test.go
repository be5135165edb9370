package shareserve

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoWireNoSockets keeps the package on the domain side of the edge:
// nothing it depends on, directly or not, is kmsg, the wire package or
// net (docs/design.md, "The layering rule").
func TestNoWireNoSockets(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list dependencies with")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "kmsg") || strings.HasSuffix(dep, "/wire") || dep == "net" {
			t.Errorf("shareserve depends on %s", dep)
		}
	}
}
