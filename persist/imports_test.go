package persist

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the prefix of this repository's packages.
const module = "github.com/sharebroker/sharebroker/"

// TestDeps keeps the binding where docs/design.md puts it: below broker,
// beside the domain. Nothing it depends on, directly or not, is kmsg, the
// wire package, net or broker, and of this module it reaches only durable
// and the domain packages whose state it keeps. It walks `go list -deps`,
// so an import that drags one of them in through another package fails
// too.
func TestDeps(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list dependencies with")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	allowed := []string{"persist", "durable", "storage", "group", "txn", "acl", "sharepartition", "locktimer"}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case strings.Contains(dep, "franz-go/pkg/kmsg"), strings.HasSuffix(dep, "/wire"), dep == "net":
			t.Errorf("persist depends on %s: it sees no Kafka request and no socket", dep)
		case strings.HasPrefix(dep, module) && !slices.Contains(allowed, strings.TrimPrefix(dep, module)):
			t.Errorf("persist depends on %s: only durable and the domain packages it binds", dep)
		}
	}
}
