#!/usr/bin/env bash
# stats_capture.sh UROCE TCP_PORT
# `uroce stats` and `uroce capture` against a running ib_write_bw pair (two processes joined by a direct memif
# pair, as tests/integration/memif_pair.sh runs them):
#  - stats --json lists both processes, the client with non-zero tx/rx packets and bytes and an RC QP;
#  - the table form shows the same client;
#  - capture -c 200 writes 200 frames that tshark decodes as RoCEv2: RDMA WRITE requests whose PSNs go up
#    by one (and the ACKs coming back, if one falls in the window);
#  - a capture of an ibv_rc_pingpong server still running when it exits is completed, both directions;
#  - the sockets are gone once the processes exit, and a stale socket of a dead process is cleaned up.
# Exits 77 (ctest SKIP) when the device nodes are missing and this is not root, or perftest/tshark are missing.
set -u
uroce=$1 tcp=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
for t in ib_write_bw tshark python3; do
  command -v $t >/dev/null || { echo "SKIP: $t is not installed"; exit 77; }
done
dir=$(mktemp -d)
spid= cpid=
trap 'kill $spid $cpid 2>/dev/null; rm -rf "$dir"' EXIT
export XDG_RUNTIME_DIR=$dir
ctl=$dir/uroce-$(id -u)/ctl
fail() { echo "FAIL: $*"; echo "== server"; cat "$dir/srv.log"; echo "== client"; cat "$dir/cli.log"; exit 1; }

# Long enough for the checks below; both sides stop by themselves after -D seconds.
args=(ib_write_bw -d uroce0 -x 0 -F -D 8 -p "$tcp")
UROCE_PORT="memif:socket=$dir/m.sock,role=server" "$uroce" run --ip 127.1.0.1 -- "${args[@]}" >"$dir/srv.log" 2>&1 &
spid=$!
wait_listen "$tcp" $spid || fail "the server never listened on $tcp"
UROCE_PORT="memif:socket=$dir/m.sock,role=client" "$uroce" run --ip 127.1.0.2 -- "${args[@]}" 127.0.0.1 \
  >"$dir/cli.log" 2>&1 &
cpid=$!  # `uroce run` execs: this is ib_write_bw's pid, which names its control socket

# Wait until the client's device moves data.
moving=0
for _ in $(seq 100); do
  "$uroce" stats --json --pid $cpid >"$dir/s.json" 2>/dev/null &&
    python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))[0]["device"]["rx_packets"] > 0 else 1)' \
      "$dir/s.json" && { moving=1; break; }
  sleep 0.1
done
[ $moving = 1 ] || fail "the client's device never showed traffic in uroce stats"

"$uroce" stats --json >"$dir/all.json" || fail "uroce stats --json failed"
python3 - "$dir/all.json" $spid $cpid <<'EOF' || fail "uroce stats --json is not what was expected"
import json, sys
stats = json.load(open(sys.argv[1]))
pids = {s["pid"]: s for s in stats}
spid, cpid = int(sys.argv[2]), int(sys.argv[3])
assert spid in pids and cpid in pids, f"processes {sorted(pids)} lack {spid} or {cpid}"
c = pids[cpid]
assert c["dev"] == "uroce0" and c["comm"] == "ib_write_bw", c
for k in ("tx_packets", "tx_bytes", "rx_packets", "rx_bytes"):
    assert c["device"][k] > 0, (k, c["device"])
    assert pids[spid]["device"][k] > 0, (k, pids[spid]["device"])
assert c["device"]["tx_bytes"] > c["device"]["tx_packets"] * 1000, "WRITEs of 64 KiB travel in full-MTU packets"
qps = c["qps"]
assert len(qps) >= 1, "no QP listed"
q = qps[0]
assert q["type"] == "RC" and q["state"] == "RTS", q
assert q["tx_packets"] > 0 and q["tx_bytes"] > 0, q
print(f"stats: client tx {c['device']['tx_packets']} packets / {c['device']['tx_bytes']} bytes, "
      f"rx {c['device']['rx_packets']} packets; qp {q['qpn']} {q['type']} {q['state']}")
EOF

"$uroce" stats --pid $cpid >"$dir/table.txt" || fail "uroce stats (table) failed"
grep -q "^pid $cpid (ib_write_bw) uroce0" "$dir/table.txt" || { cat "$dir/table.txt"; fail "no table header"; }
grep -q "tx_packets" "$dir/table.txt" && grep -q "QPs: 1" "$dir/table.txt" || { cat "$dir/table.txt"; fail "table"; }

# capture: exactly 200 frames of the client, both directions.
"$uroce" capture --pid $cpid -c 200 --duration 20 -w "$dir/f.pcap" >"$dir/cap.txt" 2>&1 ||
  { cat "$dir/cap.txt"; fail "uroce capture failed"; }
