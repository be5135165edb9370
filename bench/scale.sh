#!/bin/sh
# scale.sh runs the scale sweeps (BenchmarkScale*: partitions, topics,
# members, idle connections, one partition) and prints one table per
# sweep: each point's sharebroker and kfake medians per metric and the
# ratio sharebroker/kfake, then, for sharebroker, the largest point's
# figure over the smallest point's (issue 22: 4096 partitions at most 2x
# the CPU per record of 16).
#
#   bench/scale.sh                       # what `make bench-scale` runs
#   ROUNDS=1 bench/scale.sh              # one round
#   SHAREBROKER_BENCH_SCALE_MEMBERS=1,4 BENCH=ScaleShareMembers bench/scale.sh
#   bench/scale.sh -parse FILE           # only summarise saved output
#
# Each round is one `go test -count=1 -benchtime 1x` run of every sweep
# (BENCH, a -bench pattern, default '^BenchmarkScale'), so at each point
# the two peers run next to each other in time; ROUNDS rounds (default 3)
# give the medians. Each round is bounded by TIMEOUT (a go test -timeout,
# default 30m), so the whole run by ROUNDS x TIMEOUT; it prints how long
# each round and the whole run took. At the default points the members,
# connections and one-partition sweeps took about two minutes a round on
# 2 shared cores (three rounds: 6 minutes); the partitions and topics
# sweeps add their own.
#
# The sweeps skip themselves unless SHAREBROKER_BENCH_SCALE=1, which this
# script sets; SHAREBROKER_BENCH_SCALE_<AXIS>=a,b,c picks a sweep's points
# (bench/scale_test.go). Any arguments are passed to `go test` after the
# defaults. For records/s higher is better; for every other metric (CPU
# per record, ns per topic, peak RSS, KB per connection) lower is.
set -eu

GO=${GO:-go}
out=$(mktemp)
trap 'rm -f "$out" "$out.rc"' EXIT

if [ "${1:-}" = "-parse" ]; then
	cat "$2" >"$out"
else
	started=$(date +%s)
	round=0
	while [ "$round" -lt "${ROUNDS:-3}" ]; do
		round=$((round + 1))
		t0=$(date +%s)
		# Keep go test's exit status through the pipe.
		{ SHAREBROKER_BENCH_SCALE=1 "$GO" test -run '^$' -bench "${BENCH:-^BenchmarkScale}" \
			-benchtime 1x -count=1 -timeout "${TIMEOUT:-30m}" "$@" ./bench/ 2>&1; echo $? >"$out.rc"; } | tee -a "$out"
		rc=$(cat "$out.rc")
		echo "round $round: $(($(date +%s) - t0)) s"
		[ "$rc" -eq 0 ] || exit "$rc"
	done
fi

awk '
function num(x) {
	return (x < 100 && x > -100) ? sprintf("%.2f", x) : sprintf("%.0f", x)
}
function ratio(a, b) {
	if (b == 0) return "-"
	return (a / b < 0.1) ? sprintf("%.2g", a / b) : sprintf("%.2f", a / b)
}
function median(key,    n, i, j, v, t) {
	n = cnt[key]
	for (i = 1; i <= n; i++) v[i] = vals[key, i]
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j-1] > v[j]; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
	if (n % 2) return v[(n+1)/2]
	return (v[n/2] + v[n/2+1]) / 2
}
# Lines such as
#   BenchmarkScaleSharePartitions/partitions=16/sharebroker-2  1  123 ns/op  456 HWM-KB  7.8 server-cpu-ns/record
# give sweep SharePartitions, point partitions=16 (value 16), peer
# sharebroker. ns/op, B/op and allocs/op time a whole op with its setup
# (the sweeps report their own figures) and are left out.
/^BenchmarkScale/ {
	name = $1
	sub(/-[0-9]+$/, "", name)
	sub(/^BenchmarkScale/, "", name)
	np = split(name, parts, "/")
	if (np < 3 || parts[np-1] !~ /^[^=]+=[0-9]+$/) next
	peer = parts[np]; point = parts[np-1]
	sweep = parts[1]
	for (i = 2; i < np - 1; i++) sweep = sweep "/" parts[i]
	if (!(sweep in seenSweep)) { seenSweep[sweep] = 1; sweeps[++nsweeps] = sweep }
	if (!((sweep, point) in seenPoint)) {
		seenPoint[sweep, point] = 1
		points[sweep, ++npoints[sweep]] = point
		split(point, pv, "=")
		pointVal[sweep, point] = pv[2] + 0
	}
	if (!(peer in seenPeer)) { seenPeer[peer] = 1 }
	for (i = 3; i <= NF; i++) {
		m = $i
		if (m !~ /[a-zA-Z]/ || m == "ns/op" || m == "B/op" || m == "allocs/op") continue
		if ($(i-1) !~ /^-?[0-9.e+]+$/) continue
		if (!((sweep, m) in seenMetric)) {
			seenMetric[sweep, m] = 1
			metrics[sweep, ++nmetrics[sweep]] = m
		}
		key = sweep SUBSEP point SUBSEP peer SUBSEP m
		vals[key, ++cnt[key]] = $(i-1)
	}
}
END {
	for (s = 1; s <= nsweeps; s++) {
		sweep = sweeps[s]
		printf "\nScale%s\n%-20s %-24s %14s %14s %8s\n", sweep, "point", "metric", "sharebroker", "kfake", "ratio"
		lo = ""; hi = ""
		for (p = 1; p <= npoints[sweep]; p++) {
			point = points[sweep, p]
			if (lo == "" || pointVal[sweep, point] < pointVal[sweep, lo]) lo = point
			if (hi == "" || pointVal[sweep, point] > pointVal[sweep, hi]) hi = point
			for (k = 1; k <= nmetrics[sweep]; k++) {
				m = metrics[sweep, k]
				sbk = sweep SUBSEP point SUBSEP "sharebroker" SUBSEP m
				kfk = sweep SUBSEP point SUBSEP "kfake" SUBSEP m
				if (!(sbk in cnt) && !(kfk in cnt)) continue
				sb = (sbk in cnt) ? median(sbk) : ""
				kf = (kfk in cnt) ? median(kfk) : ""
				printf "%-20s %-24s %14s %14s %8s\n", point, m, \
					(sb == "") ? "-" : num(sb), (kf == "") ? "-" : num(kf), \
					(sb == "" || kf == "") ? "-" : ratio(sb, kf)
			}
		}
		if (lo == hi) continue
		printf "sharebroker %s over %s:", hi, lo
		for (k = 1; k <= nmetrics[sweep]; k++) {
			m = metrics[sweep, k]
			hk = sweep SUBSEP hi SUBSEP "sharebroker" SUBSEP m
			lk = sweep SUBSEP lo SUBSEP "sharebroker" SUBSEP m
			if ((hk in cnt) && (lk in cnt)) printf " %s %s", m, ratio(median(hk), median(lk))
		}
		printf "\n"
	}
}' "$out"

if [ "${1:-}" != "-parse" ]; then
	echo "scale run: ${ROUNDS:-3} rounds in $(($(date +%s) - started)) s"
fi
