#!/usr/bin/env bash
# rx_missed.sh UROCE UROCED TCP_PORT [PORT_OPTIONS]
# Nothing is lost silently at an af_packet port: in a network namespace of its own, a burst of N frames is
# sent over a veth pair to an idle engine (an ibv_rc_pingpong server waiting for its client) whose port
# is af_packet on the other end. Every frame must be accounted for in `uroce stats`:
# port rx_frames + rx_missed = N, with rx_missed = rx_kernel_drops (the kernel's ring drops, which DPDK
# 22.11's af_packet PMD does not report). The port's ring is cut to 64 slots (rsize=6) so that the burst
# overflows it for sure; PORT_OPTIONS replaces that (e.g. "" for the default ring, to measure).
# UROCE_STATS_ON_EXIT shows the same rx_missed when the program exits. Needs root and `ip netns`.
set -u
uroce=$1 tcp=$3 opts=${4-,rsize=6}
n=${BURST:-20000}
. "$(dirname "$0")/trust_lib.sh"
trust_require_root "$uroce"
command -v ibv_rc_pingpong >/dev/null || { echo "SKIP: ibv_rc_pingpong is missing"; exit 77; }
ip netns list >/dev/null 2>&1 || { echo "SKIP: ip netns is not available"; exit 77; }
ns=uroce-trust-$$
d=$(mktemp -d /tmp/uroce-trust-rx.XXXXXX)
spid=
trap 'kill $spid 2>/dev/null; wait 2>/dev/null; ip netns del $ns 2>/dev/null; rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; cat "$d/server.log"; exit 1; }
ip netns add $ns || { echo "SKIP: cannot create a network namespace"; exit 77; }
inns() { ip netns exec $ns "$@"; }
inns sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
inns ip link add ua type veth peer name ub
inns ip link set ua up
inns ip link set ub up
inns ip link set lo up
export XDG_RUNTIME_DIR=$d
UROCE_STATS_ON_EXIT=1 UROCE_PORT="af_packet:iface=ua$opts" ip netns exec $ns "$uroce" run -- ibv_rc_pingpong -g 0 -p "$tcp" \
  >"$d/server.log" 2>&1 &
spid=$!  # ip netns exec and uroce run exec: the program's pid
wait_path "$d/uroce-0/ctl/$spid-uroce0.sock" 150 || fail "no control socket"
stats() { "$uroce" stats --json --pid $spid >"$d/s.json" && "$PY" -c '
import json, sys
p = json.load(open(sys.argv[1]))[0]["port_stats"]
print(p["rx_frames"], p["rx_missed"], p["rx_kernel_drops"])' "$d/s.json"; }
read -r f0 m0 k0 < <(stats) || fail "uroce stats failed"

# N full-size frames of an experimental EtherType (not RoCE: the engine counts and drops them), as fast as
# one raw socket sends them.
inns "$PY" - ub $n <<'PYEOF'
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
frame = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x09" + b"\x88\xb5" + bytes(1500)
for _ in range(int(sys.argv[2])):
    s.send(frame)
PYEOF
# Wait until every frame is counted one way or the other (the engine drains its ring within milliseconds).
for _ in $(seq 100); do
  read -r f m k < <(stats) || fail "uroce stats failed"
  [ $((f - f0 + m - m0)) -ge $n ] && break
  sleep 0.1
done
got=$((f - f0)) missed=$((m - m0)) kdrops=$((k - k0))
echo "burst of $n frames (port af_packet:iface=ua$opts): received $got, rx_missed $missed (kernel ring drops $kdrops), loss $((100 * missed / n))%"
[ $((got + missed)) -eq $n ] || fail "$((n - got - missed)) of $n frames are not accounted for (rx_frames $got + rx_missed $missed)"
[ $missed -eq $kdrops ] || fail "rx_missed $missed is not the kernel's ring drops $kdrops"
if [ "$opts" = ",rsize=6" ]; then
  [ $missed -gt 0 ] || fail "a 64-slot ring took a burst of $n without a drop: the test shows nothing"
fi
# A client that sends nonsense makes the server give up and exit normally (exit handlers run).
inns bash -c "printf 'nonsense%060d' 0 >/dev/tcp/127.0.0.1/$tcp" 2>/dev/null
timeout 10 tail --pid=$spid -f /dev/null || fail "the server did not exit"
spid=
grep -q "port_rx_missed=$m" "$d/server.log" || fail "UROCE_STATS_ON_EXIT does not show rx_missed $m"
echo PASS
