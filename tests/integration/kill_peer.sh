#!/usr/bin/env bash
# kill_peer.sh UROCE
# Kills the server of an ib_write_bw pair (memif) mid-transfer: the client must fail with
# IBV_WC_RETRY_EXC_ERR (status 12) within the transport timeout, not hang. perftest sets timeout 14 and
# retry_cnt 7: 4.096 us * 2^14 = 67 ms per try, 8 tries ~ 0.54 s. The client must not give up before 0.25 s
# (a retry timer that does not wait; a loaded machine only makes it later) and must give up within the
# test's 10 s bound. The timer's length itself is checked in virtual time (tests/protocol/retry_test.cc).
set -u
uroce=$1
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
spid= cpid=
trap 'kill -9 $spid $cpid 2>/dev/null; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; echo "== server"; cat "$dir/srv.log"; echo "== client"; cat "$dir/cli.log"; exit 1; }
args=(ib_write_bw -d uroce0 -x 0 -F -D 20 -p 18691)
UROCE_PORT="memif:socket=$dir/m.sock,role=server" "$uroce" run --ip 127.1.0.1 -- "${args[@]}" >"$dir/srv.log" 2>&1 &
spid=$!
wait_listen 18691 $spid || fail "the server never listened"
UROCE_PORT="memif:socket=$dir/m.sock,role=client" "$uroce" run --ip 127.1.0.2 -- "${args[@]}" 127.0.0.1 \
  >"$dir/cli.log" 2>&1 &
cpid=$!
# Mid-transfer: the client's device has sent a good number of data packets.
uroce_wait_stat "$uroce" $cpid tx_packets 2000 || fail "the client never moved data"
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
