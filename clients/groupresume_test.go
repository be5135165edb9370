package clients

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// The kafka-python and kafkajs scripts share one shape: produce COUNT
// keyed records, read the topic to its end in a group, and print this
// report as JSON on stdout.

type scriptRecord struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Key       string `json:"key"`
	Value     string `json:"value"`
}

type groupReport struct {
	Produced  []scriptRecord    `json:"produced"`
	Consumed  []scriptRecord    `json:"consumed"`
	Committed map[string]*int64 `json:"committed"` // by partition; null: none
}

func sortRecords(rs []scriptRecord) {
	slices.SortFunc(rs, func(a, b scriptRecord) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
}

// checkGroupResume runs a script twice in the same group: the first run
// produces 6 records and must read exactly those; the second, a fresh
// process, produces 4 more and must read exactly the 4 new ones, resuming
// from what the first committed. After each run the group's committed
// offsets (as the script saw them and as the broker reports them) must be
// the topic's end.
func checkGroupResume(t *testing.T, adm *kadm.Client, topic, group string, partitions int32,
	runScript func(prefix string, count int) (string, error)) {
	t.Helper()
	next := map[int32]int64{} // the offset each partition's next record gets
	for _, round := range []struct {
		prefix string
		count  int
	}{{"first", 6}, {"second", 4}} {
		out, err := runScript(round.prefix, round.count)
		if err != nil {
			t.Fatalf("%s run: %v", round.prefix, err)
		}
		var rep groupReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s run: stdout is not the JSON report: %v", round.prefix, err)
		}
		if len(rep.Produced) != round.count {
			t.Fatalf("%s run produced %d records, want %d", round.prefix, len(rep.Produced), round.count)
		}
		for i, r := range rep.Produced {
			if want := fmt.Sprintf("%s-key-%d", round.prefix, i); r.Key != want {
				t.Fatalf("%s run: produced record %d has key %q, want %q", round.prefix, i, r.Key, want)
			}
			// Offsets continue each partition's log with no gaps.
			if r.Offset != next[r.Partition] {
				t.Fatalf("%s run produced %+v, want offset %d", round.prefix, r, next[r.Partition])
			}
			next[r.Partition]++
		}
		sortRecords(rep.Produced)
		sortRecords(rep.Consumed)
		if !slices.Equal(rep.Consumed, rep.Produced) {
			t.Fatalf("%s run consumed\n%v\nwant exactly what it produced\n%v", round.prefix, rep.Consumed, rep.Produced)
		}

		ends := endOffsets(t, adm, topic)
		fromBroker := committed(t, adm, group, topic)
		for p := range partitions {
			if ends[p] != next[p] {
				t.Fatalf("partition %d ends at %d, want %d", p, ends[p], next[p])
			}
			if ends[p] == 0 {
				continue // never read, so maybe never committed
			}
			if c := rep.Committed[strconv.Itoa(int(p))]; c == nil || *c != ends[p] || fromBroker[p] != ends[p] {
				t.Fatalf("%s run, partition %d: committed %v (script) %d (broker), want the end %d", round.prefix, p, c, fromBroker[p], ends[p])
			}
		}
	}
}
