#!/usr/bin/env bash
# bench_verbs_memif.sh [BUILD_DIR] - unmodified perftest between two processes over a direct DPDK memif pair,
# beside baselines measured in the same run:
#   raw memif      bench_memif: throughput at 4096-byte frames (the frames ib_write_bw 64 KiB sends with MTU
#                  4096) and 64-byte ping-pong round trips, between two DpdkPorts on two pinned threads;
#   TCP loopback   sockperf ping-pong, 14-byte messages (one-way latency, as sockperf reports it);
#   uroce          ib_write_bw -s 65536, ib_read_bw -s 65536, ib_write_lat -s 2, ib_send_lat -s 2 under
#                  `uroce run`, each side its own process with its own device, joined by memif (as
#                  tests/integration/memif_pair.sh). ib_read_bw has no target; it is reported beside the rest.
# perftest and sockperf report one-way latency (round trip / 2), so the memif figure they are set beside is
# half its round trip. Every uroce figure is the median of REPS runs (env REPS, default 3).
# Targets: bandwidth >= 0.6 x raw memif; median latency <= 2 x raw memif one-way and below TCP loopback.
# Needs the device nodes (`uroce setup`, once as root). Exits 0 when every target is met, 1 otherwise.
set -u
build=${1:-build/release}
uroce=$build/tools/uroce
bench_memif=$build/bench/bench_memif
reps=${REPS:-3}
for f in "$uroce" "$bench_memif"; do
  [ -x "$f" ] || { echo "bench_verbs_memif: $f not built (cmake --build $build --target uroce uroce_provider uroce_preload bench_memif)" >&2; exit 2; }
done
for t in ib_write_bw ib_read_bw ib_write_lat ib_send_lat sockperf; do
  command -v $t >/dev/null || { echo "bench_verbs_memif: $t not installed (scripts/install-deps.sh)" >&2; exit 2; }
done
[ "$(stat -c '%F %t:%T' /dev/infiniband/uroce_verbs0 2>/dev/null)" = "character special file 1:7" ] ||
  { echo "bench_verbs_memif: run 'sudo $uroce setup' once" >&2; exit 2; }

dir=$(mktemp -d)
spid=
cleanup() { [ -n "$spid" ] && kill "$spid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
port=18970  # client/server TCP ports 18971.. (other tests use 186xx, 187xx, 189[0-5]x)

median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "nan"}'; }
calc() { awk "BEGIN {printf \"%.${2:-2}f\", $1}"; }

# pair TOOL ARGS...: one server/client run; prints the client's result line (the one after the header).
pair() {
  port=$((port + 1))
  local sock=$dir/m$port.sock
  XDG_RUNTIME_DIR=$dir UROCE_PORT="memif:socket=$sock,role=server" \
    timeout 60 "$uroce" run --ip 127.1.0.1 -- "$@" -p $port >"$dir/server.log" 2>&1 &
  spid=$!
  for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
  sleep 0.3
  XDG_RUNTIME_DIR=$dir UROCE_PORT="memif:socket=$sock,role=client" \
    timeout 60 "$uroce" run --ip 127.1.0.2 -- "$@" -p $port 127.0.0.1 >"$dir/client.log" 2>&1
  wait "$spid"
  spid=
  awk '/#bytes/ {getline; print; exit}' "$dir/client.log"
}

echo "== baselines: raw memif (bench_memif) and TCP loopback (sockperf), same run"
"$bench_memif" --trials=5 --rtts=50000 2>/dev/null >"$dir/memif.txt"
memif_gbps=$(awk '$1 == 4096 && NF >= 8 {print $5; exit}' "$dir/memif.txt")
memif_rtt=$(awk '$1 == 64 && $2 == "memif" {print $4; exit}' "$dir/memif.txt")
memif_rtt99=$(awk '$1 == 64 && $2 == "memif" {print $5; exit}' "$dir/memif.txt")
sed -n '/^throughput/,/^ *4224/p;/^ping-pong/,/^ *64 tcp/p' "$dir/memif.txt"

