#!/usr/bin/env bash
# bench_fct_ns3.sh UROCE [MS] [K]
# FCT slowdown of the congestion-control algorithms on an ns-3 HPCC style experiment, in the simulator: a
# k-ary fat tree (default k=4: 16 hosts, 20 switches) of 100 Gb/s links, 1 us each, WebSearch flows
# (traffic_gen's procedure) at 30% and 50% load for MS milliseconds of arrivals (default 5), ns-3's example
# config.txt otherwise (buffer 32 MB, ECN Kmin/Kmax 400/1600 KB at 100 Gb/s, PFC, 1000-byte payloads). Every
# algorithm sees the same trace (seed 1). Prints, per load and algorithm, the slowdown (FCT / ns-3's
# standalone FCT, at least 1) at p50/p95/p99 of all flows, of the short flows (the smallest 50%: under ~70
# KB with WebSearch) and of the long ones (the largest 10%), then the simulator's speed on the last run.
# Then the same on a k=8 fat tree (128 hosts, 80 switches) at 30% load for one algorithm, for its speed.
set -u
uroce=$1 ms=${2:-5} k=${3:-4}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" && mkdir mix || exit 1
ccs="dcqcn hpcc timely dctcp swift"
config() {  # TOPO FLOWS STOP_S
  cat <<CFG
ENABLE_QCN 1
USE_DYNAMIC_PFC_THRESHOLD 1
PACKET_PAYLOAD_SIZE 1000
TOPOLOGY_FILE $1
FLOW_FILE $2
FCT_OUTPUT_FILE mix/fct.txt
PFC_OUTPUT_FILE mix/pfc.txt
SIMULATOR_STOP_TIME $3
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
U_TARGET 0.95
MI_THRESH 0
KMAX_MAP 3 25000000000 400 50000000000 800 100000000000 1600
KMIN_MAP 3 25000000000 100 50000000000 200 100000000000 400
PMAX_MAP 3 25000000000 0.2 50000000000 0.2 100000000000 0.2
BUFFER_SIZE 32
CFG
}
# p50/p95/p99 of slowdowns (column 1) of the lines of stdin.
pct() { sort -g | awk '{v[NR]=$1} END {if (!NR) {print "     -      -      -"; exit}
  i50=int(NR*0.5); i95=int(NR*0.95); i99=int(NR*0.99); if (i50<1) i50=1; if (i95<1) i95=1; if (i99<1) i99=1;
  printf "%6.2f %6.2f %6.2f", v[i50], v[i95], v[i99]}'; }
summarise() {  # the FCT file -> one row: all, short (smallest 50%), long (largest 10%)
  local slow n
  slow=$(awk '{s=$7/$8; print (s<1?1:s), $5}' mix/fct.txt | sort -n -k 2)
  n=$(wc -l <<<"$slow")
  printf "%6d  %s   %s   %s\n" "$n" "$(pct <<<"$slow")" "$(head -n $((n / 2)) <<<"$slow" | pct)" \
    "$(tail -n $((n / 10 > 0 ? n / 10 : 1)) <<<"$slow" | pct)"
}
"$uroce" exp gen-topo fat-tree --k "$k" --rate 100G --delay 1000ns -o mix/fat.txt || exit 1
t=$(awk -v ms="$ms" 'BEGIN { printf "%.6f", ms / 1000 }')
stop=$(awk -v ms="$ms" 'BEGIN { printf "%.6f", 2 + 20 * ms / 1000 }')
echo "k=$k fat tree, WebSearch, $ms ms of arrivals, seed 1; slowdown p50 p95 p99"
for load in 0.3 0.5; do
  "$uroce" exp gen-flows -c websearch -n $((k * k * k / 4)) -l $load -b 100G -t "$t" --seed 1 -o mix/flow.txt 2>/dev/null || exit 1
  config mix/fat.txt mix/flow.txt "$stop" >mix/config.txt
  printf "\nload %s (%s flows)\n%-8s %6s  %-20s   %-20s   %-20s\n" $load "$(head -1 mix/flow.txt)" cc flows \
    "all" "short (50% by size)" "long (top 10%)"
  for cc in $ccs; do
    if ! "$uroce" exp --ns3 mix/config.txt --cc $cc >run.txt 2>&1; then
      printf "%-8s (not run: %s)\n" $cc "$(tail -1 run.txt)"
      continue
    fi
    printf "%-8s %s\n" $cc "$(summarise)"
    grep "^simulator:" run.txt >speed.txt
  done
  cat speed.txt
done
echo
echo "k=8 fat tree (128 hosts, 80 switches), WebSearch 30%, 0.5 ms of arrivals, dcqcn"
"$uroce" exp gen-topo fat-tree --k 8 --rate 100G --delay 1000ns -o mix/fat8.txt || exit 1
"$uroce" exp gen-flows -c websearch -n 128 -l 0.3 -b 100G -t 0.0005 --seed 1 -o mix/flow8.txt 2>/dev/null || exit 1
config mix/fat8.txt mix/flow8.txt 2.02 >mix/config8.txt
"$uroce" exp --ns3 mix/config8.txt --cc dcqcn >run8.txt 2>&1 || { cat run8.txt; exit 1; }
grep -E "^(finished|simulator)" run8.txt
printf "%-8s %s\n" dcqcn "$(summarise)"
