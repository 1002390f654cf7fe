#!/usr/bin/env bash
# exp_cli.sh UROCE
# `uroce exp` end to end: a scenario with --out writes, per variant, the CSV time series and the gnuplot PNGs
# (real PNG images of the configured size), plus summary.txt with the table printed on stdout and a manifest
# whose rerun line reproduces the CSVs byte for byte, as a second run with the same seed does; --no-plots
# writes the CSVs only; an unknown scenario or key is a usage error (exit 2) naming it; --list names all ten
# scenarios. gnuplot (gnuplot-nox, scripts/install-deps.sh) is required: without it there would be no PNG.
set -u
uroce=$1
command -v gnuplot >/dev/null || { echo "FAIL: gnuplot is not installed (scripts/install-deps.sh)"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$uroce" exp ecn-threshold workload=incast --out "$dir/p" --duration-us 1000 >"$dir/out.txt" 2>"$dir/err.txt" ||
  { cat "$dir/out.txt" "$dir/err.txt"; fail "uroce exp ecn-threshold"; }
cat "$dir/out.txt"
root=$dir/p/ecn-threshold
for v in vendor kmin-div30; do
  grep -q "^$v " "$dir/out.txt" || fail "no summary row for $v on stdout"
  grep -q "^$v " "$root/summary.txt" || fail "no summary row for $v in summary.txt"
  for csv in flows queues counters; do
    f=$root/$v/$csv.csv
    [ -s "$f" ] || fail "$f missing or empty"
    [ "$(wc -l <"$f")" -ge 10 ] || fail "$f has under 10 rows"
    head -1 "$f" | grep -q '^time_us,' || fail "$f has no time_us header"
  done
  for png in rates queue counters; do
    f=$root/$v/$png.png
    [ -f "$f" ] || { cat "$root/$v/gnuplot.log" 2>/dev/null; fail "$f missing"; }
    /usr/bin/python3 - "$f" <<'PY' || fail "$f is not a 900x500 PNG with content"
import struct, sys
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n" and b[12:16] == b"IHDR", "no PNG signature"
w, h = struct.unpack(">II", b[16:24])
assert (w, h) == (900, 500), (w, h)
assert len(b) > 5000, f"only {len(b)} bytes: an empty plot"
PY
  done
done
# The summary file holds the stdout table.
diff <(grep -E '^(variant|vendor|kmin-div30) ' "$dir/out.txt") <(grep -E '^(variant|vendor|kmin-div30) ' "$root/summary.txt") ||
  fail "summary.txt differs from the table on stdout"

"$uroce" exp hpcc-incast --out "$dir/n" --duration-us 500 --no-plots >/dev/null 2>&1 || fail "--no-plots run"
ls "$dir"/n/hpcc-incast/*/flows.csv >/dev/null 2>&1 || fail "--no-plots wrote no CSV"
! ls "$dir"/n/hpcc-incast/*/*.png >/dev/null 2>&1 || fail "--no-plots wrote PNGs"

# Reproducible: the same seed and knobs give byte-identical CSVs and summary; the manifest names every knob
# (defaults included, and the scenario's own algorithm settings) and its rerun line gives the same files.
run_incast() { "$uroce" exp incast n=6 kmin_kb=40 --seed 9 --duration-us 1500 --no-plots "$@" >/dev/null 2>&1; }
run_incast --out "$dir/r1" || fail "reproducibility run 1"
run_incast --out "$dir/r2" || fail "reproducibility run 2"
m=$dir/r1/incast/manifest.txt
for want in "^seed 9$" "^duration_us 1500$" "^knob n 6 (given)$" "^knob kmin_kb 40 (given)$" \
  "^knob kmax_kb 400 (default)$" "^knob cc.rpg_time_reset 20 (default)$" "^revision uroce "; do
  grep -q "$want" "$m" || fail "manifest has no line matching '$want'"
done
rerun=$(sed -n 's/^rerun uroce //p' "$m")
[ -n "$rerun" ] || fail "manifest has no rerun line"
# shellcheck disable=SC2086
"$uroce" $rerun --out "$dir/r3" --no-plots >/dev/null 2>&1 || fail "the manifest's rerun line failed: $rerun"
for r in r2 r3; do
  for f in flows cc_rates queues counters fct; do
    cmp -s "$dir/r1/incast/incast6/$f.csv" "$dir/$r/incast/incast6/$f.csv" || fail "$r: $f.csv differs from run 1"
  done
  cmp -s "$dir/r1/incast/summary.txt" "$dir/$r/incast/summary.txt" || fail "$r: summary.txt differs"
done

"$uroce" exp nosuch >/dev/null 2>"$dir/e1"; rc=$?
[ $rc = 2 ] && grep -q "unknown scenario 'nosuch'" "$dir/e1" || fail "unknown scenario: exit $rc, $(head -1 "$dir/e1")"
"$uroce" exp incast nokey=1 --no-plots >/dev/null 2>"$dir/e2"; rc=$?
[ $rc != 0 ] && grep -q "unknown key 'nokey'" "$dir/e2" || fail "unknown key: exit $rc, $(head -1 "$dir/e2")"
"$uroce" exp --list >"$dir/list" 2>&1 || fail "exp --list"
for s in incast fair2 pfc-vs-dcqcn ecn-threshold incast-burst ecmp credit-vs-pfc pfc-storm pfc-deadlock hpcc-incast allreduce-loss cnp-loss; do
  grep -q "$s" "$dir/list" || fail "--list does not name $s"
done
echo "PASS"
