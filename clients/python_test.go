package clients

import (
	"os/exec"
	"strconv"
	"testing"
	"time"
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
