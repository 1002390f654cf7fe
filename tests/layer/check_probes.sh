#!/usr/bin/env bash
# check_probes.sh BUILD_DIR: the layer rule holds at compile time. A pure-layer object that includes a
# libibverbs, librdmacm or DPDK header fails to build with the rule's message; one without them builds.
set -u
build=$1
bad=0
for p in verbs rdmacm dpdk; do
  out=$(cmake --build "$build" --target layer_probe_$p 2>&1)
  if [ $? -eq 0 ]; then
    echo "FAIL: layer_probe_$p built: a pure layer could include a forbidden header"; bad=1
  elif ! grep -q "layer rule: transport/ and cc/ include no DPDK or libibverbs header" <<<"$out"; then
    echo "FAIL: layer_probe_$p failed, but not on the layer rule:"; echo "$out" | tail -5; bad=1
  else
    echo "layer_probe_$p refused: $(grep -o 'layer rule: [^"]*' <<<"$out" | head -1)"
  fi
done
if ! out=$(cmake --build "$build" --target layer_probe_ok 2>&1); then
  echo "FAIL: layer_probe_ok (no forbidden include) did not build:"; echo "$out" | tail -5; bad=1
fi
[ $bad = 0 ] && echo "layer rule enforced by the build"
exit $bad
