package sharebroker_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// This module exists so that the broker's module need not depend on
// testcontainers-go (and Docker's client with it): no package the broker's
// module builds or tests may import them, and its go.mod may not require
// them. (Its `go mod graph` does name testcontainers-go, through
// confluent-kafka-go's own go.mod, whose test helpers use it; no package of
// that path is built here, so the build list below is the check.)
func TestBrokerModuleFreeOfTestcontainers(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-test", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in the broker's module: %v", err)
	}
	if !strings.Contains(string(out), "github.com/sharebroker/sharebroker/broker\n") {
		t.Fatalf("go list in .. is not the broker's module's:\n%.500s", out)
	}
	for _, pkg := range strings.Split(string(out), "\n") {
		if forbidden(pkg) {
			t.Errorf("the broker's module builds %s", pkg)
		}
	}
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(gomod), "\n") {
		if forbidden(line) {
			t.Errorf("the broker's go.mod requires %s", strings.TrimSpace(line))
		}
	}
}

func forbidden(s string) bool {
	return strings.Contains(s, "github.com/testcontainers/") || strings.Contains(s, "github.com/moby/moby") ||
		strings.Contains(s, "github.com/docker/docker")
}
