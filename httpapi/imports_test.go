package httpapi

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoWireNoBroker keeps the HTTP listener beside the Kafka edge, not in
// it: nothing it depends on, directly or not, is kmsg, the wire package or
// the broker (which imports this package and implements its State and
// Control). net is allowed: serving HTTP is this package's job.
func TestNoWireNoBroker(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list dependencies with")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const module = "github.com/sharebroker/sharebroker/"
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case strings.Contains(dep, "franz-go/pkg/kmsg"), dep == module+"wire",
			dep == module+"broker", strings.HasPrefix(dep, module+"broker/"):
			t.Errorf("httpapi depends on %s", dep)
		}
	}
}
