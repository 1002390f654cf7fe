#!/usr/bin/env bash
# idle_cpu.sh UROCE
# A process with an open uroce device on a DPDK memif port and no traffic must use under 2% of a core over
# 10 s (its progress thread sleeps). Measures utime+stime from /proc/PID/stat (clock ticks). The process
# must have opened the device (its control socket exists and it listens for its client) before the
# measurement starts, and still be alive when it ends: a process that died or never got that far uses no
# CPU either.
set -u
uroce=$1
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
fail() { echo "FAIL: $*"; echo "== server log"; cat "$dir/out.log"; exit 1; }
# ibv_rc_pingpong as a server opens the device, creates its QP, then waits for a client that never comes.
# `uroce run` execs, so $pid is ibv_rc_pingpong's, which names the device's control socket.
UROCE_PORT="memif:socket=$dir/m.sock,role=server" "$uroce" run --ip 127.1.0.9 -- ibv_rc_pingpong -g 0 -p 18690 \
  >"$dir/out.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
# Past EAL start-up, the device open (its control socket) and QP creation (the out-of-band listener).
wait_listen 18690 $pid || fail "ibv_rc_pingpong never listened on 18690"
[ -S "$dir/uroce-$(id -u)/ctl/$pid-uroce0.sock" ] || fail "no control socket: the uroce device is not open"
"$uroce" stats --json --pid $pid >"$dir/s.json" 2>&1 || { cat "$dir/s.json"; fail "uroce stats on the server"; }
grep -q '"dev": *"uroce0"' "$dir/s.json" || { cat "$dir/s.json"; fail "uroce stats shows no uroce0 device"; }
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
t0=$(ticks) || fail "process $pid gone before the measurement"
sleep 10  # the measurement window itself
kill -0 $pid 2>/dev/null || fail "process $pid died during the measurement"
t1=$(ticks) || fail "process $pid gone at the end of the measurement"
[ -n "$t0" ] && [ -n "$t1" ] || fail "no CPU times read from /proc/$pid/stat"
hz=$(getconf CLK_TCK)
pct=$(( (t1 - t0) * 100 * 100 / (10 * hz) ))  # hundredths of a percent
echo "idle process used $((pct / 100)).$(printf '%02d' $((pct % 100)))% of a core over 10 s"
[ "$pct" -lt 200 ] || fail "over 2% of a core while idle"
