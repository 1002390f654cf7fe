#!/usr/bin/env bash
# exp_realtime.sh UROCE UROCED
# `uroce exp --realtime fair`: two ib_write_bw flows through a 1 Gb/s ECN-marking uroced port with DCQCN. The
# runner must finish with the client's exit status 0, write flows.csv and queues.csv with samples, and print a
# summary whose throughput is non-zero and whose port marked frames and sender handled CNPs. Bad input (an
# unknown scenario or key) exits 2 naming it.
set -u
uroce=$1 uroced=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_exp_realtime_setup

out=$("$uroce" exp --realtime fair bogus=1 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "unknown key 'bogus'" <<<"$out" || fail "bad key: rc $rc: $out"
out=$("$uroce" exp --realtime nosuch 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "unknown scenario 'nosuch'" <<<"$out" || fail "bad scenario: rc $rc: $out"

"$uroce" exp --realtime fair --duration 3 --no-plots --out "$dir" >"$dir/out.txt" 2>&1 || { cat "$dir/out.txt"; fail "runner"; }
cat "$dir/out.txt"
line=$(grep "^dcqcn " "$dir/out.txt") || fail "no summary line"
field() { sed -n "s/.* $1 \([0-9.]*\).*/\1/p" <<<"$line"; }
[ "$(field "client exit")" = 0 ] || fail "client exit status"
awk -v t="$(field throughput)" 'BEGIN { exit !(t > 0) }' || fail "zero throughput"
[ "$(field ecn_marked)" -gt 0 ] || fail "no ECN marks"
[ "$(field cnp_handled)" -gt 0 ] || fail "no CNPs handled"
[ "$(wc -l <"$dir/fair/dcqcn/flows.csv")" -gt 3 ] || fail "flows.csv has no samples"
[ "$(wc -l <"$dir/fair/dcqcn/queues.csv")" -gt 3 ] || fail "queues.csv has no samples"
echo PASS
