#!/usr/bin/env bash
# exp_allreduce.sh UROCE UROCED
# `uroce exp --realtime allreduce`: 4 ranks (uroce-traffic allreduce processes) run a ring AllReduce of 4 MiB
# through uroced for 3 s. Every rank must check its sums and report, and the summary must give a non-zero bus
# bandwidth (nccl-tests' busbw = algbw * 2(n-1)/n) that matches the ranks' own algbw.
set -u
uroce=$1 uroced=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_exp_realtime_setup

"$uroce" exp --realtime allreduce --duration 3 --no-plots --out "$dir" >"$dir/out.txt" 2>&1 || { cat "$dir/out.txt"; fail "runner"; }
cat "$dir/out.txt"
line=$(grep "^allreduce " "$dir/out.txt") || fail "no allreduce summary line"
[ "$(sed -n 's/.* reported \([0-9]*\) .*/\1/p' <<<"$line")" = 4 ] || fail "not every rank reported"
read -r algbw busbw < <(sed -n 's/.* algbw \([0-9.]*\) Gb\/s  busbw \([0-9.]*\) Gb\/s.*/\1 \2/p' <<<"$line")
awk -v a="$algbw" -v b="$busbw" 'BEGIN { exit !(a > 0 && b > 1.49 * a && b < 1.51 * a) }' ||
  fail "busbw $busbw is not algbw $algbw * 2(4-1)/4"
[ "$(grep -l "sums checked" "$dir"/allreduce/ring/*.log | wc -l)" = 4 ] || fail "a rank did not check its sums"
[ "$(head -1 "$dir/allreduce/ring/queues.csv" | cut -d, -f1)" = time_us ] || fail "queues.csv header"
echo PASS
