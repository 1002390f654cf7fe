#!/usr/bin/env bash
# rdma_live.sh UROCE UROCED
# The ecosystem's names and tools under `uroce run` (docs/observability.md, "Standard counter names"):
#  - with no uroce process running, iproute2's `rdma link show` lists uroce0/1 ACTIVE and LINK_UP, `rdma dev
#    show` lists uroce0, and `rdma statistic show` and hw_counters/np_cnp_sent read 0;
#  - while a DCQCN ib_write_bw pair runs through uroced's ECN-marking 1 Gb/s ports (so the server sends
#    CNPs): /sys/class/infiniband/uroce0/ports/1/hw_counters/np_cnp_sent, counters/port_xmit_packets and
#    `rdma statistic show`'s np_cnp_sent and sent_pkts are non-zero and lie between the sums over both
#    processes that `uroce stats --json` reported just before and just after (the counters only grow), and
#    `rdma resource show qp` lists the pair's two RC QPs, each the other's peer, with their pids (and
#    `rdma resource show` counts 2 QPs).
# Exits 77 (ctest SKIP) without rdma (iproute2) or ib_write_bw (perftest), or without the device nodes when
# not root.
set -u
uroce=$1 uroced=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
for t in rdma ib_write_bw; do
  command -v $t >/dev/null || { echo "SKIP: $t is not installed"; exit 77; }
done
uroce_require_setup "$uroce"
py=/usr/bin/python3
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir UROCE_CC=dcqcn
unset UROCE_PORT
pids=()
trap 'kill ${pids[*]} 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; for f in "$dir"/*.log "$dir"/*.txt; do echo "== $f"; cat "$f"; done; exit 1; }
sysfs=/sys/class/infiniband/uroce0/ports/1

# First: a bare `uroce run` starts a default uroced on demand, which would then be the one in use.
"$uroced" --daemon --rate 1g --ecn 32k,256k,0.2 --idle-exit 30 || fail "uroced --daemon"

"$uroce" run -- rdma link show >"$dir/link.txt" 2>&1 || fail "rdma link show failed"
grep -q "^link uroce0/1 state ACTIVE physical_state LINK_UP" "$dir/link.txt" || fail "rdma link show"
"$uroce" run -- rdma dev show >"$dir/dev.txt" 2>&1 || fail "rdma dev show failed"
grep -q "^1: uroce0: node_type ca " "$dir/dev.txt" || fail "rdma dev show"
"$uroce" run -- rdma statistic show >"$dir/stat0.txt" 2>&1 || fail "rdma statistic show failed"
grep -q "^link uroce0/1 .*np_cnp_sent 0 .*sent_pkts 0 " "$dir/stat0.txt" || fail "rdma statistic show, idle"
[ "$("$uroce" run -- cat $sysfs/hw_counters/np_cnp_sent)" = 0 ] || fail "np_cnp_sent is not 0 with no process"

tcp=$((20000 + $$ % 20000))
# The pair runs far longer than the checks take (their pace depends on the load the host carries); it is
# stopped once they are done. 16 messages in flight (1 MiB, 8 ms at the port's 1 Gb/s): perftest's default
# 128 (8 MiB) queue for as long as the QPs' 67 ms ACK timeout, and on a loaded host the requester times out
# and goes back again and again.
args=(ib_write_bw -d uroce0 -x 0 -F -D 40 -t 16 -p $tcp)
"$uroce" run --port uroced -- "${args[@]}" >"$dir/srv.log" 2>&1 &
spid=$!
pids+=($spid)
wait_listen $tcp $spid || fail "the server never listened"
"$uroce" run --port uroced -- "${args[@]}" 127.0.0.1 >"$dir/cli.log" 2>&1 &
cpid=$!  # `uroce run` execs: ib_write_bw's pid
pids+=($cpid)
uroce_wait_stat "$uroce" $spid cnp_sent 1 || fail "the server never sent a CNP"
kill -0 $spid $cpid 2>/dev/null || fail "the ib_write_bw pair ended before the counters were read"

