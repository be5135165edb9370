package bench_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestScaleTable feeds bench/scale.sh -parse benchmark lines in the shape
// the scale sweeps print, including sweeps other than this file's
// neighbours define (partitions, topics), and checks the table: medians
// over rounds, the sharebroker/kfake ratio, a peer missing at a point,
// the largest point over the smallest, and other benchmarks left out.
func TestScaleTable(t *testing.T) {
	if _, err := exec.LookPath("awk"); err != nil {
		t.Skip("no awk on PATH")
	}
	lines := `goos: linux
BenchmarkScaleSharePartitions/partitions=16/sharebroker-2   	1	24816 ns/op	51728 HWM-KB	522071 records/s	130.0 server-cpu-ns/record
BenchmarkScaleSharePartitions/partitions=16/kfake-2         	1	30667 ns/op	75516 HWM-KB	306928 records/s	760 server-cpu-ns/record
BenchmarkScaleSharePartitions/partitions=4096/sharebroker-2 	1	24816 ns/op	61728 HWM-KB	422071 records/s	250.0 server-cpu-ns/record
BenchmarkScaleSharePartitions/partitions=4096/kfake-2       	1	30667 ns/op	95516 HWM-KB	206928 records/s	2800 server-cpu-ns/record
BenchmarkScaleSharePartitions/partitions=16/sharebroker-2   	1	24816 ns/op	51728 HWM-KB	522071 records/s	150.0 server-cpu-ns/record
BenchmarkScaleSharePartitions/partitions=16/kfake-2         	1	30667 ns/op	75516 HWM-KB	306928 records/s	800 server-cpu-ns/record
BenchmarkScaleSharePartitions/partitions=16/sharebroker-2   	1	24816 ns/op	51728 HWM-KB	522071 records/s	110.0 server-cpu-ns/record
BenchmarkScaleMetadata/topics=20000/sharebroker-2           	1	24816 ns/op	1400 ns/topic
BenchmarkScaleMetadata/topics=20000/kfake-2                 	1	24816 ns/op	1900 ns/topic
BenchmarkScaleIdleConns/conns=5000/sharebroker-2            	1	26009 ns/op	42276 HWM-KB	8.10 KB/conn	635486 records/s	416.3 server-cpu-ns/record
BenchmarkScaleCreateTopics/topics=10000/sharebroker-2       	1	24816 ns/op	40000 ns/topic	38000 server-cpu-ns/topic
BenchmarkScaleCreateTopics/topics=10000/kfake-2             	1	24816 ns/op	14000 ns/topic
BenchmarkShareServer/sharebroker-2                          	1	24816 ns/op	99999 HWM-KB
--- SKIP: BenchmarkScaleShareMembers
PASS
`
	in := filepath.Join(t.TempDir(), "bench.txt")
	if err := os.WriteFile(in, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", "scale.sh", "-parse", in).CombinedOutput()
	if err != nil {
		t.Fatalf("scale.sh -parse: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range [][]string{
		{"ScaleSharePartitions"},
		// medians of 130, 150, 110 and of 760, 800
		{"partitions=16", "server-cpu-ns/record", "130", "780", "0.17"},
		{"partitions=4096", "server-cpu-ns/record", "250", "2800", "0.089"},
		{"partitions=4096", "records/s", "422071", "206928", "2.04"},
		{"sharebroker", "partitions=4096", "over", "partitions=16:", "HWM-KB", "1.19", "records/s", "0.81", "server-cpu-ns/record", "1.92"},
		{"ScaleMetadata"},
		{"topics=20000", "ns/topic", "1400", "1900", "0.74"},
		{"conns=5000", "KB/conn", "8.10", "-", "-"},
		{"topics=10000", "server-cpu-ns/topic", "38000", "-", "-"},
		{"topics=10000", "ns/topic", "40000", "14000", "2.86"},
	} {
		if !hasLine(got, want) {
			t.Errorf("no line with fields %q in\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"ns/op", "99999", "ShareServer", "ScaleShareMembers"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("%q in the table:\n%s", unwanted, got)
		}
	}
}

// hasLine reports whether some line of s has exactly the fields want.
func hasLine(s string, want []string) bool {
	for _, line := range strings.Split(s, "\n") {
		if strings.Join(strings.Fields(line), " ") == strings.Join(want, " ") {
			return true
		}
	}
	return false
}
