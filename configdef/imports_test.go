package configdef

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStandardLibraryOnly keeps configdef a leaf that any domain package
// may import: everything it depends on, directly or not, is the standard
// library, so neither kmsg nor the wire package, and no sockets (net).
func TestStandardLibraryOnly(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list dependencies with")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		path, standard, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch {
		case path == "github.com/sharebroker/sharebroker/configdef":
		case strings.Contains(path, "kmsg") || strings.HasSuffix(path, "/wire") || path == "net":
			t.Errorf("configdef depends on %s", path)
		case standard != "true":
			t.Errorf("configdef depends on %s, which is not the standard library", path)
		}
	}
}
