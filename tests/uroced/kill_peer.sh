#!/usr/bin/env bash
# kill_peer.sh UROCE UROCED
# Through uroced: kills the server of an ib_write_bw pair mid-transfer. The client must fail with
# IBV_WC_RETRY_EXC_ERR (status 12) within the transport timeout, not hang: perftest's timeout 14 and
# retry_cnt 7 make 8 tries of 67 ms ~ 0.54 s, so it must not give up before 0.25 s (the retry timer waits;
# a loaded machine only makes that longer) and must give up within the test's 10 s bound. uroced must release the dead process's port, survive, and serve the next pair (ibv_rc_pingpong
# with a data check).
set -u
uroce=$1 uroced=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
trap 'kill -9 $spid $cpid 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; sleep 0.2; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; echo "== uroced log"; cat "$dir"/uroce-*/uroced.log; exit 1; }
stat_field() { "$uroced" --stats | head -1 | tr ' ' '\n' | sed -n "s/^$1=//p"; }

args=(ib_write_bw -d uroce0 -x 0 -F -D 20 -p 18942)
"$uroce" run --port uroced -- "${args[@]}" >"$dir/srv.log" 2>&1 &
spid=$!
wait_listen 18942 $spid || fail "the server never listened"
"$uroce" run --port uroced -- "${args[@]}" 127.0.0.1 >"$dir/cli.log" 2>&1 &
cpid=$!
dpid=$(stat_field pid)
# Mid-transfer: the client's device has sent a good number of data packets.
uroce_wait_stat "$uroce" $cpid tx_packets 2000 || fail "the client never moved data"
"$uroced" --stats
kill -9 $spid
t0=$(date +%s%N)
for _ in $(seq 500); do kill -0 $cpid 2>/dev/null || break; sleep 0.02; done
t1=$(date +%s%N)
cat "$dir/cli.log"
kill -0 $cpid 2>/dev/null && fail "client still running 10 s after its peer died"
ms=$(( (t1 - t0) / 1000000 ))
echo "client gave up $ms ms after the kill"
grep -q "Failed status 12" "$dir/cli.log" || fail "no IBV_WC_RETRY_EXC_ERR (12) completion"
[ $ms -ge 250 ] || fail "gave up after $ms ms: the retry timer did not wait ~67 ms per try"

for _ in $(seq 30); do [ "$(stat_field leases)" = 0 ] && break; sleep 0.1; done
[ "$(stat_field leases)" = 0 ] || fail "leases of the dead pair not released"
[ "$(stat_field pid)" = "$dpid" ] || fail "uroced did not survive"

# The next pair through the same daemon.
"$uroce" run --port uroced -- ibv_rc_pingpong -g 0 -n 100 -c -p 18943 >"$dir/srv2.log" 2>&1 &
spid=$!
wait_listen 18943 $spid || fail "the next server never listened"
"$uroce" run --port uroced -- ibv_rc_pingpong -g 0 -n 100 -c -p 18943 127.0.0.1 >"$dir/cli2.log" 2>&1 ||
  { cat "$dir/srv2.log" "$dir/cli2.log"; fail "next pair failed"; }
wait $spid || { cat "$dir/srv2.log"; fail "next pair's server failed"; }
cat "$dir/cli2.log"
[ "$(stat_field pid)" = "$dpid" ] || fail "the next pair did not use the same uroced"
grep "release" "$dir"/uroce-*/uroced.log | cut -c1-160
echo "PASS: uroced $dpid survived the kill and served the next pair"
