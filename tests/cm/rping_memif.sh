#!/usr/bin/env bash
# rping_memif.sh UROCE
# rping between two processes joined by a direct memif pair, no host switch (GIDs ::ffff:127.1.0.1 and
# ::ffff:127.1.0.2): the client names the server's own address, which is the GID its REQ goes to. Then a
# client to a port nobody listens on: the server's CM answers the REQ with REJ 8 on the wire, and the
# client reports RDMA_CM_EVENT_REJECTED, error 8 at once.
set -u
uroce=$1
. "$(dirname "$0")/../lib/uroce_test_env.sh"
command -v rping >/dev/null || { echo "SKIP: rping not installed (rdmacm-utils)"; exit 77; }
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
spid=
trap '[ -z "$spid" ] || kill $spid 2>/dev/null; rm -rf "$dir"' EXIT
port=$((20000 + $$ % 20000))
fail() {
  echo "FAIL: $*"
  echo "== server"; grep -v "^uroce ucma:" "$dir/server.log"
  echo "== client"; cat "$dir/client.log" 2>/dev/null
  exit 1
}
# The server serves two connections: the real one, and it stays up for the rejected one.
start_server() {
  UROCE_UCMA_TRACE=1 UROCE_PORT="memif:socket=$dir/m$1.sock,role=server" timeout 30 "$uroce" run --ip 127.1.0.1 \
    -- rping -s -a 127.1.0.1 -p "$port" -v -C 10 >"$dir/server.log" 2>&1 &
  spid=$!
  wait_cm_listen "$dir/server.log" "$spid" || fail "the server never listened"
}
client() {
  UROCE_PORT="memif:socket=$dir/m$1.sock,role=client" timeout 20 "$uroce" run --ip 127.1.0.2 \
    -- rping -c -a 127.1.0.1 -p "$2" -v -C 10 >"$dir/client.log" 2>&1
}

start_server 1
client 1 "$port"
reap_pair $?
[ "$(grep -c '^ping data: rdma-ping-' "$dir/client.log")" = 10 ] || fail "not 10 ping data lines"
echo "== connected over memif"; cat "$dir/client.log"

start_server 2
client 2 $((port + 1))
crc=$?
kill $spid 2>/dev/null
wait $spid 2>/dev/null
spid=
[ $crc != 124 ] || fail "the client to a port nobody listens on hung"
[ $crc != 0 ] || fail "the client to a port nobody listens on succeeded"
grep -q "RDMA_CM_EVENT_REJECTED, error 8" "$dir/client.log" || fail "no REJECTED 8 from the peer's CM"
echo "== rejected over memif"; cat "$dir/client.log"
echo "PASS"
