#!/usr/bin/env bash
# idle_cpu.sh UROCE
# A process with an open uroce device on a DPDK memif port and no traffic must use under 2% of a core over
# 10 s (its progress thread sleeps). Measures utime+stime from /proc/PID/stat (clock ticks).
set -u
uroce=$1
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
# ibv_rc_pingpong as a server opens the device, creates its QP, then waits for a client that never comes.
UROCE_PORT="memif:socket=$dir/m.sock,role=server" "$uroce" run --ip 127.1.0.9 -- ibv_rc_pingpong -g 0 -p 18690 \
  >"$dir/out.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
sleep 3  # past EAL start-up and device open
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
t0=$(ticks)
sleep 10
t1=$(ticks)
hz=$(getconf CLK_TCK)
pct=$(( (t1 - t0) * 100 * 100 / (10 * hz) ))  # hundredths of a percent
echo "idle process used $((pct / 100)).$(printf '%02d' $((pct % 100)))% of a core over 10 s"
[ "$pct" -lt 200 ]
