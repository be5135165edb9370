package broker

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/brokerconfig"
	"github.com/sharebroker/sharebroker/configdef"
)

var updateReadme = flag.Bool("update", false, "rewrite the generated sections of README.md")

const readmePath = "../README.md"

// The README's API table and configuration reference are generated from the
// dispatch table and the property table, so they cannot drift: this test
// fails when they differ, and -update rewrites them.
func TestREADMEGeneratedSections(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	sections := map[string]string{
		"api-table": apiTableMarkdown(),
		"config":    configTableMarkdown(),
	}
	updated := readme
	for name, want := range sections {
		begin, end := "<!-- "+name+":begin -->\n", "<!-- "+name+":end -->"
		i, j := strings.Index(updated, begin), strings.Index(updated, end)
		if i < 0 || j < i {
			t.Fatalf("README.md lacks the markers %q … %q", strings.TrimSpace(begin), end)
		}
		got := updated[i+len(begin) : j]
		if got != want && !*updateReadme {
			t.Errorf("README section %q is stale; run: go test ./broker -run TestREADMEGeneratedSections -update\nwant:\n%s", name, want)
		}
		updated = updated[:i+len(begin)] + want + updated[j:]
	}
	if *updateReadme && updated != readme {
		if err := os.WriteFile(readmePath, []byte(updated), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func apiTableMarkdown() string {
	var sb strings.Builder
	sb.WriteString("| Key | API | Versions |\n|---:|---|---|\n")
	for _, a := range apis {
		if a == nil {
			continue
		}
		fmt.Fprintf(&sb, "| %d | %s | %d–%d |\n", a.key, kmsg.NameForKey(a.key), a.minVersion, a.maxVersion)
	}
	return sb.String()
}

func configTableMarkdown() string {
	var sb strings.Builder
	for _, scope := range []struct {
		scope configdef.Scope
		title string
	}{
		{configdef.Broker, "Broker properties (`--config KEY=VALUE`)"},
		{configdef.Topic, "Topic properties (CreateTopics, AlterConfigs, IncrementalAlterConfigs); the default is the broker property named"},
		{configdef.Group, "Group properties (GROUP resources of DescribeConfigs and IncrementalAlterConfigs); defaults come from the broker properties named"},
	} {
		fmt.Fprintf(&sb, "%s:\n\n| Property | Default | Meaning |\n|---|---|---|\n", scope.title)
		for p := range brokerconfig.Properties() {
			if p.Scope != scope.scope {
				continue
			}
			def := "`" + p.Default + "`"
			switch p.Scope {
			case configdef.Topic:
				if p.Synonym != "" {
					def = "`" + p.Synonym + "`"
				}
			case configdef.Group:
				def = p.Default // already formatted: a value or a broker property
			}
			fmt.Fprintf(&sb, "| `%s` | %s | %s |\n", p.Name, def, p.Doc)
		}
		sb.WriteString("\n")
	}
	return sb.String()
}
