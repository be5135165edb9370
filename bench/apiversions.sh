# apiversions_probe HOST PORT: sends one ApiVersions v0 request (correlation
# ID 7, null client ID) on a new connection and succeeds when the answer
# carries correlation ID 7 and error code 0. Pure bash (/dev/tcp) plus
# head/od/timeout, so it needs no Kafka client; bench/ready.sh and the CI
# script's arm64 check source it.
apiversions_probe() {
  local got
  { exec 3<>"/dev/tcp/$1/$2"; } 2>/dev/null || return 1
  # size 10 | api key 18 | version 0 | correlation ID 7 | client ID null
  printf '\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x07\xff\xff' >&3 2>/dev/null || { exec 3<&-; return 1; }
  got=$(timeout 2 head -c 10 <&3 | od -An -tx1 | tr -d ' \n')
  exec 3<&-
  # Bytes 4-9 of the answer: correlation ID 7, error code 0.
  [ "${got:8:12}" = "000000070000" ]
}

# free_port: a TCP port free on 127.0.0.1 now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
