package clients

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
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

type pyRecord struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Key       string `json:"key"`
	Value     string `json:"value"`
}

type pyReport struct {
	Produced  []pyRecord        `json:"produced"`
	Consumed  []pyRecord        `json:"consumed"`
	Committed map[string]*int64 `json:"committed"`
}

func sortPyRecords(rs []pyRecord) {
	slices.SortFunc(rs, func(a, b pyRecord) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
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

	round := func(prefix string, count int) pyReport {
		t.Helper()
		out, err := run(t, cmdSpec{name: python, args: []string{"python/produce_consume.py", b.Addr, topic, group, prefix, strconv.Itoa(count)},
			timeout: 45 * time.Second})
		if err != nil {
			t.Fatalf("%s round: %v", prefix, err)
		}
		var rep pyReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s round: stdout is not the JSON report: %v", prefix, err)
		}
		if len(rep.Produced) != count {
			t.Fatalf("%s round produced %d records, want %d", prefix, len(rep.Produced), count)
		}
		for i, r := range rep.Produced {
			if want := fmt.Sprintf("%s-key-%d", prefix, i); r.Key != want {
				t.Fatalf("%s round: produced record %d has key %q, want %q", prefix, i, r.Key, want)
			}
		}
		sortPyRecords(rep.Produced)
		sortPyRecords(rep.Consumed)
		return rep
	}
	// checkCommitted compares the group's offsets, as the script and the
	// broker report them, with the topic's end.
	checkCommitted := func(rep pyReport) {
		t.Helper()
		ends := endOffsets(t, adm, topic)
		fromBroker := committed(t, adm, group, topic)
		for p := range int32(partitions) {
			c := rep.Committed[strconv.Itoa(int(p))]
			if ends[p] == 0 {
				continue // nothing consumed there, so maybe nothing committed
			}
			if c == nil || *c != ends[p] || fromBroker[p] != ends[p] {
				t.Fatalf("partition %d: committed %v (script) %d (broker), want the end %d", p, c, fromBroker[p], ends[p])
			}
		}
	}

	first := round("first", 6)
	// The first round's offsets start at 0 in each partition, with no gaps.
	next := map[int32]int64{}
	for _, r := range first.Produced {
		if r.Offset != next[r.Partition] {
			t.Fatalf("first round produced %+v, want offset %d", r, next[r.Partition])
		}
		next[r.Partition]++
	}
	if !slices.Equal(first.Consumed, first.Produced) {
		t.Fatalf("first round consumed\n%v\nwant what it produced\n%v", first.Consumed, first.Produced)
	}
	checkCommitted(first)

	second := round("second", 4)
	for _, r := range second.Produced {
		if r.Offset != next[r.Partition] {
			t.Fatalf("second round produced %+v, want offset %d", r, next[r.Partition])
		}
		next[r.Partition]++
	}
	if !slices.Equal(second.Consumed, second.Produced) {
		t.Fatalf("restarted consumer read\n%v\nwant only the new records\n%v", second.Consumed, second.Produced)
	}
	checkCommitted(second)
}
