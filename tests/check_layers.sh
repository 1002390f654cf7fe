#!/usr/bin/env bash
# Layer rule (DESIGN.md): transport/ and cc/ include neither DPDK nor libibverbs headers.
set -u
root=${1:-.}
bad=0
for d in transport cc; do
  # A moved or renamed folder must not pass as a folder with no violations.
  [ -d "$root/$d" ] || { echo "layer rule check: $root/$d is missing (moved? update this script)"; bad=1; continue; }
  [ -n "$(find "$root/$d" -name '*.cc' -o -name '*.h' | head -1)" ] || { echo "no sources under $root/$d"; bad=1; continue; }
  hits=$(grep -rnE '#\s*include\s*[<"](rte_[^>"]*|infiniband/[^>"]*|rdma/[^>"]*|dpdk/[^>"]*)[>"]' "$root/$d")
  if [ -n "$hits" ]; then
    echo "layer rule broken: $d/ must not include DPDK or libibverbs headers:"
    echo "$hits"
    bad=1
  fi
done
[ $bad = 0 ] && echo "layer rules hold: transport/ and cc/ include no DPDK or libibverbs header"
exit $bad