# Sum of one counter over both processes' `uroce stats --json`: SECTION KEY.
sum() {
  "$uroce" stats --json 2>/dev/null | $py -c '
import json, sys
print(sum(r[sys.argv[1]][sys.argv[2]] for r in json.load(sys.stdin)))' "$1" "$2"
}
before_cnp=$(sum device cnp_sent) before_tx=$(sum device tx_packets)
before_hw=$(sum hw_counters np_cnp_sent)
sys_cnp=$("$uroce" run -- cat $sysfs/hw_counters/np_cnp_sent)
sys_tx=$("$uroce" run -- cat $sysfs/counters/port_xmit_packets)
"$uroce" run -- rdma -j statistic show link uroce0/1 >"$dir/stat.txt" 2>&1 || fail "rdma statistic show failed"
after_cnp=$(sum device cnp_sent) after_tx=$(sum device tx_packets)
read -r rdma_cnp rdma_tx < <($py -c '
import json, sys
s = json.load(open(sys.argv[1]))[0]
assert s["ifname"] == "uroce0" and s["port"] == 1, s
print(s["np_cnp_sent"], s["sent_pkts"])' "$dir/stat.txt") || fail "rdma -j statistic show is not the expected JSON"
echo "np_cnp_sent: uroce stats $before_cnp..$after_cnp, sysfs $sys_cnp, rdma $rdma_cnp"
echo "tx packets: uroce stats $before_tx..$after_tx, sysfs port_xmit_packets $sys_tx, rdma sent_pkts $rdma_tx"
[ "$before_hw" -ge "$before_cnp" ] || fail "uroce stats: hw_counters.np_cnp_sent $before_hw < cnp_sent $before_cnp"
between() { [ "$2" -gt 0 ] && [ "$1" -le "$2" ] && [ "$2" -le "$3" ]; }
between "$before_cnp" "$sys_cnp" "$after_cnp" || fail "sysfs np_cnp_sent $sys_cnp"
between "$before_cnp" "$rdma_cnp" "$after_cnp" || fail "rdma np_cnp_sent $rdma_cnp"
between "$before_tx" "$sys_tx" "$after_tx" || fail "sysfs port_xmit_packets $sys_tx"
between "$before_tx" "$rdma_tx" "$after_tx" || fail "rdma sent_pkts $rdma_tx"
# rdma resource show qp: the pair's two RC QPs, each naming the other as its peer, with their processes.
"$uroce" run -- rdma -j resource show qp >"$dir/qp.txt" 2>&1 || fail "rdma resource show qp failed"
$py - "$dir/qp.txt" $spid $cpid <<'EOF' || fail "rdma resource show qp does not list the pair"
import json, sys
qps = {q["pid"]: q for q in json.load(open(sys.argv[1]))}
s, c = qps[int(sys.argv[2])], qps[int(sys.argv[3])]
for q in (s, c):
    assert q["ifname"] == "uroce0" and q["port"] == 1 and q["type"] == "RC" and q["comm"] == "ib_write_bw", q
    assert q["state"] in ("RTR", "RTS"), q
assert s["rqpn"] == c["lqpn"] and c["rqpn"] == s["lqpn"], (s, c)
print(f"rdma resource show qp: {s['lqpn']} <-> {c['lqpn']}")
EOF
"$uroce" run -- rdma -j resource show >"$dir/res.txt" 2>&1 || fail "rdma resource show failed"
grep -q '"ifname":"uroce0","qp":2}' "$dir/res.txt" || fail "rdma resource show does not count the pair's 2 QPs"
kill -0 $spid $cpid 2>/dev/null || fail "the ib_write_bw pair ended while the counters were read"
kill $spid $cpid
wait "${pids[@]}"
pids=()
echo "PASS: rdma link/dev/statistic and the sysfs counters show uroce0's live values"
