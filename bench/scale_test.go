package bench_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// The scale sweeps (BenchmarkScale*) measure how the broker's cost grows
// with partitions, topics, members and connections, each point on a fresh
// broker of each peer. They take minutes, so they run only when
// scaleEnv=1 is in the environment; `make bench-scale` sets it and prints
// the table.
//
// Every sweep names its points with scalePoints, so one run can take a
// subset: SHAREBROKER_BENCH_SCALE_PARTITIONS=16,4096 keeps two points of
// the partitions sweep.
const scaleEnv = "SHAREBROKER_BENCH_SCALE"

// skipUnlessScale skips b unless the scale sweeps were asked for.
func skipUnlessScale(b *testing.B) {
	b.Helper()
	if os.Getenv(scaleEnv) != "1" {
		b.Skipf("a scale sweep: set %s=1 (make bench-scale)", scaleEnv)
	}
}

// scalePoints returns the points of the sweep called axis (PARTITIONS,
// TOPICS, MEMBERS, CONNS, ...): those listed in scaleEnv_<axis> when it is
// set, else def. A malformed list fails the benchmark rather than running
// other points than asked.
func scalePoints(b *testing.B, axis string, def ...int) []int {
	b.Helper()
	name := scaleEnv + "_" + axis
	list := os.Getenv(name)
	if list == "" {
		return def
	}
	var points []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			b.Fatalf("%s=%q: %q is not a count", name, list, f)
		}
		points = append(points, n)
	}
	return points
}
