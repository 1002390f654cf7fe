#!/usr/bin/env bash
# exp_incast.sh UROCE UROCED
# `uroce exp --realtime incast`: 4 separate sender processes (uroce-traffic clients) WRITE into one receiver
# process through a 500 Mb/s ECN-marking uroced port, for 5 s per variant (~17 s in all). With DCQCN (the scenario's
# parameters for this rate) every flow moves data, Jain >= 0.9 and the median queue over the window stays
# below Kmax; with no CC (variant pfc) uroced sends the senders PFC frames, which their MACs obey (frames held,
# seen in each sender's exit stats), and its ingress pause holds them back (pauses > 0). Both
# variants write the simulator's CSV files (headers checked), and the manifest lists the knobs.
set -u
uroce=$1 uroced=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_exp_realtime_setup

UROCE_STATS_ON_EXIT=1 "$uroce" exp --realtime incast --duration 5 --out "$dir" >"$dir/out.txt" 2>&1 || { cat "$dir/out.txt"; fail "runner"; }
cat "$dir/out.txt"
base=$dir/incast
num() { sed -n "s/.* $2 \([0-9.]*\).*/\1/p" <<<"$1"; }

line=$(grep "^dcqcn " "$dir/out.txt") || fail "no dcqcn summary line"
[ "$(num "$line" flows)" = 4 ] || fail "dcqcn: not 4 flows"
[ "$(num "$line" "client exit")" = 0 ] || fail "dcqcn: a sender failed"
per_flow=$(sed -n 's/.* per flow \([0-9. ]*\)  Jain.*/\1/p' <<<"$line")
for g in $per_flow; do awk -v g="$g" 'BEGIN { exit !(g > 0.01) }' || fail "dcqcn: a flow moved (almost) nothing: $per_flow"; done
awk -v j="$(num "$line" Jain)" 'BEGIN { exit !(j >= 0.9) }' || fail "dcqcn: Jain below 0.9"
read -r p50 p99 qmax kmin kmax < <(sed -n 's|.* queue p50/p99/max \([0-9]*\)/\([0-9]*\)/\([0-9]*\) KiB (Kmin/Kmax \([0-9]*\)/\([0-9]*\),.*|\1 \2 \3 \4 \5|p' <<<"$line")
[ -n "${kmax:-}" ] || fail "dcqcn: no queue figures"
[ "$p50" -lt "$kmax" ] || fail "dcqcn: median queue $p50 KiB is not below Kmax $kmax KiB"
[ "$(num "$line" cnp_handled)" -gt 0 ] || fail "dcqcn: no CNPs handled"
dcqcn_pauses=$(num "$line" pauses)
for i in 0 1 2 3; do
  grep -q "^client: [1-9][0-9]* writes" "$base/dcqcn/client$i.log" || fail "dcqcn: sender $i completed no WRITE"
done

line=$(grep "^pfc " "$dir/out.txt") || fail "no pfc summary line"
[ "$(num "$line" flows)" = 4 ] || fail "pfc: not 4 flows"
[ "$(num "$line" "client exit")" = 0 ] || fail "pfc: a sender failed"
pfc_pauses=$(num "$line" pauses)
[ "$pfc_pauses" -gt 0 ] || fail "pfc: no pauses"
[ "$(num "$line" pfc_frames)" -gt 0 ] || fail "pfc: uroced sent no PFC frames"
for i in 0 1 2 3; do
  st=$(grep "stats:" "$base/pfc/client$i.log") || fail "pfc: sender $i printed no stats"
  grep -Eq " pfc_rx=[1-9][0-9]* .* pfc_tx_held=[1-9]" <<<"$st" || fail "pfc: sender $i did not obey PFC: $st"
done
# With DCQCN the pause holds the senders back less often than without CC (how much less depends on the load
# the machine carries beside the test: 46..1352 against ~2400 were measured).
[ "$dcqcn_pauses" -lt "$pfc_pauses" ] || fail "dcqcn paused $dcqcn_pauses times, pfc $pfc_pauses"

for v in dcqcn pfc; do
  [ "$(head -1 "$base/$v/flows.csv")" = "time_us,flow0_gbps,flow1_gbps,flow2_gbps,flow3_gbps" ] || fail "$v: flows.csv header"
  [ "$(head -1 "$base/$v/cc_rates.csv")" = "time_us,flow0_cc_gbps,flow1_cc_gbps,flow2_cc_gbps,flow3_cc_gbps" ] ||
    fail "$v: cc_rates.csv header"
  [ "$(head -1 "$base/$v/counters.csv")" = "time_us,pause_frames,cnp_sent,ecn_marked,drops" ] || fail "$v: counters.csv header"
  grep -Eq '^time_us,uroced\.[0-9.]+_kb$' <(head -1 "$base/$v/queues.csv") || fail "$v: queues.csv header"
  # At least 1 sample per 3 ms of the 5 s run, and rate rows every 10 ms.
  [ "$(wc -l <"$base/$v/queues.csv")" -gt 1500 ] || fail "$v: queues.csv has too few samples"
  [ "$(wc -l <"$base/$v/flows.csv")" -gt 300 ] || fail "$v: flows.csv has too few rows"
  if command -v gnuplot >/dev/null; then
    [ -s "$base/$v/rates.png" ] && [ -s "$base/$v/queue.png" ] || fail "$v: no PNG plots"
  fi
done
grep -q "^revision " "$base/manifest.txt" && grep -q "^knob rate 500m" "$base/manifest.txt" &&
  grep -q "^cc_params .*min_time_between_cnps" "$base/manifest.txt" || fail "manifest.txt"
echo PASS
