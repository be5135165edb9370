#!/usr/bin/env bash
# Time to ready, measured: from `docker run` to the first answered
# ApiVersions, and to Docker reporting the container healthy, over RUNS
# containers (20 by default); prints the median, min and max of each.
#
#   bash bench/ready.sh [IMAGE]        # IMAGE defaults to sharebroker:dev
#   RUNS=5 HEALTH_INTERVAL=1s bash bench/ready.sh sharebroker:dev
#
# Each container runs on the host's network on free loopback ports (as
# .ci/container-test.sh runs them) with the health check probed every
# HEALTH_INTERVAL (1s, as docs/ci.md's recipes set it; the image's own is
# 10s). Docker runs the first probe one interval after the start, so the
# healthy time is about that interval plus the probe. The clock starts just
# before `docker run`, which returns once the container has started.
#
# Each run also starts the static binary the image holds (bin/sharebroker,
# `make build`) without Docker and times it to its first ApiVersions
# answer, so the table separates the broker's own start from Docker's.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/apiversions.sh
IMAGE="${1:-sharebroker:dev}"
RUNS="${RUNS:-20}"
HEALTH_INTERVAL="${HEALTH_INTERVAL:-1s}"
name="sharebroker-ready-$$"
trap 'docker rm -f "$name" >/dev/null 2>&1 || true' EXIT

# nap: a 1 ms pause between probes without forking (read times out on a
# pipe nobody writes to), so the polling loop leaves the cores to the
# container starting.
exec 9<> <(:)
nap() { read -r -t 0.001 -u 9 _ || true; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

started=() api=() health=() tries=() native=()
bin=bin/sharebroker
for run in $(seq "$RUNS"); do
  kafka=$(free_port) http=$(free_port)
  start=$(date +%s%N)
  docker run -d --name "$name" --network host \
    -e SHAREBROKER_LISTEN="127.0.0.1:$kafka" -e SHAREBROKER_HTTP="127.0.0.1:$http" \
    --health-interval "$HEALTH_INTERVAL" --health-start-period "$HEALTH_INTERVAL" "$IMAGE" >/dev/null
  started+=("$(ms_since "$start")")
  deadline=$((SECONDS + 30)) n=1
  until apiversions_probe 127.0.0.1 "$kafka"; do
    n=$((n + 1))
    nap
    [ "$SECONDS" -lt "$deadline" ] || { echo "ready: run $run: no ApiVersions answer within 30 s" >&2; docker logs "$name" >&2; exit 1; }
  done
  api+=("$(ms_since "$start")") tries+=("$n")
  until [ "$(docker inspect -f '{{.State.Health.Status}}' "$name")" = healthy ]; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "ready: run $run: not healthy within 30 s" >&2; exit 1; }
    sleep 0.02
  done
  health+=("$(ms_since "$start")")
  docker rm -f "$name" >/dev/null

  if [ -x "$bin" ]; then
    kafka=$(free_port) http=$(free_port)
    start=$(date +%s%N)
    "$bin" serve --listen "127.0.0.1:$kafka" --http "127.0.0.1:$http" >/dev/null 2>&1 &
    pid=$!
    deadline=$((SECONDS + 30))
    until apiversions_probe 127.0.0.1 "$kafka"; do
      nap
      [ "$SECONDS" -lt "$deadline" ] || { echo "ready: run $run: the binary answered no ApiVersions" >&2; kill "$pid"; exit 1; }
    done
    native+=("$(ms_since "$start")")
    kill "$pid" && wait "$pid" 2>/dev/null || true
  fi
  echo "run $run: docker run returned ${started[-1]} ms, ApiVersions ${api[-1]} ms (probe ${tries[-1]}), healthy ${health[-1]} ms${native:+, binary ${native[-1]} ms}" >&2
done

summary() { printf '%s\n' "$@" | sort -n | awk 'NR == 1 { min = $1 } { max = $1 } END { printf "min %s ms, max %s ms", min, max }'; }
echo "image $IMAGE, $RUNS runs, health interval $HEALTH_INTERVAL"
echo "docker run -> docker run returned:      median $(printf '%s\n' "${started[@]}" | median) ms ($(summary "${started[@]}"))"
echo "docker run -> first ApiVersions answer: median $(printf '%s\n' "${api[@]}" | median) ms ($(summary "${api[@]}"))"
echo "docker run -> healthy:                  median $(printf '%s\n' "${health[@]}" | median) ms ($(summary "${health[@]}"))"
if [ ${#native[@]} -gt 0 ]; then
  echo "binary start -> first ApiVersions answer: median $(printf '%s\n' "${native[@]}" | median) ms ($(summary "${native[@]}"))"
fi
