#!/usr/bin/env bash
# qperf_cm.sh UROCE UROCED TCP_PORT
# Debian's qperf with its RDMA CM mode (-cm1, which RoCE needs: qperf's other mode addresses by LID) between
# two bare `uroce run` processes: rc_bw, rc_lat and rc_rdma_write_bw, one client run each. qperf 0.4.11's
# server crashes at the end of each -cm1 test (its cm_close destroys the listening id's QP, which is NULL:
# fixed upstream after 0.4.11) right after its client's DREQ reached it; as a kernel does for a dying
# process, uroced answers that DREQ with the DREP (its port's link went down), so the client finishes.
# Passes when every client run exits 0 and prints its result. Exits 77 (ctest SKIP) without qperf.
set -u
uroce=$1 uroced=$2 tcp=$3
. "$(dirname "$0")/../lib/uroce_test_env.sh"
command -v qperf >/dev/null || { echo "SKIP: qperf not installed"; exit 77; }
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
unset UROCE_PORT
spid=
trap '[ -z "$spid" ] || kill $spid 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
fail() {
  echo "FAIL: $*"
  echo "== server"; cat "$dir/server.log"
  for f in "$dir"/client-*.log; do echo "== $f"; cat "$f"; done
  echo "== uroced"; cat "$dir"/uroced.log "$dir"/uroce-*/uroced.log 2>/dev/null
  exit 1
}

timeout 90 "$uroce" run -- qperf -lp "$tcp" >"$dir/server.log" 2>&1 &
spid=$!
wait_listen "$tcp" "$spid" || fail "the qperf server never listened on TCP port $tcp"
for t in rc_bw rc_lat rc_rdma_write_bw; do
  timeout 30 "$uroce" run -- qperf -lp "$tcp" -cm1 -t 1 127.0.0.1 "$t" >"$dir/client-$t.log" 2>&1 ||
    fail "qperf -cm1 $t exited $?"
  grep -Eq "^ *(bw|latency) += " "$dir/client-$t.log" || fail "qperf -cm1 $t printed no result"
  cat "$dir/client-$t.log"
done
echo "PASS: qperf -cm1 rc_bw, rc_lat and rc_rdma_write_bw between two bare uroce run processes"
