#!/usr/bin/env bash
# Container test: build the image, run it, produce and share-consume through
# it, scrape /metrics, wait for the health check, stop it cleanly. It uses a
# running Docker daemon if one answers, else starts one of its own in the
# background (own socket, data root, no bridge, no iptables) and stops it at
# the end. It skips, saying why, only when no daemon can be reached at all.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"
IMAGE="${IMAGE:-sharebroker:ci}"

say() { echo "container-test: $*"; }
skip() {
  say "SKIPPED: $* (no Docker daemon reachable; the image was not tested)"
  exit 0
}

if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    say "installing docker.io"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io; } >/dev/null 2>&1 ||
      say "apt-get install docker.io failed"
  fi
fi
command -v docker >/dev/null 2>&1 || skip "no docker client"
# Kafka's single-node compose examples run under docker-compose
# (internal/containertest, TestContainerKafkaExamples; Debian's is 1.29).
if ! command -v docker-compose >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  say "installing docker-compose"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose; } >/dev/null 2>&1 ||
    say "apt-get install docker-compose failed"
fi

state=""
daemon_pid=""
cleanup() {
  if [ -n "$daemon_pid" ]; then
    kill -TERM "$daemon_pid" 2>/dev/null || true
    timeout 30 tail --pid="$daemon_pid" -f /dev/null || kill -KILL "$daemon_pid" 2>/dev/null || true
  fi
  if [ -n "$state" ]; then
    # dockerd leaves its network namespace mounted under its exec root.
    awk -v root="$state" 'index($2, root) == 1 { print $2 }' /proc/mounts | sort -r |
      while read -r m; do umount -l "$m" 2>/dev/null || true; done
    rm -rf "$state" 2>/dev/null || say "left $state behind"
  fi
}
trap cleanup EXIT

if ! timeout 20 docker info >/dev/null 2>&1; then
  command -v dockerd >/dev/null 2>&1 || skip "no daemon answers and dockerd is not installed"
  state="$(mktemp -d /tmp/sharebroker-docker.XXXXXX)"
  export DOCKER_HOST="unix://$state/docker.sock"
  say "starting dockerd on $DOCKER_HOST"
  dockerd --host "$DOCKER_HOST" --data-root "$state/data" --exec-root "$state/exec" \
    --pidfile "$state/dockerd.pid" --bridge=none --iptables=false >"$state/dockerd.log" 2>&1 &
  daemon_pid=$!
  up=""
  for _ in $(seq 60); do
    if timeout 5 docker info >/dev/null 2>&1; then up=1; break; fi
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 1
  done
  if [ -z "$up" ]; then
    say "dockerd did not come up; its log ends:"
    tail -n 20 "$state/dockerd.log" | sed 's/^/  dockerd: /'
    skip "dockerd could not be started here"
  fi
fi
say "docker $(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?') answers"

make image-context
say "building $IMAGE"
timeout 300 docker build -q -t "$IMAGE" . >/dev/null
SHAREBROKER_CONTAINER_IMAGE="$IMAGE" go test -count=1 -timeout 5m -v -run '^TestContainer' ./internal/containertest
# Issue 23: the testcontainers module (Go) and the Node.js example against
# this image, the CI recipes (compose run), the arm64 image.
IMAGE="$IMAGE" bash .ci/testcontainers-test.sh
timeout 60 docker image rm -f "$IMAGE" >/dev/null 2>&1 || true
