#!/usr/bin/env bash
# Layer rule (DESIGN.md): transport/ and cc/ include neither DPDK nor libibverbs headers.
set -u
root=${1:-.}
bad=0
for d in transport cc; do
  [ -d "$root/$d" ] || continue
  hits=$(grep -rnE '#\s*include\s*[<"](rte_[^>"]*|infiniband/[^>"]*|rdma/[^>"]*|dpdk/[^>"]*)[>"]' "$root/$d")
  if [ -n "$hits" ]; then
    echo "layer rule broken: $d/ must not include DPDK or libibverbs headers:"
    echo "$hits"
    bad=1
  fi
done
[ $bad = 0 ] && echo "layer rules hold: transport/ and cc/ include no DPDK or libibverbs header"
exit $bad
