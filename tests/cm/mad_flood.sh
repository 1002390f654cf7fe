#!/usr/bin/env bash
# mad_flood.sh UROCE UROCED MAD_FLOOD
# Malformed MADs at an rping server's CM, both bare `uroce run` through uroced: another process's UD QP
# sends datagrams to the server's QP1 with the GSI Q_Key (tests/cm/mad_flood.cc: every MadError rule, random
# bytes, datagrams too short for a MAD). The server's CM must count each one that reached it (uroce stats
# "cm": rx_malformed + rx_short, plus what the device dropped for want of a QP1 receive buffer, adds up to
# what was sent), uroced must count the malformed ones it forwarded (cm_malformed), and the server must
# keep serving: an rping client (-C 5, data verified) connects after a flood and while another runs.
set -u
uroce=$1 uroced=$2 flood=$3
. "$(dirname "$0")/../lib/uroce_test_env.sh"
. "$(dirname "$0")/kill_lib.sh"
command -v rping >/dev/null || { echo "SKIP: rping not installed (rdmacm-utils)"; exit 77; }
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
unset UROCE_PORT
spid= fpid=
trap '[ -z "$spid" ] || kill -9 $spid 2>/dev/null; [ -z "$fpid" ] || kill -9 $fpid 2>/dev/null;
      "$uroced" --stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
port=$((20000 + ($$ + 17) % 20000))
fail() {
  echo "FAIL: $*"
  for f in server client flood flood2; do echo "== $f"; grep -v "^ping data" "$dir/$f.log" 2>/dev/null | tail -20; done
  echo "== server stats"; "$uroce" stats --json --pid "$spid" 2>&1 | head -c 3000
  echo "== uroced"; "$uroced" --stats 2>&1 | head -1
  exit 1
}
# A field of the server's `uroce stats --json`: SECTION KEY.
server_stat() {
  "$uroce" stats --json --pid "$spid" 2>/dev/null |
    /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)[0][sys.argv[1]].get(sys.argv[2], 0))' "$1" "$2"
}
counted() {  # the server's CM and device accounted for at least $1 datagrams
  local n
  n=$(($(server_stat cm rx_malformed) + $(server_stat cm rx_short) + $(server_stat device drop_ud_no_recv_wqe)))
  [ "$n" -ge "$1" ]
}
client() {
  timeout 20 "$uroce" run -- rping -c -a 127.0.0.1 -p "$port" -v -C 5 >"$dir/client.log" 2>&1 ||
    fail "$1: the client exited $?"
  [ "$(grep -c '^ping data: rdma-ping-' "$dir/client.log")" = 5 ] || fail "$1: not 5 ping data lines"
}

# No `timeout` wrapper: $spid must be rping itself, whose stats are read.
UROCE_UCMA_TRACE=1 "$uroce" run -- rping -s -P -a 127.0.0.1 -p "$port" -v -C 5 >"$dir/server.log" 2>&1 &
spid=$!
wait_cm_listen "$dir/server.log" "$spid" || fail "the server never listened"
gid=$("$uroce" stats --json --pid "$spid" | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["gid"])')

# 1. a flood, then a client
n=3000
timeout 40 "$uroce" run -- "$flood" "$gid" $n >"$dir/flood.log" 2>&1 || fail "the flood failed ($?)"
read -r _ sent _ malformed <"$dir/flood.log"
[ "$sent" = $n ] || fail "the flood sent $sent"
wait_for 10 counted $n || fail "the server accounted for fewer than $n datagrams"
echo "== after $n datagrams ($malformed malformed MADs): server cm rx_malformed=$(server_stat cm rx_malformed)" \
  "rx_short=$(server_stat cm rx_short) device drop_ud_no_recv_wqe=$(server_stat device drop_ud_no_recv_wqe);" \
  "uroced cm_malformed=$(uroced_field cm_malformed)"
[ "$(server_stat cm rx_malformed)" -gt 0 ] || fail "the server's CM counted no malformed MAD"
[ "$(uroced_field cm_malformed)" -ge "$malformed" ] || fail "uroced counted $(uroced_field cm_malformed) malformed"
client "after the flood"
echo "== a client connected after the flood"

# 2. a client while a flood runs
timeout 40 "$uroce" run -- "$flood" "$gid" 1000000000 >"$dir/flood2.log" 2>&1 &
fpid=$!
before=$(server_stat cm rx_malformed)
more() { [ "$(server_stat cm rx_malformed)" -gt "$before" ]; }
wait_for 20 more || fail "the second flood never reached the server"
client "during the flood"
kill -0 $fpid 2>/dev/null || fail "the flood ended before the client did: not a client during a flood"
echo "== a client connected during a flood (server cm rx_malformed=$(server_stat cm rx_malformed) so far)"
kill $fpid 2>/dev/null
wait $fpid 2>/dev/null
fpid=
echo "PASS: malformed MADs are counted and the CM keeps serving"
