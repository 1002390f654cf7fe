#!/usr/bin/env bash
# uroce exp --realtime SCENARIO [--out DIR] [--duration S] [--cc NAME] [--no-plots] [key=value ...]
# uroce exp --realtime --list
#
# Real verbs traffic through uroced in real time, at rates the CPU can carry: unmodified ib_write_bw with
# several QPs (flows) between two processes, the server's uroced port rate-limited and (per variant)
# ECN-marking, every device on the chosen congestion control. While it runs, the per-QP counters of the
# sending process (`uroce stats --json`) and the server port's queue (`uroced --stats`) are sampled every
# 200 ms into CSV files; at the end a summary (per-flow throughput, utilisation of the port rate, Jain
# fairness and queue p50/p99/max over the last 80%, ECN marks, pauses, CNPs) and, with gnuplot, PNG plots.
# `uroce exp --realtime` runs this script with UROCE and UROCED set; it can be run by hand the same way.
set -u
uroce=${UROCE:-uroce} uroced=${UROCED:-uroced}

usage() {
  cat <<'EOF'
uroce exp --realtime SCENARIO [--out DIR] [--duration S] [--cc NAME] [--no-plots] [key=value ...]

Scenarios (real time, through uroced; each variant runs its own uroced):
  fair           N flows (ib_write_bw -q N between two processes) share one rate-limited, ECN-marking
                 port; with DCQCN they should split it evenly and hold the queue near the ECN thresholds.
  pfc-vs-dcqcn   the same flows with no congestion control, held back only by uroced's lossless ingress
                 pause, then with DCQCN and ECN: how often the port pauses and how deep the queue stands.
  ecn-threshold  DCQCN with ECN thresholds at their default and at 1/30 of it: marking too early costs
                 throughput (operators report it); here the rate floor decides how much.

Keys: rate=1g flows=2 kmin=32k kmax=256k pmax=0.2 msg=65536 (defaults shown); cc.PARAM=V sets a parameter
of the algorithm (UROCE_CC_PARAMS, docs/cc.md), e.g. cc.clamp_tgt_rate=1.
--cc sets UROCE_CC for the DCQCN variants (default dcqcn); --duration the seconds of traffic (default 6).
EOF
}

scenario="" out=exp-out duration=6 cc=dcqcn plots=1
rate=1g flows=2 kmin=32k kmax=256k pmax=0.2 msg=65536 ccparams=""
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help|--list) usage; exit 0 ;;
    --out) out=${2:?--out needs a value}; shift ;;
    --duration) duration=${2:?--duration needs a value}; shift ;;
    --cc) cc=${2:?--cc needs a value}; shift ;;
    --no-plots) plots=0 ;;
    rate=*|flows=*|kmin=*|kmax=*|pmax=*|msg=*) declare "${1%%=*}=${1#*=}" ;;
    cc.*=*) ccparams+="${ccparams:+,}${1#cc.}" ;;
    *=*) echo "uroce exp --realtime: unknown key '${1%%=*}' (rate flows kmin kmax pmax msg cc.PARAM)" >&2; exit 2 ;;
    -*) echo "uroce exp --realtime: unknown option '$1'" >&2; exit 2 ;;
    *) [ -z "$scenario" ] || { echo "uroce exp --realtime: more than one scenario" >&2; exit 2; }; scenario=$1 ;;
  esac
  shift
done
case $scenario in
  fair|pfc-vs-dcqcn|ecn-threshold) ;;
  "") echo "uroce exp --realtime: missing scenario (--list shows them)" >&2; exit 2 ;;
  *) echo "uroce exp --realtime: unknown scenario '$scenario' (--list shows them)" >&2; exit 2 ;;
esac
[[ $duration =~ ^[0-9]+$ ]] && [ "$duration" -ge 2 ] && [ "$duration" -le 600 ] ||
  { echo "uroce exp --realtime: --duration must be 2..600 seconds" >&2; exit 2; }
[[ $flows =~ ^[0-9]+$ ]] && [ "$flows" -ge 1 ] && [ "$flows" -le 16 ] ||
  { echo "uroce exp --realtime: key 'flows' must be 1..16" >&2; exit 2; }
[[ $msg =~ ^[0-9]+$ ]] && [ "$msg" -ge 4096 ] ||
  { echo "uroce exp --realtime: key 'msg' must be a byte count >= 4096" >&2; exit 2; }
