package layering

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMELayoutListsEveryPackage keeps the README's Layout table true:
// every package of the module, and every top-level directory, has a row
// (its first column names it in backquotes), and every row names
// something that exists.
func TestREADMELayoutListsEveryPackage(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list packages with")
	}
	out, err := exec.Command(goTool, "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root := strings.TrimSpace(string(out))
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(readme), "\n## Layout\n")
	if !ok {
		t.Fatal("README has no Layout section")
	}
	layout, _, _ = strings.Cut(layout, "\n## ")
	listed := make(map[string]bool)
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)`").FindAllStringSubmatch(layout, -1) {
		listed[strings.TrimSuffix(m[1], "/")] = true
	}

	want := make(map[string]bool)
	dirs, err := exec.Command(goTool, "list", "-f", "{{.Dir}}", "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, d := range strings.Fields(string(dirs)) {
		if rel, _ := filepath.Rel(root, d); rel != "." {
			want[filepath.ToSlash(rel)] = true
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && (!strings.HasPrefix(e.Name(), ".") || e.Name() == ".ci") && e.Name() != "bin" && e.Name() != "node_modules" {
			want[e.Name()] = true
		}
	}
	for dir := range want {
		if !listed[dir] && !listedParent(listed, dir) && !listedChild(listed, dir) {
			t.Errorf("README Layout has no row for %s", dir)
		}
	}
	for dir := range listed {
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			t.Errorf("README Layout lists %s, which does not exist", dir)
		}
	}
}

// listedParent reports whether dir is below a listed directory that is not
// itself a package: `deploy` covers deploy/grafana, `clients` its node
// folder. A package below a listed package still needs its own row.
func listedParent(listed map[string]bool, dir string) bool {
	for parent := filepath.Dir(dir); parent != "."; parent = filepath.Dir(parent) {
		if listed[parent] {
			return !isPackage(parent)
		}
	}
	return false
}

// listedChild reports whether dir is a directory that is not a package
// but holds listed ones: cmd holds cmd/sharebroker.
func listedChild(listed map[string]bool, dir string) bool {
	if isPackage(dir) {
		return false
	}
	for l := range listed {
		if strings.HasPrefix(l, dir+"/") {
			return true
		}
	}
	return false
}

func isPackage(dir string) bool {
	files, _ := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
	return len(files) > 0
}
