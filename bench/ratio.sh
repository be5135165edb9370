#!/bin/sh
# ratio.sh runs the benchmarks and prints sharebroker's figures beside
# kfake's, with the ratio sharebroker/kfake, as medians over -count runs.
#
#   bench/ratio.sh                      # ./bench/, 3 rounds
#   ROUNDS=1 bench/ratio.sh ./...       # what `make bench` runs
#   bench/ratio.sh -parse FILE          # only summarise saved output
#
# Any arguments are passed to `go test` after the defaults. Each round is
# one `go test -count=1` run, so the two peers of a benchmark run next to
# each other in time (-count=3 would run one peer three times, then the
# other, and shared-machine load drifts between them). For records/s
# higher is better (goals: Produce >= 1.5, Fetch >= 1, ShareConsume >= 3);
# for every other metric (allocs/batch, CPU and bytes per record, RSS,
# lock-expiry lateness) lower is better.
#
# A pair named X/sharebroker-console-closed and X/sharebroker-console-open
# (BenchmarkShareServerConsole) is printed in a second table, open beside
# closed with the ratio open/closed (console-live-bound: server-cpu-ns/record
# may rise by at most 10%, a ratio of 1.10).
#
# BenchmarkShareLockLateness is skipped unless SHAREBROKER_BENCH_LATENESS=1
# is in the environment (it takes ~25 s per peer per round):
#
#   SHAREBROKER_BENCH_LATENESS=1 ROUNDS=1 bench/ratio.sh
set -eu

GO=${GO:-go}
out=$(mktemp)
trap 'rm -f "$out" "$out.rc"' EXIT

if [ "${1:-}" = "-parse" ]; then
	cat "$2" >"$out"
else
	[ $# -eq 0 ] && set -- ./bench/
	round=0
	while [ "$round" -lt "${ROUNDS:-3}" ]; do
		round=$((round + 1))
		# Keep go test's exit status through the pipe.
		{ "$GO" test -run '^$' -bench . -benchmem -count=1 -timeout 30m "$@" 2>&1; echo $? >"$out.rc"; } | tee -a "$out"
		rc=$(cat "$out.rc")
		[ "$rc" -eq 0 ] || exit "$rc"
	done
fi

awk '
function num(x) {
	return (x < 100 && x > -100) ? sprintf("%.2f", x) : sprintf("%.0f", x)
}
function median(key,    n, i, j, v, t) {
	n = cnt[key]
	for (i = 1; i <= n; i++) v[i] = vals[key, i]
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j-1] > v[j]; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
	if (n % 2) return v[(n+1)/2]
	return (v[n/2] + v[n/2+1]) / 2
}
BEGIN {
	n = split("records/s allocs/batch B/batch ms/start idle-RSS-KB " \
		"cpu-ns/record server-cpu-ns/record client-cpu-ns/record B/record " \
		"RSS-produced-KB RSS-consumed-KB HWM-KB lateness-p50-ms lateness-p99-ms " \
		"console-views/op console-clocks/op console-view-KB", w, " ")
	for (i = 1; i <= n; i++) wanted[w[i]] = 1
}
/^Benchmark/ {
	name = $1
	sub(/-[0-9]+$/, "", name)
	sub(/^Benchmark/, "", name)
	for (i = 3; i <= NF; i++) {
		m = $i
		if (!(m in wanted)) continue
		key = name SUBSEP m
		if (!(key in cnt)) { order[++nkeys] = key }
		vals[key, ++cnt[key]] = $(i-1)
	}
}
END {
	printf "\n%-36s %-22s %14s %14s %8s\n", "benchmark", "metric", "sharebroker", "kfake", "ratio"
	for (k = 1; k <= nkeys; k++) {
		split(order[k], parts, SUBSEP)
		name = parts[1]; m = parts[2]
		if (name ~ /\/kfake$/ || name ~ /-console-closed$/) continue
		if (name ~ /-console-open$/) { console[++nconsole] = order[k]; continue }
		if (name ~ /\/sharebroker$/) {
			base = substr(name, 1, length(name) - length("/sharebroker"))
			sb = median(order[k])
			other = base "/kfake" SUBSEP m
			if (other in cnt) {
				kf = median(other)
				ratio = (kf == 0) ? "-" : (sb / kf < 0.1) ? sprintf("%.2g", sb / kf) : sprintf("%.2f", sb / kf)
				printf "%-36s %-22s %14s %14s %8s\n", base, m, num(sb), num(kf), ratio
			} else {
				printf "%-36s %-22s %14s %14s %8s\n", base, m, num(sb), "-", "-"
			}
		} else {
			printf "%-36s %-22s %14s %14s %8s\n", name, m, num(median(order[k])), "-", "-"
		}
	}
	if (nconsole == 0) exit
	printf "\n%-40s %-22s %14s %14s %8s\n", "benchmark", "metric", "console-open", "closed", "ratio"
	for (k = 1; k <= nconsole; k++) {
		split(console[k], parts, SUBSEP)
		name = parts[1]; m = parts[2]
		base = substr(name, 1, length(name) - length("-open"))
		op = median(console[k])
		other = base "-closed" SUBSEP m
		if (other in cnt) {
			cl = median(other)
			printf "%-40s %-22s %14s %14s %8s\n", base, m, num(op), num(cl), (cl == 0) ? "-" : sprintf("%.3f", op / cl)
		} else {
			printf "%-40s %-22s %14s %14s %8s\n", base, m, num(op), "-", "-"
		}
	}
}' "$out"
