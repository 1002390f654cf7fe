#!/usr/bin/env bash
# exp_ns3.sh UROCE
# `uroce exp --ns3` on ns-3 HPCC's own file formats, run from the directory an ns-3 run uses (paths in the
# config are relative to it, as in simulation/mix/config.txt):
#  1. gen-topo writes a k=4 fat tree (36 nodes, 20 switches, 48 links) and gen-flows a WebSearch trace at 30%
#     load in the flow format (count line, then "src dst 3 100 size start"); the same seed, the same trace.
#  2. The config (every key of ns-3's example config.txt) runs: FCT_OUTPUT_FILE gets one line per flow in
#     ns-3's format ("%08x %08x sport dport size start_ns fct_ns standalone_fct_ns", addresses 0x0b000001 +
#     node * 0x100), all flows finish, analysis/fct_analysis.py's awk filter reads it (slowdown >= 1), the
#     manifest names the seed and which keys were used or ignored; a second run is byte-identical.
#  3. A 4:1 incast with a small buffer: PFC_OUTPUT_FILE lists pause (1) and resume (0) frames received by the
#     senders (node type 0) in ns-3's "time node type if_index type" lines.
#  4. An unknown key, a missing topology file, an unsupported CC_MODE and a missing CDF file are errors
#     naming them (exit 1).
set -u
uroce=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$dir" && mkdir mix || exit 1

# 1. inputs
"$uroce" exp gen-topo fat-tree --k 4 --rate 100G --delay 1000ns -o mix/fat.txt || fail "gen-topo"
[ "$(head -1 mix/fat.txt)" = "36 20 48" ] || fail "fat tree header: $(head -1 mix/fat.txt)"
[ "$(wc -l <mix/fat.txt)" = 50 ] || fail "fat tree: $(wc -l <mix/fat.txt) lines, not 2 + 48"
"$uroce" exp gen-flows -c websearch -n 16 -l 0.3 -b 100G -t 0.0004 --seed 7 -o mix/flow.txt || fail "gen-flows"
"$uroce" exp gen-flows -c websearch -n 16 -l 0.3 -b 100G -t 0.0004 --seed 7 >mix/flow2.txt || fail "gen-flows"
cmp -s mix/flow.txt mix/flow2.txt || fail "gen-flows with one seed gave two traces"
n=$(head -1 mix/flow.txt)
[ "$n" -ge 5 ] || fail "only $n flows"
[ "$(($(wc -l <mix/flow.txt) - 1))" = "$n" ] || fail "flow count line $n does not match the lines"
tail -n +2 mix/flow.txt | grep -vqE '^[0-9]+ [0-9]+ 3 100 [0-9]+ 2\.[0-9]{9}$' && fail "a flow line is not ns-3's format"

cat >mix/config.txt <<'CFG'
ENABLE_QCN 1
USE_DYNAMIC_PFC_THRESHOLD 1

PACKET_PAYLOAD_SIZE 1000

TOPOLOGY_FILE mix/fat.txt
FLOW_FILE mix/flow.txt
TRACE_FILE mix/trace.txt
TRACE_OUTPUT_FILE mix/mix.tr
FCT_OUTPUT_FILE mix/fct.txt
PFC_OUTPUT_FILE mix/pfc.txt

SIMULATOR_STOP_TIME 2.05

CC_MODE 1
ALPHA_RESUME_INTERVAL 1
RATE_DECREASE_INTERVAL 4
CLAMP_TARGET_RATE 0
RP_TIMER 900
EWMA_GAIN 0.00390625
FAST_RECOVERY_TIMES 1
RATE_AI 50Mb/s
RATE_HAI 100Mb/s
MIN_RATE 100Mb/s
DCTCP_RATE_AI 1000Mb/s

ERROR_RATE_PER_LINK 0.0000
L2_CHUNK_SIZE 4000
L2_ACK_INTERVAL 1
L2_BACK_TO_ZERO 0

HAS_WIN 1
GLOBAL_T 1
VAR_WIN 1
FAST_REACT 1
U_TARGET 0.95
MI_THRESH 0
INT_MULTI 1
MULTI_RATE 0
SAMPLE_FEEDBACK 0
PINT_LOG_BASE 1.05
PINT_PROB 1.0

RATE_BOUND 1

ACK_HIGH_PRIO 0

LINK_DOWN 0 0 0

ENABLE_TRACE 1

KMAX_MAP 3 25000000000 400 50000000000 800 100000000000 1600
KMIN_MAP 3 25000000000 100 50000000000 200 100000000000 400
PMAX_MAP 3 25000000000 0.2 50000000000 0.2 100000000000 0.2
BUFFER_SIZE 32
QLEN_MON_FILE mix/qlen.txt
QLEN_MON_START 2000000000
QLEN_MON_END 2010000000
CFG