sockperf server -i 127.0.0.1 -p 18969 --tcp >/dev/null 2>&1 &
sp=$!
sleep 0.5
sockperf ping-pong -i 127.0.0.1 -p 18969 --tcp -t 3 -m 14 >"$dir/sockperf.txt" 2>&1
kill $sp 2>/dev/null
wait $sp 2>/dev/null
tcp_med=$(awk '/percentile 50.000/ {print $NF}' "$dir/sockperf.txt")
tcp_p99=$(awk '/percentile 99.000/ {print $NF}' "$dir/sockperf.txt")
echo "sockperf TCP loopback ping-pong, 14 B: one-way median ${tcp_med:-?} us, p99 ${tcp_p99:-?} us"

echo
echo "== uroce over a memif pair: perftest, median of $reps runs each"
: >"$dir/bw" >"$dir/rbw" >"$dir/wl" >"$dir/wl99" >"$dir/sl" >"$dir/sl99"
for r in $(seq "$reps"); do
  line=$(pair ib_write_bw -d uroce0 -x 0 -F -s 65536 -D 3 --report_gbits)
  echo "ib_write_bw  64 KiB run $r: $line"
  echo "$line" | awk '{print $4}' >>"$dir/bw"
  line=$(pair ib_read_bw -d uroce0 -x 0 -F -s 65536 -D 2 --report_gbits)
  echo "ib_read_bw   64 KiB run $r: $line"
  echo "$line" | awk '{print $4}' >>"$dir/rbw"
  for t in write send; do
    line=$(pair ib_${t}_lat -d uroce0 -x 0 -F -s 2 -n 10000)
    echo "ib_${t}_lat 2 B    run $r: $line"
    echo "$line" | awk '{print $5}' >>"$dir/${t:0:1}l"
    echo "$line" | awk '{print $8}' >>"$dir/${t:0:1}l99"
  done
done
bw=$(median <"$dir/bw")
rbw=$(median <"$dir/rbw")
wl=$(median <"$dir/wl")
wl99=$(median <"$dir/wl99")
sl=$(median <"$dir/sl")
sl99=$(median <"$dir/sl99")

memif_ow=$(calc "${memif_rtt:-0} / 2")
memif_ow99=$(calc "${memif_rtt99:-0} / 2")
ok=0
verdict() { if awk "BEGIN {exit !($1)}"; then echo "met"; else ok=1; echo "NOT met"; fi; }

echo
echo "== summary (latency is one-way, in us: perftest typical / sockperf median; raw memif = round trip / 2)"
row() { printf "%-40s %10s %10s %8s  %s\n" "$@"; }
row "measure" "uroce" "baseline" "ratio" "target"
bw_ratio=$(calc "$bw / $memif_gbps")
row "ib_write_bw 64 KiB Gb/s vs raw memif" "$bw" "$memif_gbps" "$bw_ratio" ">= 0.60: $(verdict "$bw_ratio >= 0.6")"
row "ib_read_bw 64 KiB Gb/s vs raw memif" "$rbw" "$memif_gbps" "$(calc "$rbw / $memif_gbps")" "(no target)"
for t in write send; do
  med=$([ $t = write ] && echo "$wl" || echo "$sl")
  p99=$([ $t = write ] && echo "$wl99" || echo "$sl99")
  r=$(calc "$med / $memif_ow")
  row "ib_${t}_lat 2 B median vs raw memif" "$med" "$memif_ow" "$r" "<= 2: $(verdict "$r <= 2")"
  row "ib_${t}_lat 2 B median vs TCP loopback" "$med" "$tcp_med" "$(calc "$med / $tcp_med")" \
    "< 1: $(verdict "$med < $tcp_med")"
  row "ib_${t}_lat 2 B p99 vs raw memif p99" "$p99" "$memif_ow99" "$(calc "$p99 / $memif_ow99")" "(no target)"
  row "ib_${t}_lat 2 B p99 vs TCP loopback p99" "$p99" "$tcp_p99" "$(calc "$p99 / $tcp_p99")" "(no target)"
done
echo
echo "summary: ib_write_bw ${bw} Gb/s = ${bw_ratio}x raw memif (${memif_gbps} Gb/s), ib_read_bw ${rbw} Gb/s;" \
  "ib_write_lat ${wl}/${wl99} us, ib_send_lat ${sl}/${sl99} us (median/p99) vs raw memif one-way" \
  "${memif_ow}/${memif_ow99} us and TCP loopback ${tcp_med}/${tcp_p99} us"
exit $ok
