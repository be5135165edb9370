# apiversions_probe HOST PORT: sends one ApiVersions v0 request on a new
# connection and succeeds when an answer carrying its correlation ID comes
# back within 2 s. bash builtins only (/dev/tcp, read), so it needs no Kafka
# client and forks nothing: a polling loop of it stays cheap.
# bench/ready.sh and .ci/two-arch.sh source it.
apiversions_probe() {
  local got
  { exec 3<>"/dev/tcp/$1/$2"; } 2>/dev/null || return 1
  # size 10 | api key 18 | version 0 | correlation ID "ABCD" | client ID null
  printf '\x00\x00\x00\x0a\x00\x12\x00\x00\x41\x42\x43\x44\xff\xff' >&3 2>/dev/null || { exec 3<&-; return 1; }
  # The answer's first 10 bytes: size, correlation ID, error code. bash
  # drops NUL bytes, so the check is the correlation ID alone: any answer
  # to this request means the broker serves Kafka requests.
  IFS= read -r -d '' -N 10 -t 2 -u 3 got 2>/dev/null || true
  exec 3<&-
  [[ "$got" == *ABCD* ]]
}

# free_port: a TCP port free on 127.0.0.1 now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