# 2. the run
"$uroce" exp --ns3 mix/config.txt --seed 5 >out.txt 2>err.txt || { cat out.txt err.txt; fail "uroce exp --ns3"; }
cat out.txt
[ -s mix/fct.txt ] || fail "no FCT_OUTPUT_FILE"
[ "$(wc -l <mix/fct.txt)" = "$n" ] || fail "$(wc -l <mix/fct.txt) FCT lines for $n flows"
fct_re='^0b[0-9a-f]{4}01 0b[0-9a-f]{4}01 1[0-9]{4} 100 [0-9]+ 20[0-9]{8} [0-9]+ [0-9]+$'
grep -vqE "$fct_re" mix/fct.txt && fail "an FCT line is not ns-3's format: $(grep -vE "$fct_re" mix/fct.txt | head -1)"
# analysis/fct_analysis.py's filter: dport 100, finished before T, slowdown = fct / standalone (>= 1).
slow=$(awk '{if ($4==100 && $6+$7<3000000000) {slow=$7/$8; print slow<1?1:slow, $5}}' mix/fct.txt | sort -n -k 2)
[ "$(wc -l <<<"$slow")" = "$n" ] || fail "the analysis filter kept $(wc -l <<<"$slow") of $n lines"
awk '$1 < 1 || $1 > 1000 { exit 1 }' <<<"$slow" || fail "a slowdown outside [1, 1000]"
grep -q "^finished $n of $n flows" out.txt || fail "not every flow finished"
grep -q "p99" out.txt || fail "no slowdown table"
m=mix/fct.txt.manifest
for want in "^seed 5$" "^cc dcqcn$" "^cc.rpg_time_reset 900$" "^used TOPOLOGY_FILE mix/fat.txt$" \
  "^ignored TRACE_FILE mix/trace.txt$" "^path_mtu 1024" "^fabric buffer_bytes=33554432 ecn=1 kmin_bytes=400000"; do
  grep -q "$want" "$m" || fail "manifest has no line matching '$want'"
done
cp mix/fct.txt fct1.txt
cp mix/pfc.txt pfc1.txt
"$uroce" exp --ns3 mix/config.txt --seed 5 >/dev/null 2>&1 || fail "second run"
cmp -s mix/fct.txt fct1.txt || fail "the same seed gave a different FCT file"
cmp -s mix/pfc.txt pfc1.txt || fail "the same seed gave a different PFC file"
echo "== 2. $n flows, every one finished, byte-identical twice"

# 3. PFC: four senders into one receiver behind one switch with a 1 MB buffer.
printf '6 1 5\n5\n0 5 100Gbps 1000ns 0\n1 5 100Gbps 1000ns 0\n2 5 100Gbps 1000ns 0\n3 5 100Gbps 1000ns 0\n4 5 100Gbps 1000ns 0\n' \
  >mix/star.txt
printf '4\n1 0 3 100 3000000 2.0\n2 0 3 100 3000000 2.0\n3 0 3 100 3000000 2.0\n4 0 3 100 3000000 2.0\n' >mix/incast.txt
sed -e 's|^TOPOLOGY_FILE .*|TOPOLOGY_FILE mix/star.txt|; s|^FLOW_FILE .*|FLOW_FILE mix/incast.txt|' \
  -e 's|^BUFFER_SIZE .*|BUFFER_SIZE 1|; s|^ENABLE_QCN .*|ENABLE_QCN 0|' mix/config.txt >mix/incast_config.txt
"$uroce" exp --ns3 mix/incast_config.txt >out3.txt 2>&1 || { cat out3.txt; fail "the incast run"; }
grep -q "^finished 4 of 4 flows" out3.txt || { cat out3.txt; fail "incast: not every flow finished"; }
grep -qE '^[0-9]+ [1-4] 0 1 1$' mix/pfc.txt || fail "no pause received by a sender: $(head -3 mix/pfc.txt)"
grep -qE '^[0-9]+ [1-4] 0 1 0$' mix/pfc.txt || fail "no resume received by a sender"
grep -vqE '^[0-9]+ [0-9]+ [01] [0-9]+ [01]$' mix/pfc.txt && fail "a PFC line is not ns-3's format"
echo "== 3. incast: $(grep -c ' 1$' mix/pfc.txt) pauses, $(grep -c ' 0$' mix/pfc.txt) resumes received"

# 4. errors
expect_error() {  # WHAT STATUS PATTERN ARGS...
  local what=$1 want=$2 pat=$3
  shift 3
  "$uroce" exp "$@" >err.out 2>&1
  local rc=$?
  [ $rc = "$want" ] || { cat err.out; fail "$what: exit $rc, not $want"; }
  grep -q "$pat" err.out || { cat err.out; fail "$what: the error does not say '$pat'"; }
}
sed 's/^RP_TIMER /RP_TIMR /' mix/config.txt >mix/bad1.txt
expect_error "unknown key" 1 "mix/bad1.txt:.*'RP_TIMR' is not an ns-3 HPCC config key" --ns3 mix/bad1.txt
sed 's|^TOPOLOGY_FILE .*|TOPOLOGY_FILE mix/nosuch.txt|' mix/config.txt >mix/bad2.txt
expect_error "missing topology" 1 "mix/nosuch.txt" --ns3 mix/bad2.txt
sed 's/^CC_MODE .*/CC_MODE 10/' mix/config.txt >mix/bad3.txt
expect_error "CC_MODE 10" 1 "CC_MODE 10" --ns3 mix/bad3.txt
expect_error "gen-flows bad CDF" 1 "nosuch.cdf" gen-flows -c nosuch.cdf -n 4
echo "PASS: ns-3 HPCC files in, ns-3 HPCC files out"
