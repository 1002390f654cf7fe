#!/usr/bin/env bash
# kill_server.sh UROCE UROCED
# What an rping client sees when its server dies, both bare `uroce run` through the host switch uroced, and
# what uroced holds for a process afterwards.
#  1. Normal exit: a server and client that finish (-C 5) leave nothing in uroced: no CM port binding, no
#     tracked connection, `cm lookup` of the port refused, and uroced sent nothing on their behalf.
#  2. SIGKILL after ESTABLISHED, mid-traffic: nobody runs the server's exit handlers, so uroced sends the
#     DREQ its kernel would have sent (tools/uroced/cm_track.h). The client must print its DISCONNECT EVENT
#     (without the DREQ rping waits for the server's next message forever, as it has no request
#     outstanding; the wait is bounded at 10 s), uroced must count that one DREQ, the client must exit, and
#     uroced must hold nothing of either. The time from the kill is printed, not asserted.
set -u
uroce=$1 uroced=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
. "$(dirname "$0")/kill_lib.sh"
command -v rping >/dev/null || { echo "SKIP: rping not installed (rdmacm-utils)"; exit 77; }
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
unset UROCE_PORT
spid= cpid=
trap '[ -z "$spid" ] || kill -9 $spid 2>/dev/null; [ -z "$cpid" ] || kill -9 $cpid 2>/dev/null;
      "$uroced" --stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
port=$((20000 + ($$ + 11) % 20000))
fail() {
  echo "FAIL: $*"
  for f in server client; do echo "== $f"; grep -v "^ping data" "$dir/$f.log" 2>/dev/null | tail -30; done
  echo "== uroced"; "$uroced" --stats 2>&1 | head -1; cat "$dir"/uroce-*/uroced.log 2>/dev/null | tail -8
  exit 1
}
# No `timeout` wrapper: $spid must be rping itself (`uroce run` execs it), the process the test kills.
start_server() {  # ARGS...
  UROCE_UCMA_TRACE=1 "$uroce" run -- rping -s -a 127.0.0.1 -p "$port" "$@" >"$dir/server.log" 2>&1 &
  spid=$!
  wait_cm_listen "$dir/server.log" "$spid" || fail "the server never listened"
}
uroced_clean() {  # WHAT: uroced holds nothing of the test's processes
  wait_for 5 field_is leases 0 || fail "$1: leases left: $(uroced_field leases)"
  [ "$(uroced_field cm_binds)" = 0 ] || fail "$1: CM port bindings left: $(uroced_field cm_binds)"
  [ "$(uroced_field cm_conns)" = 0 ] || fail "$1: tracked CM connections left: $(uroced_field cm_conns)"
  local r
  r=$(cm_lookup 127.0.0.1 "$port")
  case $r in "error errno=111"*) ;; *) fail "$1: cm lookup of port $port: $r" ;; esac
}

# 1. normal exit
start_server -C 5
timeout 20 "$uroce" run -- rping -c -a 127.0.0.1 -p "$port" -v -C 5 >"$dir/client.log" 2>&1 ||
  fail "normal run: the client exited $?"
wait $spid || fail "normal run: the server exited $?"
spid=
uroced_clean "after a normal exit"
[ "$(uroced_field cm_dreq_sent)$(uroced_field cm_rej_sent)" = 00 ] || fail "uroced sent for processes that exited"
echo "== 1. normal exit: uroced holds nothing: $("$uroced" --stats | head -1)"

# 2. SIGKILL after ESTABLISHED
start_server
"$uroce" run -- rping -c -a 127.0.0.1 -p "$port" -v >"$dir/client.log" 2>&1 &
cpid=$!
enough_pings() { [ "$(grep -c '^ping data' "$dir/client.log")" -ge 50 ]; }
wait_for 20 enough_pings || fail "no traffic"
[ "$(uroced_field cm_conns)" = 1 ] || fail "uroced tracks $(uroced_field cm_conns) connections, not 1"
kill_server_and_wait "client DISCONNECT EVENT" "SIGKILL after ESTABLISHED"
cpid=
echo "== 2. SIGKILL: the client's DISCONNECT EVENT came $ms ms after the kill"
[ "$(uroced_field cm_dreq_sent)" = 1 ] || fail "uroced sent $(uroced_field cm_dreq_sent) DREQs, not 1"
uroced_clean "after SIGKILL"
grep -q "left 1 RDMA CM connections open: sent 1" "$dir"/uroce-*/uroced.log || fail "uroced did not log the DREQ"
echo "PASS: normal exit and SIGKILL leave nothing in uroced; the killed server's peer is DISCONNECTED in $ms ms"
