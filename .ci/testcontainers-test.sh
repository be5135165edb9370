#!/usr/bin/env bash
# Issue 23's container checks, run by .ci/container-test.sh once it has
# built IMAGE from this tree and a Docker daemon answers (DOCKER_HOST as it
# set it):
#   - the testcontainers Go module's tests against IMAGE (testcontainers/:
#     Run, the test API helpers, TLS/SASL, published ports, and the CI
#     recipes of docs/ci.md: YAML checks, the GitHub Actions service run as
#     the runner would, deploy/compose.yml run with docker-compose);
#   - the Node.js example (testcontainers/node: the testcontainers package
#     and kafkajs);
#   - the arm64 image (`make docker-arm64`), checked for its architecture.
# testcontainers' reaper (testcontainers/ryuk) is an image this machine
# cannot pull, so it is off (TESTCONTAINERS_RYUK_DISABLED=true).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"
: "${IMAGE:?IMAGE names the image built from this tree}"
export SHAREBROKER_CONTAINER_IMAGE="$IMAGE" TESTCONTAINERS_RYUK_DISABLED=true
say() { echo "testcontainers-test: $*"; }
t0=$SECONDS

cleanup() {
  docker image rm -f "$IMAGE-arm64" >/dev/null 2>&1 || true
  # testcontainers-go makes this network where the daemon has no "bridge";
  # it fails harmlessly while another run still uses it.
  docker network rm reaper_default >/dev/null 2>&1 || true
}
trap cleanup EXIT

# Debian's docker-compose 1.29 runs deploy/compose.yml (TestRecipeCompose
# fails under CI=true without it).
if ! command -v docker-compose >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  say "installing docker-compose"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose; } >/dev/null 2>&1 ||
    say "apt-get install docker-compose failed"
fi

t=$SECONDS
(cd testcontainers && go test -count=1 -timeout 5m ./...) 2>&1 | grep -v -E '^[0-9/: ]+(🐳|✅|🚫|🔔|⏳)' || exit 1
say "Go module: $((SECONDS - t)) s"

t=$SECONDS
# Exactly the versions in testcontainers/node/package-lock.json.
(cd testcontainers/node && npm ci --prefer-offline --no-audit --no-fund --loglevel=error && npm test)
say "Node.js example: $((SECONDS - t)) s"

t=$SECONDS
make docker-arm64 IMAGE="$IMAGE"
arch=$(docker image inspect -f '{{.Os}}/{{.Architecture}}' "$IMAGE-arm64")
[ "$arch" = linux/arm64 ] || { say "$IMAGE-arm64 is $arch, want linux/arm64"; exit 1; }
say "arm64 image $IMAGE-arm64 is $arch: $((SECONDS - t)) s"
say "passed in $((SECONDS - t0)) s"
