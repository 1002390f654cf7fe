#!/usr/bin/env bash
# rate_ecn.sh UROCE UROCED
# Fabric knobs: uroced with a 1 Gb/s egress rate limit and RED ECN marking (Kmin 32 KiB, Kmax 256 KiB,
# Pmax 0.2) carries an ib_write_bw pair. The data queue toward the server builds past Kmin and RED selects
# frames: with congestion control on (UROCE_CC=dcqcn) data frames are ECT and get marked CE; without it
# (UROCE_CC=none) they are Not-ECT and are counted as such. Both runs. The rate limit holds (perftest's
# average, which must be reported, stays under 1 Gb/s) and nothing is dropped (ingress pause keeps the switch
# lossless).
set -u
uroce=$1 uroced=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
trap 'kill $spid 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; sleep 0.2; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; echo "== uroced log"; cat "$dir"/uroce-*/uroced.log; exit 1; }
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }

UROCE_CC=dcqcn "$uroce" run -- ibv_devinfo >/dev/null 2>&1 || fail "UROCE_CC=dcqcn is refused by the provider"

"$uroced" --daemon --rate 1g --ecn 32k,256k,0.2 --idle-exit 30 || fail "uroced --daemon"
run=0
for cc in dcqcn none; do
  echo "congestion control: $cc"
  export UROCE_CC=$cc
  run=$((run + 1))
  tcp=$((18943 + run))
  args=(ib_write_bw -d uroce0 -x 0 -F -n 300 -p $tcp)
  "$uroce" run --port uroced -- "${args[@]}" >"$dir/srv.log" 2>&1 &
  spid=$!
  wait_listen $tcp $spid || fail "the server never listened"
  "$uroce" run --port uroced -- "${args[@]}" 127.0.0.1 >"$dir/cli.log" 2>&1 || { cat "$dir/cli.log"; fail "client"; }
  wait $spid || { cat "$dir/srv.log"; fail "server"; }
  spid=
  cat "$dir/cli.log"
  # The server's lease is released when it exits: the run-th release of the server's address.
  for _ in $(seq 30); do
    [ "$(grep -c "release 127.1.0.1 " "$dir"/uroce-*/uroced.log)" -ge $run ] && break
    sleep 0.1
  done
  line=$(grep "release 127.1.0.1 " "$dir"/uroce-*/uroced.log | sed -n "${run}p")
  [ -n "$line" ] || fail "no counters of the server's port"
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
    [ "$marked" = 0 ] || fail "$marked CE marks on Not-ECT traffic"
  fi
  [ "$drops" = 0 ] || fail "$drops tail drops despite ingress pause"
  bw=$(awk '/^ *65536 /{print $4}' "$dir/cli.log")
  [ -n "$bw" ] || fail "no 65536-byte average bandwidth line in perftest's output"
  awk -v b="$bw" 'BEGIN { exit !(b > 0 && b * 1048576 * 8 <= 1.0e9 * 1.02) }' ||
    fail "average $bw MB/s is zero or exceeds the 1 Gb/s limit"
  echo "PASS ($cc): queue max $qmax B, ecn_marked $marked, not-ECT selected $not_ect, average $bw MB/s under 1 Gb/s"
done
