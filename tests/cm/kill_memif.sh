#!/usr/bin/env bash
# kill_memif.sh UROCE
# An rping server killed with SIGKILL, on a direct memif pair (no uroced: nobody can send its DREQ). The
# client's CM sees its port's link go down, which on a direct pair means the only peer process is gone,
# and ends its connections (provider/cm_service.cc): without that, rping, which has no request outstanding
# between pings, would wait for the server's next message forever.
#  1. after ESTABLISHED, mid-traffic: the client must print its DISCONNECT EVENT;
#  2. the client killed the same way: the server must print its DISCONNECT EVENT.
# Each wait is bounded at 10 s (the alternative is forever); the time from the kill is printed, not asserted.
# (A connection being set up when the peer dies is not tested here: a stopped memif server never completes
# the memif handshake, so there is no link whose loss the client could see; its REQ retries end it.)
set -u
uroce=$1
. "$(dirname "$0")/../lib/uroce_test_env.sh"
. "$(dirname "$0")/kill_lib.sh"
command -v rping >/dev/null || { echo "SKIP: rping not installed (rdmacm-utils)"; exit 77; }
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
spid= cpid=
trap '[ -z "$spid" ] || kill -9 $spid 2>/dev/null; [ -z "$cpid" ] || kill -9 $cpid 2>/dev/null; rm -rf "$dir"' EXIT
port=$((20000 + ($$ + 19) % 20000))
fail() {
  echo "FAIL: $*"
  for f in server client; do echo "== $f"; grep -v "^ping data" "$dir/$f.log" 2>/dev/null | tail -30; done
  exit 1
}
# No `timeout` wrapper: $spid must be rping itself (`uroce run` execs it).
start_server() {  # N
  UROCE_UCMA_TRACE=1 UROCE_PORT="memif:socket=$dir/m$1.sock,role=server" "$uroce" run --ip 127.1.0.1 \
    -- rping -s -a 127.1.0.1 -p "$port" >"$dir/server.log" 2>&1 &
  spid=$!
  wait_cm_listen "$dir/server.log" "$spid" || fail "the server never listened"
}
start_client() {  # N ARGS...
  local n=$1
  shift
  UROCE_PORT="memif:socket=$dir/m$n.sock,role=client" "$uroce" run --ip 127.1.0.2 \
    -- rping -c -a 127.1.0.1 -p "$port" "$@" >"$dir/client.log" 2>&1 &
  cpid=$!
}
kill_server_then_wait() {  # PATTERN WHAT: kills the server, waits for PATTERN in the client's output
  kill_server_and_wait "$1" "$2"
  cpid=
  echo "== $2: '$1' $ms ms after the kill"
}

start_server 1
start_client 1 -v
enough_pings() { [ "$(grep -c '^ping data' "$dir/client.log" 2>/dev/null)" -ge 50 ] 2>/dev/null; }
wait_for 20 enough_pings || fail "no traffic"
kill_server_then_wait "client DISCONNECT EVENT" "after ESTABLISHED"
est_ms=$ms

# 2. the other way round: the client killed, the server (whose port is the memif server) is told.
start_server 2
start_client 2 -v
wait_for 20 enough_pings || fail "no traffic (2)"
kill -9 $cpid
t0=$(date +%s%N)
wait $cpid 2>/dev/null
cpid=
wait_for 10 log_has "$dir/server.log" "server DISCONNECT EVENT" || fail "client killed: no server DISCONNECT EVENT"
ms=$(ms_since $t0)
echo "== client killed: the server's DISCONNECT EVENT $ms ms after the kill"
echo "PASS: on a direct memif pair a killed peer's connection is DISCONNECTED in $est_ms ms (server killed)," \
  "$ms ms (client killed)"
