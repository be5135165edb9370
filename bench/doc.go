// Package bench holds benchmarks only: its _test.go files run one workload
// against sharebroker and against franz-go's kfake in the same process and
// report both, so the ratio comes from one run on one machine. Run them with
// `make bench` or bench/ratio.sh; `go test ./...` only compiles them.
package bench
