#!/usr/bin/env bash
# Two architectures (issue 23): build the static binary for linux/amd64 and
# linux/arm64 (`make binaries`), and run the arm64 one under Debian's
# qemu-user-static: `version`, then `serve` on free loopback ports until it
# answers an ApiVersions request. Without qemu (not installable) it says so
# and checks only that the arm64 binary is an aarch64 executable.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"
say() { echo "two-arch: $*"; }
t0=$SECONDS

make binaries
# The ELF header names the machine: 0xb7 (183) is aarch64, 0x3e x86-64.
machine() { od -An -tu2 -j18 -N2 "$1" | tr -d ' '; }
[ "$(machine bin/sharebroker-arm64)" = 183 ] || { say "bin/sharebroker-arm64 is not an aarch64 executable"; exit 1; }
[ "$(machine bin/sharebroker-amd64)" = 62 ] || { say "bin/sharebroker-amd64 is not an x86-64 executable"; exit 1; }

if ! command -v qemu-aarch64-static >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  say "installing qemu-user-static"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-user-static; } >/dev/null 2>&1 ||
    say "apt-get install qemu-user-static failed"
fi
if ! command -v qemu-aarch64-static >/dev/null 2>&1; then
  say "SKIPPED running the arm64 binary: qemu-user-static is not installed (built and checked only)"
  exit 0
fi

say "$(qemu-aarch64-static bin/sharebroker-arm64 version) under qemu-aarch64-static"
. bench/apiversions.sh
kafka=$(free_port) http=$(free_port)
log=$(mktemp)
qemu-aarch64-static bin/sharebroker-arm64 serve --listen "127.0.0.1:$kafka" --http "127.0.0.1:$http" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -f "$log"' EXIT
deadline=$((SECONDS + 60))
until apiversions_probe 127.0.0.1 "$kafka"; do
  if ! kill -0 "$pid" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
    say "the arm64 broker answered no ApiVersions within 60 s; its log:"
    sed 's/^/  /' "$log"
    exit 1
  fi
  sleep 0.1
done
say "the arm64 broker answered ApiVersions on 127.0.0.1:$kafka"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
[ "$status" = 0 ] || { say "the arm64 broker exited $status on SIGTERM"; exit 1; }
say "passed in $((SECONDS - t0)) s"
