#!/usr/bin/env bash
# cc_realtime.sh UROCE UROCED
# Congestion control in real time: two ib_write_bw pairs run through uroced at once,
# every port rate-limited to 1 Gb/s with RED ECN marking, and every device on DCQCN. While they run,
# `uroce stats --json` on each process must show the notification point at work on the servers (ECN-marked
# packets seen, CNPs sent) and the reaction point on the clients (CNPs handled, rate changes, the QP's current
# DCQCN rate below line rate).
set -u
uroce=$1 uroced=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir UROCE_CC=dcqcn
pids=()
trap 'kill ${pids[*]} 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; sleep 0.2; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; for f in "$dir"/*.log "$dir"/uroce-*/uroced.log; do echo "== $f"; cat "$f"; done; exit 1; }

UROCE_PORT=loopback "$uroce" run -- ibv_devinfo >/dev/null 2>&1 || fail "UROCE_CC=dcqcn is refused by the provider"
"$uroced" --daemon --rate 1g --ecn 32k,256k,0.2 --idle-exit 30 || fail "uroced --daemon"
clients=() servers=()
for i in 1 2; do
  port=$((18960 + i))
  args=(ib_write_bw -d uroce0 -x 0 -F -D 6 -p $port)
  "$uroce" run --port uroced -- "${args[@]}" >"$dir/srv$i.log" 2>&1 &
  servers+=($!) pids+=($!)
  wait_listen $port $! || fail "server $i never listened"
  "$uroce" run --port uroced -- "${args[@]}" 127.0.0.1 >"$dir/cli$i.log" 2>&1 &
  clients+=($!) pids+=($!)
done
# While both pairs transfer, congestion control must show at work in one snapshot of all four processes:
# the servers have seen ECN-marked packets and sent CNPs, the clients have handled CNPs, changed rate, and
# run their QP below line rate. Snapshots are taken until that holds (DCQCN recovers between CNPs, so a
# given snapshot may catch a QP back at line rate), for as long as the clients run (-D 6).
stat() { "$uroce" stats --json --pid "$1" >"$dir/stats-$1.json" 2>>"$dir/stats.log"; }
check() {
  python3 - "$dir" "${servers[*]}" "${clients[*]}" <<'PY'
import json, sys
d, servers, clients = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
def load(pid):
    return json.load(open(f"{d}/stats-{pid}.json"))[0]
ok = True
lines = []
for pid in servers:
    dev = load(pid)["device"]
    lines.append(f"server {pid}: ecn_marked_packets={dev.get('ecn_marked_packets', 0)} cnp_sent={dev.get('cnp_sent', 0)}")
    ok &= dev.get("ecn_marked_packets", 0) > 0 and dev.get("cnp_sent", 0) > 0
for pid in clients:
    s = load(pid)
    dev, qps = s["device"], s["qps"]
    rate = min((q.get("cc_rate_bps", 0) for q in qps), default=0)
    lines.append(f"client {pid}: cnp_handled={dev.get('cnp_handled', 0)} "
                 f"cc_rate_changes={dev.get('cc_rate_changes', 0)} qp cc_rate_bps={rate}")
    ok &= dev.get("cnp_handled", 0) > 0 and dev.get("cc_rate_changes", 0) > 0 and 0 < rate < 100e9
print("\n".join(lines))
sys.exit(0 if ok else 1)
PY
}
seen=0
for _ in $(seq 50); do
  snap=1
  for p in "${servers[@]}" "${clients[@]}"; do stat "$p" || { snap=0; break; }; done
  if [ $snap = 1 ] && check >"$dir/check.txt"; then seen=1; break; fi
  sleep 0.1
done
cat "$dir/check.txt" 2>/dev/null
[ $seen = 1 ] || fail "counters: congestion control never showed at work in one snapshot"
wait "${clients[@]}" || fail "a client failed"
wait "${servers[@]}" || fail "a server failed"
pids=()
for i in 1 2; do sed -n '/#bytes/{n;p}' "$dir/cli$i.log"; done
echo "PASS"