command -v ib_write_bw >/dev/null || { echo "uroce exp --realtime: ib_write_bw (perftest) is not installed" >&2; exit 2; }
"$uroced" --help >/dev/null 2>&1 || { echo "uroce exp --realtime: cannot run uroced ($uroced); set UROCED" >&2; exit 2; }
scale_k() { awk -v v="$1" 'BEGIN { m = 1; if (v ~ /[kK]$/) m = 1024; if (v ~ /[mM]$/) m = 1048576; sub(/[kKmM]$/, "", v); printf "%d", v * m }'; }

# variant NAME CC ECN(on|off) KMIN KMAX
run_variant() {
  local name=$1 vcc=$2 ecn=$3 vkmin=$4 vkmax=$5
  local vdir=$out/$scenario/$name rt
  mkdir -p "$vdir"
  rt=$(mktemp -d)
  local ecn_args=()
  [ "$ecn" = on ] && ecn_args=(--ecn "$vkmin,$vkmax,$pmax")
  echo "== $scenario/$name: $flows flows, port rate $rate, ECN ${ecn/on/$vkmin..$vkmax p$pmax}, cc $vcc, ${duration}s" >&2
  (
    export XDG_RUNTIME_DIR=$rt UROCE_CC=$vcc
    if [ "$vcc" != none ] && [ -n "$ccparams" ]; then export UROCE_CC_PARAMS=$ccparams; else unset UROCE_CC_PARAMS; fi
    "$uroced" --daemon --rate "$rate" "${ecn_args[@]}" --idle-exit 5 >/dev/null || exit 1
    local port=$((19500 + RANDOM % 400)) args spid cpid
    args=(ib_write_bw -d uroce0 -x 0 -F -q "$flows" -s "$msg" -D "$duration" -p "$port")
    "$uroce" run --port uroced -- "${args[@]}" >"$vdir/server.log" 2>&1 &
    spid=$!
    for _ in $(seq 100); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.1; done
    sleep 0.3
    "$uroce" run --port uroced -- "${args[@]}" 127.0.0.1 >"$vdir/client.log" 2>&1 &
    cpid=$!
    local t0 now
    t0=$(date +%s.%N)
    : >"$vdir/samples.jsonl"
    : >"$vdir/port.txt"
    while kill -0 $cpid 2>/dev/null; do
      now=$(date +%s.%N)
      "$uroce" stats --json --pid $cpid 2>/dev/null | tr -d '\n' | sed "s/^/{\"t\": $(awk "BEGIN{print $now-$t0}"), \"s\": /; s/\$/}\n/" >>"$vdir/samples.jsonl"
      "$uroced" --stats 2>/dev/null | awk -v t="$(awk "BEGIN{print $now-$t0}")" '/^port=127.1.0.[12] /{print "t=" t, $0}' >>"$vdir/port.txt"
      sleep 0.2
    done
    wait $cpid; echo $? >"$vdir/client.rc"
    wait $spid
    sleep 0.5
    "$uroce" stats --json >/dev/null 2>&1
    "$uroced" --stop >/dev/null 2>&1
    cp "$rt"/uroce-*/uroced.log "$vdir/" 2>/dev/null
  )
  rm -rf "$rt"
}

case $scenario in
  fair) run_variant "$cc" "$cc" on "$kmin" "$kmax" ;;
  pfc-vs-dcqcn)
    run_variant pause-only none off "$kmin" "$kmax"
    run_variant "$cc+pause" "$cc" on "$kmin" "$kmax" ;;
  ecn-threshold)
    run_variant "kmin=$kmin" "$cc" on "$kmin" "$kmax"
    run_variant "kmin=1_30" "$cc" on "$(($(scale_k "$kmin") / 30))" "$(($(scale_k "$kmax") / 30))" ;;
esac

python3 - "$out/$scenario" "$rate" "$plots" <<'PY'
import json, os, re, subprocess, sys
base, rate_text, plots = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
def rate_bps(t):
    m = re.fullmatch(r"([0-9.]+)([kmgKMG]?)", t)
    return float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2).lower()]
