#!/usr/bin/env bash
# rate_ecn.sh UROCE UROCED
# Fabric knobs: uroced with a 1 Gb/s egress rate limit and RED ECN marking (Kmin 32 KiB, Kmax 256 KiB,
# Pmax 0.2) carries an ib_write_bw pair. The data queue toward the server builds past Kmin and RED selects
# frames: with congestion control on (UROCE_CC=dcqcn, when the provider has it) data frames are ECT and get
# marked CE; without it they are Not-ECT and are counted as such. The rate limit holds (perftest's average
# stays under 1 Gb/s) and nothing is dropped (ingress pause keeps the switch lossless).
set -u
uroce=$1 uroced=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
trap 'kill $spid 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; sleep 0.2; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; echo "== uroced log"; cat "$dir"/uroce-*/uroced.log; exit 1; }
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }

cc=none
UROCE_CC=dcqcn "$uroce" run -- ibv_devinfo >/dev/null 2>&1 && cc=dcqcn
echo "congestion control: $cc"
export UROCE_CC=$cc

"$uroced" --daemon --rate 1g --ecn 32k,256k,0.2 --idle-exit 30 || fail "uroced --daemon"
args=(ib_write_bw -d uroce0 -x 0 -F -n 300 -p 18944)
"$uroce" run --port uroced -- "${args[@]}" >"$dir/srv.log" 2>&1 &
spid=$!
wait_listen 18944
"$uroce" run --port uroced -- "${args[@]}" 127.0.0.1 >"$dir/cli.log" 2>&1 || { cat "$dir/cli.log"; fail "client"; }
wait $spid || { cat "$dir/srv.log"; fail "server"; }
cat "$dir/cli.log"
for _ in $(seq 30); do grep -q "release 127.1.0.1 " "$dir"/uroce-*/uroced.log && break; sleep 0.1; done
line=$(grep "release 127.1.0.1 " "$dir"/uroce-*/uroced.log) || fail "no counters of the server's port"
echo "server port: ${line#*: }"
qmax=$(echo "$line" | field queue_max_bytes)
marked=$(echo "$line" | field ecn_marked)
not_ect=$(echo "$line" | field ecn_not_ect)
drops=$(echo "$line" | field drop_queue_full)
[ "$qmax" -ge 32768 ] || fail "the queue toward the server never passed Kmin (max $qmax bytes)"
if [ $cc = dcqcn ]; then
  [ "$marked" -gt 0 ] || fail "no ECN marks with DCQCN on (not-ECT selections: $not_ect)"
else
  [ "$not_ect" -gt 0 ] || fail "RED selected no frame"
fi
[ "$drops" = 0 ] || fail "$drops tail drops despite ingress pause"
bw=$(awk '/^ *65536 /{print $4}' "$dir/cli.log")
awk -v b="$bw" 'BEGIN { exit !(b * 1048576 * 8 <= 1.0e9 * 1.02) }' || fail "average $bw MB/s exceeds the 1 Gb/s limit"
echo "PASS: queue max $qmax B, ecn_marked $marked, not-ECT selected $not_ect, average $bw MB/s under 1 Gb/s"
