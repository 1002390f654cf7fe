#!/usr/bin/env bash
# soak.sh UROCE SOAK SECONDS [LOSS] [SEED]
# Runs the soak program (soak.cc: mixed SEND, WRITE, WRITE WITH IMM, READ and atomics with every byte
# checked) as a server and a client through the host switch uroced, whose egress drops each frame with
# probability LOSS (default 0.01). Both must exit 0; uroced must have dropped frames at random (drop_loss)
# and the transport must have retransmitted. Prints operations, bytes, drops and retransmissions.
#
# CI runs it for 20 s in the release and the ASan build (ctest -R fault_soak). For a 10-minute soak:
#   tests/faults/soak.sh build/release/tools/uroce build/release/tests/faults/fault_soak 600
# (any SEED as the last argument replays another operation stream and loss pattern).
set -u
uroce=$1 soak=$2 secs=$3 loss=${4:-0.01} seed=${5:-1}
uroced=$(dirname "$uroce")/uroced/uroced
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
tcp=$((19100 + RANDOM % 800))
export XDG_RUNTIME_DIR=$dir UROCED_CONFIG=$dir/uroced.conf UROCE_STATS_ON_EXIT=1
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
printf 'loss = %s\nseed = %s\n' "$loss" "$seed" >"$UROCED_CONFIG"
spid=
trap 'kill $spid 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; sleep 0.2; rm -rf "$dir"' EXIT
fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do echo "== $f"; tail -30 "$f"; done
  echo "== uroced"; grep -E "release|took" "$dir"/uroce-*/uroced.log
  [ -f "$dir/qp_state.log" ] && { echo "== QPs when the client failed"; grep -E "^ +qp [0-9]+ |pid" "$dir/qp_state.log"; }
  exit 1
}
# The sum of one counter over the ports uroced released (its log has each port's counters at release).
port_sum() { sed -n "s/.* release .* $1=\([0-9]*\).*/\1/p" "$dir"/uroce-*/uroced.log | awk '{s += $1} END {print s + 0}'; }

limit=$((secs + 60))
timeout $limit "$uroce" run --port uroced -- "$soak" server $tcp "$seed" >"$dir/server.log" 2>&1 &
spid=$!
wait_listen $tcp || fail "the soak server never listened"
# A client that fails holds on for 3 s, long enough to record its QP's state (uroce stats: una, hw, retry
# budget, ... in "detail") before it exits.
SOAK_HOLD_ON_FAIL=3 timeout $limit "$uroce" run --port uroced -- "$soak" client 127.0.0.1 $tcp "$seed" "$secs" \
  >"$dir/client.log" 2>&1 &
cpid=$!
while kill -0 $cpid 2>/dev/null; do
  if grep -q "FAIL" "$dir/client.log"; then
    "$uroce" stats --all >"$dir/qp_state.log" 2>&1
    break
  fi
  sleep 0.2
done
wait $cpid
crc=$?
wait $spid
src=$?
spid=
for _ in $(seq 50); do [ "$(grep -c " release " "$dir"/uroce-*/uroced.log)" = 2 ] && break; sleep 0.1; done
drops=$(port_sum drop_loss) fwd=$(port_sum tx_frames)
cat "$dir/client.log" "$dir/server.log"
"$uroced" --stats
[ $crc = 0 ] || fail "client exit $crc"
[ $src = 0 ] || fail "server exit $src"
retx=$(sed -n 's/.*retransmitted_packets=\([0-9]*\).*/\1/p' "$dir"/*.log | awk '{s += $1} END {print s + 0}')
echo "uroced forwarded $fwd frames and dropped $drops at random (loss $loss); the transports retransmitted $retx packets"
awk -v l="$loss" 'BEGIN { exit !(l > 0) }' || exit 0
[ "$drops" -gt 0 ] || fail "uroced dropped nothing: the loss knob did not act"
[ "$retx" -gt 0 ] || fail "drops but no retransmission counted"
echo "PASS"
