package layering

import (
	"os/exec"
	"strings"
	"testing"
)

// Off-limits dependencies, by what they would bring into a package whose job
// is not the network: Kafka's wire types, our own framing, sockets, and the
// edge itself.
const (
	Kmsg   = "github.com/twmb/franz-go/pkg/kmsg"
	Wire   = "github.com/sharebroker/sharebroker/wire"
	Net    = "net"
	Broker = "github.com/sharebroker/sharebroker/broker"
)

// DomainForbidden is what no package below the edge may depend on,
// directly or through another package: kmsg, wire, net and broker
// (docs/design.md, "The layering rule").
var DomainForbidden = []string{Kmsg, Wire, Net, Broker}

// CheckDeps fails t for every package in the transitive dependencies of
// the package in the current directory (a test's working directory is its
// package's) that is one of forbidden or below one of them. It asks
// `go list -deps`, so an import through another package counts as much as
// a direct one; CheckImports says which packages may be imported directly.
func CheckDeps(t *testing.T, forbidden ...string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list dependencies with")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("depends on %s (forbidden: %s)", dep, f)
			}
		}
	}
}
