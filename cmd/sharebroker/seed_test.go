package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The seed through the command (docs/seeding.md): flags, their
// SHAREBROKER_* variables and --seed FILE.

var seedApplied = regexp.MustCompile(`msg="seed applied" created=(\d+) existing=(\d+)`)

// seedCounts reads what the process logged it made and found.
func seedCounts(t *testing.T, p *brokerProc) (created, existing string) {
	t.Helper()
	m := seedApplied.FindStringSubmatch(p.logged())
	if m == nil {
		t.Fatalf("no seed applied in the log:\n%s", p.logged())
	}
	return m[1], m[2]
}

func topicPartitions(t *testing.T, addr string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	td, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int)
	for name, d := range td {
		out[name] = len(d.Partitions)
	}
	return out
}

// seed-items: SHAREBROKER_TOPIC holds several items separated by
// semicolons and line breaks, SHAREBROKER_SEED names the file, and a
// variable's items and the file's are made alike (seed-before-listen: the
// topics are there at the first Metadata).
func TestSeedFromEnvironment(t *testing.T) {
	file := filepath.Join(t.TempDir(), "seed.json")
	if err := os.WriteFile(file, []byte(`{"topics": [{"name": "from-file", "partitions": 2}],
 "groupConfigs": [{"group": "workers", "configs": {"share.auto.offset.reset": "earliest"}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startBrokerProc(t, []string{
		"SHAREBROKER_TOPIC=orders:3;payments:1:retention.ms=60000\naudit",
		"SHAREBROKER_SEED=" + file,
		"SHAREBROKER_SCRAM_USER=SCRAM-SHA-256=[name=alice,password=alice-secret]",
	}, "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--config", "num.partitions=5")
	got := topicPartitions(t, p.addr)
	want := map[string]int{"orders": 3, "payments": 1, "audit": 5, "from-file": 2}
	for name, n := range want {
		if got[name] != n {
			t.Errorf("topic %s has %d partitions, want %d (all: %v)", name, got[name], n, got)
		}
	}
	if created, _ := seedCounts(t, p); created != "6" {
		t.Errorf("created %s items, want 6 (4 topics, 1 group, 1 user)", created)
	}
}

// seed-idempotent and seed-conflict through the command: a restart on the
// data directory with the same seed makes nothing and starts; one whose
// topic has another partition count, or whose group config has another
// value, exits with the item named; afterwards the first seed still
// starts.
func TestSeedRestartAndConflict(t *testing.T) {
	dir := t.TempDir()
	seedArgs := []string{"--topic", "orders:3:retention.ms=60000", "--group-config", "workers:share.auto.offset.reset=earliest",
		"--scram-user", "SCRAM-SHA-512=[name=alice,password=alice-secret]",
		"--acl", "allow-principal=User:alice,operation=Read,topic=orders",
		"--config", "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"--config", "super.users=User:ANONYMOUS"}
	first := startDataDir(t, dir, seedArgs...)
	if created, existing := seedCounts(t, first); created != "4" || existing != "0" {
		t.Fatalf("first start: created %s, existing %s; want 4 and 0", created, existing)
	}
	first.kill(t)

	again := startDataDir(t, dir, seedArgs...)
	if created, existing := seedCounts(t, again); created != "0" || existing != "4" {
		t.Fatalf("restart: created %s, existing %s; want 0 and 4 (the ACL kept too)", created, existing)
	}
	if n := topicPartitions(t, again.addr)["orders"]; n != 3 {
		t.Fatalf("orders has %d partitions after the restart", n)
	}
	again.kill(t)

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"partitions", []string{"--topic", "orders:6"}, []string{`topic "orders" (--topic "orders:6")`, "seed conflict", "3 partitions, not 6"}},
		{"topic config", []string{"--topic", "orders:3:retention.ms=1000"}, []string{`topic "orders"`, "retention.ms=60000, not 1000"}},
		{"group config", []string{"--group-config", "workers:share.auto.offset.reset=latest"}, []string{`group "workers"`, "share.auto.offset.reset is earliest, not latest"}},
		{"password", []string{"--scram-user", "SCRAM-SHA-512=[name=alice,password=other]"}, []string{`SCRAM user "alice" (SCRAM-SHA-512)`, "another password"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			args := append([]string{"serve", "--listen", "127.0.0.1:0", "--http", "", "--data-dir", dir}, tc.args...)
			_, err := runCommand(t, ctx, args...)
			if err == nil {
				t.Fatal("started; want the conflict refused")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "other\"") || strings.Contains(err.Error(), "password=other") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}

	third := startDataDir(t, dir, seedArgs...)
	if created, _ := seedCounts(t, third); created != "0" {
		t.Fatalf("after the refused starts: created %s, want 0", created)
	}
}

// seed-validated: bad seed input stops the start with a message naming
// the item (and, for the file, where in it).
func TestSeedBadInputFailsNamingItem(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	malformed := file("malformed.json", "{\n  \"topics\": [\n    {\"name\": \"orders\" \"partitions\": 3}\n  ]\n}\n")
	unknownKey := file("unknown.json", `{"topics": [{"name": "ok", "partitions": 1}, {"name": "orders", "partitions": 3, "replicas": 1}]}`)
	unknownTop := file("top.json", `{"topic": []}`)
	zero := file("zero.json", `{"topics": [{"name": "orders", "partitions": 0}]}`)
	notObject := file("list.json", `[]`)
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"malformed JSON", []string{"--seed", malformed}, []string{malformed, "line 3, column 24"}},
		{"unknown item key", []string{"--seed", unknownKey}, []string{unknownKey, `topics[1] ("orders")`, `unknown field "replicas"`}},
		{"unknown top-level key", []string{"--seed", unknownTop}, []string{unknownTop, `unknown field "topic"`}},
		{"not an object", []string{"--seed", notObject}, []string{notObject}},
		{"missing file", []string{"--seed", filepath.Join(dir, "none.json")}, []string{"none.json"}},
		{"file partitions zero", []string{"--seed", zero}, []string{`topic "orders"`, "topics[0]", "invalid number of partitions"}},
		{"flag partitions not a number", []string{"--topic", "orders:three"}, []string{`--topic "orders:three"`, "not a number"}},
		{"flag partitions zero", []string{"--topic", "orders:0"}, []string{`topic "orders"`, "invalid number of partitions"}},
		{"flag config without value", []string{"--topic", "orders:1:retention.ms"}, []string{`--topic "orders:1:retention.ms"`, "KEY=VALUE"}},
		{"unknown topic config", []string{"--topic", "orders:1:retention=1"}, []string{`topic "orders"`, "unknown topic config name: retention"}},
		{"group config without key", []string{"--group-config", "workers"}, []string{`--group-config "workers"`, "GROUP:KEY=VALUE"}},
		{"unknown group config", []string{"--group-config", "workers:share.offset.reset=earliest"}, []string{`group "workers"`, "Unknown group config name"}},
		{"scram without brackets", []string{"--scram-user", "alice:secret"}, []string{"--scram-user", "SCRAM-SHA-256=[name=NAME,password=PASSWORD]"}},
		{"scram salt", []string{"--scram-user", "SCRAM-SHA-256=[name=alice,salt=c2FsdA==,saltedpassword=eA==]"}, []string{"--scram-user (alice)", "salt"}},
		{"acl unknown key", []string{"--acl", "principal=User:alice,operation=Read,topic=t"}, []string{`--acl "principal=User:alice`, `unknown key "principal"`}},
		{"acl unknown operation", []string{"--acl", "allow-principal=User:alice,operation=Eat,topic=t"}, []string{`operation "Eat"`}},
		{"acl without authorizer", []string{"--acl", "allow-principal=User:alice,operation=Read,topic=t"}, []string{"ACL ALLOW Read on TOPIC", "No Authorizer is configured"}},
		{"topic twice", []string{"--topic", "orders:1", "--topic", "orders:2"}, []string{`topic "orders" is given twice`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := runCommand(t, ctx, append([]string{"serve", "--listen", "127.0.0.1:0", "--http", ""}, tc.args...)...)
			if err == nil {
				t.Fatal("started; want the seed refused")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
