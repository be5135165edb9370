package clients

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/sharebrokertest"
)

// kafka-python 2.0.2 as Debian packages it (python3-kafka): installed for
// the system interpreter, which is why the tests run /usr/bin/python3 and
// not whatever python3 comes first on PATH.
const systemPython = "/usr/bin/python3"

// lookKafkaPython returns an interpreter that can import kafka.
func lookKafkaPython(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(systemPython, "-c", "import kafka; print(kafka.__version__)").CombinedOutput()
	if err != nil {
		missing(t, "%s cannot import kafka-python (apt-get install python3-kafka): %v: %s", systemPython, err, out)
	}
	t.Logf("kafka-python %s", out)
	return systemPython
}

// Produce and consume in a group with auto-commit, then restart: a second
// process in the same group, after more records are produced, reads only
// the new ones, from the offsets the first one committed.
func TestPythonGroupResumesFromCommit(t *testing.T) {
	python := lookKafkaPython(t)
	b := startBroker(t)
	adm := admin(t, b.Addr)
	const topic, group, partitions = "py-events", "py-group", 2
	createTopic(t, adm, topic, partitions)

	checkGroupResume(t, adm, topic, group, partitions, func(prefix string, count int) (string, error) {
		return run(t, cmdSpec{name: python, args: []string{"python/produce_consume.py", b.Addr, topic, group, prefix, strconv.Itoa(count)},
			timeout: 45 * time.Second})
	})
}

// kafka-python over SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256 and
// SCRAM-SHA-512 produces and reads back; a wrong password ends the process
// with an authentication error, bounded. Rules (docs/security.md):
// sasl-listeners, sasl-mechanisms, sasl-failure-closes.
func TestPythonSASLPlaintext(t *testing.T) {
	python := lookKafkaPython(t)
	b := startBroker(t,
		sharebrokertest.WithProperty("listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"),
		sharebrokertest.WithSASLUser("alice", "alice-secret"))
	addr := b.Broker().ListenerAddr("SASL_PLAINTEXT").String()
	adm := admin(t, b.Addr)
	for i, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		topic := fmt.Sprintf("py-sasl-%d", i)
		createTopic(t, adm, topic, 1)
		out, err := run(t, cmdSpec{name: python, args: []string{"python/sasl.py", addr, topic, mech, "alice", "alice-secret"},
			timeout: 45 * time.Second})
		if err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
		var got struct{ Read []string }
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: %v in %q", mech, err, out)
		}
		if want := []string{"one", "two", "three"}; !slices.Equal(got.Read, want) {
			t.Fatalf("%s: read %q, want %q", mech, got.Read, want)
		}
	}
	start := time.Now()
	_, err := run(t, cmdSpec{name: python, args: []string{"python/sasl.py", addr, "py-sasl-0", "SCRAM-SHA-512", "alice", "wrong"},
		timeout: 45 * time.Second})
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("wrong password: %v, want exit status 2", err)
	}
	if took := time.Since(start); took > 5*time.Second { // the interpreter's start included
		t.Fatalf("wrong password failed after %v", took)
	}
}
