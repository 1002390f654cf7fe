#!/usr/bin/env bash
# compare.sh UROCE UROCED [ROUNDS]
# Not a ctest: measures ib_write_bw (64 KiB) and ib_send_lat (2 B) between two processes through uroced and
# over a direct memif pair, alternating, in the same run, and prints both side by side.
set -u
uroce=$1 uroced=$2 rounds=${3:-2}
here=$(dirname "$0")
bw() { awk '/^ *65536 /{print $4; exit}'; }
lat() { awk '/^ *2 /{print $5; exit}'; }  # t_typical [usec]
for r in $(seq "$rounds"); do
  d=$("$here/../integration/memif_pair.sh" "$uroce" 18950 -- ib_write_bw -d uroce0 -x 0 -F -n 3000 2>&1 | bw)
  u=$("$here/uroced_pair.sh" "$uroce" "$uroced" 18951 -- ib_write_bw -d uroce0 -x 0 -F -n 3000 2>&1 | bw)
  echo "round $r ib_write_bw 64KiB MB/s: direct memif $d, through uroced $u"
  d=$("$here/../integration/memif_pair.sh" "$uroce" 18952 -- ib_send_lat -d uroce0 -x 0 -F -s 2 -n 3000 2>&1 | lat)
  u=$("$here/uroced_pair.sh" "$uroce" "$uroced" 18953 -- ib_send_lat -d uroce0 -x 0 -F -s 2 -n 3000 2>&1 | lat)
  echo "round $r ib_send_lat 2B typical us: direct memif $d, through uroced $u"
done