port_rate = rate_bps(rate_text)
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))] if v else 0
summary = []
for name in sorted(os.listdir(base)):
    d = os.path.join(base, name)
    if not os.path.isdir(d): continue
    rows = []
    for line in open(os.path.join(d, "samples.jsonl")):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        s = j["s"][0] if isinstance(j["s"], list) and j["s"] else None
        if not s: continue
        rows.append((j["t"], s))
    qps = sorted({q["qpn"] for _, s in rows for q in s.get("qps", []) if q.get("tx_bytes", 0) > 1_000_000})
    with open(os.path.join(d, "flows.csv"), "w") as f:
        f.write("t_s," + ",".join(f"qp{q}_gbps,qp{q}_cc_rate_gbps" for q in qps) + "\n")
        prev = None
        per_flow = {q: [] for q in qps}
        for t, s in rows:
            by = {q["qpn"]: q for q in s.get("qps", [])}
            if prev:
                pt, pby = prev
                dt = t - pt
                cols = []
                for q in qps:
                    b = by.get(q, {}).get("tx_bytes", 0) - pby.get(q, {}).get("tx_bytes", 0)
                    g = max(b, 0) * 8 / dt / 1e9 if dt > 0 else 0
                    per_flow[q].append((t, g))
                    cols += [f"{g:.4f}", f"{by.get(q, {}).get('cc_rate_bps', 0) / 1e9:.4f}"]
                f.write(f"{t:.3f}," + ",".join(cols) + "\n")
            prev = (t, by)
    queue, pauses, marks = [], 0, 0
    with open(os.path.join(d, "queue.csv"), "w") as f:
        f.write("t_s,queue_bytes,pauses,ecn_marked\n")
        for line in open(os.path.join(d, "port.txt")):
            kv = dict(x.split("=", 1) for x in line.split() if "=" in x)
            if "queue_bytes" not in kv: continue
            if kv["port"] == "127.1.0.2":  # the client's port: ingress pauses are counted where they happen
                pauses = int(kv["pauses"])
                continue
            t = float(kv["t"])
            queue.append((t, int(kv["queue_bytes"])))
            marks = int(kv["ecn_marked"])
            f.write(f"{t:.3f},{kv['queue_bytes']},{pauses},{kv['ecn_marked']}\n")
    dev = rows[-1][1].get("device", {}) if rows else {}
    # The traffic phase: from the first to the last sample with data moving (perftest sets up first and
    # tears down after); the summary covers its last 80%.
    busy = sorted({t for q in qps for t, g in per_flow[q] if g > 0})
    tbeg, tend = (busy[0], busy[-1]) if busy else (0, 0)
    cut = tbeg + 0.2 * (tend - tbeg)
    window = lambda series: [v for t, v in series if cut <= t <= tend]
    means = [sum(window(per_flow[q])) / max(1, len(window(per_flow[q]))) for q in qps]
    total = sum(means)
    jain = total * total / (len(means) * sum(m * m for m in means)) if means and any(means) else 0
    qwin = window(queue)
    rc = open(os.path.join(d, "client.rc")).read().strip() if os.path.exists(os.path.join(d, "client.rc")) else "?"
    line = (f"{name:<18} flows {len(qps)}  throughput {total:.3f} Gb/s ({100 * total * 1e9 / port_rate:.1f}% of {rate_text})"
            f"  per flow {' '.join(f'{m:.3f}' for m in means)}  Jain {jain:.3f}"
            f"  queue p50/p99/max {pct(qwin, 50) // 1024}/{pct(qwin, 99) // 1024}/{max(qwin, default=0) // 1024} KiB"
            f"  ecn_marked {marks}  pauses {pauses}  cnp_handled {dev.get('cnp_handled', 0)}"
            f"  cc_rate_changes {dev.get('cc_rate_changes', 0)}  client exit {rc}")
    summary.append(line)
    if plots and subprocess.run(["sh", "-c", "command -v gnuplot"], capture_output=True).returncode == 0 and qps:
        series = ", ".join(f"'{d}/flows.csv' using 1:{2 * i + 2} with lines title 'QP {q} Gb/s'" for i, q in enumerate(qps))
        script = (f"set terminal pngcairo size 900,500; set datafile separator ','; set key outside;"
                  f"set output '{d}/rates.png'; set xlabel 's'; set ylabel 'Gb/s'; set title '{name}: per-flow throughput';"
                  f"plot {series};"
                  f"set output '{d}/queue.png'; set ylabel 'KiB'; set title '{name}: queue at the server port';"
                  f"plot '{d}/queue.csv' using 1:($2/1024) with lines title 'queue';")
        subprocess.run(["gnuplot", "-e", script], capture_output=True)
with open(os.path.join(base, "summary.txt"), "w") as f:
    f.write("\n".join(summary) + "\n")
print("\n".join(summary))
print(f"CSV{' and plots' if plots else ''} in {base}/<variant>/ (flows.csv, queue.csv)")
PY
