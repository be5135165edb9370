// Package bench holds benchmarks only: its _test.go files run one workload
// against sharebroker and against franz-go's kfake in the same process and
// report both, so the ratio comes from one run on one machine. Run them with
// `make bench` or bench/ratio.sh; `go test ./...` only compiles them (and
// checks bench/scale.sh's table, TestScaleTable).
//
// The scale sweeps (BenchmarkScale*: share partitions, topics, share
// members, idle connections, one partition) skip themselves unless
// SHAREBROKER_BENCH_SCALE=1; `make bench-scale` (bench/scale.sh) sets it,
// runs them in three interleaved rounds and prints one table per sweep.
// The members, connections and one-partition sweeps took about two
// minutes a round on 2 shared cores; the partitions and topics sweeps
// add their own.
package bench