cat "$dir/cap.txt"
grep -q "^200 frames written to $dir/f.pcap" "$dir/cap.txt" || fail "capture did not write 200 frames"
tshark -r "$dir/f.pcap" -d udp.port==4791,infiniband -T fields -e ip.src -e infiniband.bth.opcode \
  -e infiniband.bth.psn >"$dir/f.txt" 2>"$dir/tshark.err" || { cat "$dir/tshark.err"; fail "tshark cannot read the capture"; }
python3 - "$dir/f.txt" <<'EOF' || fail "the capture does not decode as the RDMA WRITE transfer"
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
assert len(rows) == 200, f"{len(rows)} frames decoded"
# IBA opcodes (RC): 6..11 RDMA WRITE First/Middle/Last/Last+Imm/Only/Only+Imm, 17 Acknowledge.
writes = [(int(op), int(psn)) for src, op, psn in rows if op and int(op) in range(6, 12)]
acks = [int(psn) for src, op, psn in rows if op == "17"]
assert len(writes) >= 100, f"only {len(writes)} RDMA WRITE packets"
assert {src for src, op, psn in rows if op and int(op) in range(6, 12)} == {"127.1.0.2"}, "WRITEs from the client"
assert {src for src, op, psn in rows if op == "17"} <= {"127.1.0.1"}, "ACKs come from the server"
steps = [(b[1] - a[1]) % (1 << 24) for a, b in zip(writes, writes[1:])]
up = sum(1 for s in steps if s == 1)
# Every step +1 unless a retransmission rewound the sequence (not expected on a clean memif link).
assert up >= 0.95 * len(steps), f"PSNs do not increase: {steps[:40]}"
ops = sorted({op for op, _ in writes})
print(f"capture: {len(writes)} RDMA WRITE packets (opcodes {ops}), PSN {writes[0][1]} .. {writes[-1][1]}, "
      f"{len(acks)} ACKs, {up}/{len(steps)} PSN steps of +1")
EOF

wait $cpid; crc=$?
wait $spid; src=$?
cpid= spid=
[ $crc = 0 ] && [ $src = 0 ] || fail "ib_write_bw failed (client $crc, server $src)"

# A capture still running when the program ends is completed by the engine, and the tool says so. The
# capture of an ibv_rc_pingpong server is armed before its client starts, so it holds the whole exchange.
rm -f "$dir/m.sock"
pp=(ibv_rc_pingpong -g 0 -n 300 -p "$tcp")
UROCE_PORT="memif:socket=$dir/m.sock,role=server" "$uroce" run --ip 127.1.0.1 -- "${pp[@]}" >"$dir/srv.log" 2>&1 &
spid=$!
for _ in $(seq 50); do [ -S "$ctl/$spid-uroce0.sock" ] && break; sleep 0.1; done
"$uroce" capture --pid $spid --duration 60 -w "$dir/end.pcap" >"$dir/end.txt" 2>&1 &
tpid=$!
for _ in $(seq 50); do grep -q -- "->" "$dir/end.txt" && break; sleep 0.1; done  # armed
UROCE_PORT="memif:socket=$dir/m.sock,role=client" "$uroce" run --ip 127.1.0.2 -- "${pp[@]}" 127.0.0.1 \
  >"$dir/cli.log" 2>&1 &
cpid=$!
wait $cpid; crc=$?
wait $spid; src=$?
cpid= spid=
[ $crc = 0 ] && [ $src = 0 ] || fail "ibv_rc_pingpong failed (client $crc, server $src)"
wait $tpid || { cat "$dir/end.txt"; fail "uroce capture failed when its process exited"; }
cat "$dir/end.txt"
grep -q "exited; the capture ended with it" "$dir/end.txt" || fail "capture did not notice the process exit"
tshark -r "$dir/end.pcap" -d udp.port==4791,infiniband -T fields -e ip.src -e infiniband.bth.opcode \
  >"$dir/end.fields" 2>/dev/null || fail "tshark cannot read end.pcap"
n=$(wc -l <"$dir/end.fields")
grep -q "^$n frames written" "$dir/end.txt" || fail "end.pcap: tshark reads $n frames, not what the tool said"
# Both directions, every message: 300 SENDs each way (4096 bytes at pingpong's MTU 1024: SEND First (0),
# Middle (1), Last (2)), and ACKs (17).
sends_in=$(grep -cP "^127.1.0.2\t(2|4)$" "$dir/end.fields") sends_out=$(grep -cP "^127.1.0.1\t(2|4)$" "$dir/end.fields")
[ "$sends_in" -ge 300 ] && [ "$sends_out" -ge 300 ] && grep -qP "\t17$" "$dir/end.fields" ||
  fail "end.pcap: $sends_in SENDs received, $sends_out sent (300 each expected) or no ACK"
left=$(ls "$ctl")
[ -z "$left" ] || fail "control sockets left after exit: $left"

# A socket left by a killed process (its pid no longer exists) is removed by the tool.
( exit 0 ) & dead=$!; wait $dead
: >"$ctl/$dead-uroce0.sock"
"$uroce" stats >/dev/null 2>&1
[ ! -e "$ctl/$dead-uroce0.sock" ] || fail "stale socket of dead pid $dead not removed"
echo "PASS"
