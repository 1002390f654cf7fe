#!/usr/bin/env bash
# qperf_cm.sh UROCE UROCED TCP_PORT [netns]
# Debian's qperf with its RDMA CM mode (-cm1, which RoCE needs: qperf's other mode addresses by LID): rc_bw,
# rc_lat and rc_rdma_write_bw, one client run each. Without `netns`: between two bare `uroce run` processes,
# the client naming 127.0.0.1. With `netns`: between two network namespaces this script creates and deletes
# (uroce_netns_pair), each side a `uroce run` on DPDK's af_packet PMD on its veth end, the client naming the
# server's address 10.214.0.1.
# qperf 0.4.11's server crashes at the end of each -cm1 test (its cm_close destroys the listening id's QP,
# which is NULL: fixed upstream after 0.4.11) right after its client's DREQ reached it. A kernel answers
# that DREQ when the dying process's rdma_cm file closes; here the server's CM answers it as it reports the
# DISCONNECTED (provider/cm_service.cc), and through the host switch uroced would answer for a process that
# died first. So the client finishes.
# Passes when every client run exits 0 and prints its result. Exits 77 (ctest SKIP) without qperf, or in
# netns mode when not root or without `ip netns`.
set -u
uroce=$1 uroced=$2 tcp=$3 mode=${4:-host}
. "$(dirname "$0")/../lib/uroce_test_env.sh"
command -v qperf >/dev/null || { echo "SKIP: qperf not installed"; exit 77; }
if [ "$mode" = netns ]; then
  if [ "$(id -u)" != 0 ]; then echo "SKIP: network namespaces need root"; exit 77; fi
  if ! ip netns list >/dev/null 2>&1; then echo "SKIP: 'ip netns' is not available"; exit 77; fi
fi
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
unset UROCE_PORT
spid=
a=uroce-qp$$-a b=uroce-qp$$-b
cleanup() {
  [ -z "$spid" ] || kill $spid 2>/dev/null
  if [ "$mode" = netns ]; then
    ip netns pids "$a" 2>/dev/null | xargs -r kill 2>/dev/null
    ip netns del "$a" 2>/dev/null
    ip netns del "$b" 2>/dev/null
  else
    "$uroced" --stop >/dev/null 2>&1
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  echo "== server"; cat "$dir/server.log"
  for f in "$dir"/client-*.log; do echo "== $f"; cat "$f"; done
  [ "$mode" = netns ] || { echo "== uroced"; cat "$dir"/uroced.log "$dir"/uroce-*/uroced.log 2>/dev/null; }
  exit 1
}
if [ "$mode" = netns ]; then
  server_ip=10.214.0.1
  uroce_netns_pair "$a" "$b" "$server_ip" 10.214.0.2 || fail "could not create the namespaces"
  server() { UROCE_PORT=af_packet:iface=ua timeout "$1" ip netns exec "$a" "$uroce" run --ip "$server_ip" -- "${@:2}"; }
  client() { UROCE_PORT=af_packet:iface=ub timeout "$1" ip netns exec "$b" "$uroce" run --ip 10.214.0.2 -- "${@:2}"; }
  wait_server() { netns_wait_listen "$a" "$tcp" "$spid"; }
else
  server_ip=127.0.0.1
  server() { timeout "$1" "$uroce" run -- "${@:2}"; }
  client() { timeout "$1" "$uroce" run -- "${@:2}"; }
  wait_server() { wait_listen "$tcp" "$spid"; }
fi
server 90 qperf -lp "$tcp" >"$dir/server.log" 2>&1 &
spid=$!
wait_server || fail "the qperf server never listened on TCP port $tcp"
for t in rc_bw rc_lat rc_rdma_write_bw; do
  client 30 qperf -lp "$tcp" -cm1 -t 1 "$server_ip" "$t" >"$dir/client-$t.log" 2>&1 || fail "qperf -cm1 $t exited $?"
  grep -Eq "^ *(bw|latency) += " "$dir/client-$t.log" || fail "qperf -cm1 $t printed no result"
  cat "$dir/client-$t.log"
done
echo "PASS: qperf -cm1 rc_bw, rc_lat and rc_rdma_write_bw ($mode)"
