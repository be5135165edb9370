package auth

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports keeps auth off the wire: nothing it depends on, directly or
// not, is kmsg, the wire package, the broker or another package of this
// module. net and crypto/tls are allowed: TLS is its job (package doc).
func TestImports(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list dependencies with")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const self = "github.com/sharebroker/sharebroker/auth"
	deps := strings.Fields(string(out))
	if len(deps) == 0 || deps[len(deps)-1] != self {
		t.Fatalf("go list -deps did not end with %s: %q", self, deps)
	}
	for _, dep := range deps[:len(deps)-1] {
		switch {
		case strings.Contains(dep, "franz-go/pkg/kmsg"), strings.Contains(dep, "franz-go/pkg/kerr"):
			t.Errorf("auth depends on %s: Kafka messages are the broker's", dep)
		case strings.HasPrefix(dep, "github.com/sharebroker/sharebroker/"), dep == "github.com/sharebroker/sharebroker":
			t.Errorf("auth depends on %s: it stands alone below the broker (wire, broker and the rest)", dep)
		}
	}
}
