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

// CheckDeps fails t for every forbidden package (or package below one) that
// the package in the current directory (a test's working directory is its
// package's) reaches through its imports, naming the chain of imports that
// reaches it. It walks the graph `go list -deps` gives, so an import two
// packages down counts as much as a direct one; CheckImports says which
// packages may be imported directly. Packages under a prefix in through
// are not entered: what a library reaches on its own (the Prometheus
// client's exposition handler reaches net) is not the package's doing,
// while the same dependency by any other path still fails.
func CheckDeps(t *testing.T, forbidden []string, through ...string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list dependencies with")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, ".").Output()
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
	}
	importedBy := map[string]string{self: ""}
	queue := []string{self}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, dep := range imports[p] {
			if _, seen := importedBy[dep]; seen || under(dep, through) {
				continue
			}
			importedBy[dep] = p
			if under(dep, forbidden) {
				t.Errorf("depends on %s: %s", dep, chain(importedBy, dep))
			}
			queue = append(queue, dep)
		}
	}
	if len(importedBy) < 2 {
		t.Fatalf("go list -deps named no dependencies of %s: %q", self, out)
	}
}

// under reports whether path is one of prefixes or a package below one.
func under(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// chain is the import path from the package to p, for the failure message.
func chain(importedBy map[string]string, p string) string {
	path := []string{p}
	for by := importedBy[p]; by != ""; by = importedBy[by] {
		path = append([]string{by}, path...)
	}
	return strings.Join(path, " → ")
}
