#!/usr/bin/env bash
# check_probes.sh BUILD_DIR: the layer rules hold at compile time.
# - A pure-layer object (transport/, cc/) that includes a libibverbs, librdmacm or DPDK header fails to build
#   with the rule's message; one without them builds.
# - A layer's object that includes a project folder its layer may not use fails to build because the folder
#   is not on its include path (uroce_layer); one that includes only allowed folders builds.
set -u
build=$1
bad=0
# refused PROBE MESSAGE WHY: PROBE must fail to build, with MESSAGE in the compiler's output.
refused() {
  local out
  if out=$(cmake --build "$build" --target "layer_probe_$1" 2>&1); then
    echo "FAIL: layer_probe_$1 built: $3"; bad=1
  elif ! grep -qF "$2" <<<"$out"; then
    echo "FAIL: layer_probe_$1 failed, but not with '$2':"; echo "$out" | tail -5; bad=1
  else
    echo "layer_probe_$1 refused: $2"
  fi
}
for p in verbs:infiniband/verbs.h rdmacm:rdma/rdma_cma.h dpdk:dpdk/rte_mbuf.h; do
  refused "${p%%:*}" "layer rule: transport/, cc/, fabric/ and sim/ include no DPDK or libibverbs header (${p#*:})" \
    "a pure layer could include a forbidden header"
done
for p in cc_transport:transport/device.h transport_provider:provider/engine.h \
         transport_runtime:runtime/runtime_dir.h transport_fabric:fabric/fabric.h fabric_sim:sim/event_queue.h \
         glue_provider:provider/engine.h tools_provider:provider/engine.h; do
  refused "${p%%:*}" "${p#*:}: No such file or directory" "its layer could include ${p#*:}"
done
for p in ok layer_ok; do
  if ! out=$(cmake --build "$build" --target layer_probe_$p 2>&1); then
    echo "FAIL: layer_probe_$p (only allowed includes) did not build:"; echo "$out" | tail -5; bad=1
  fi
done
[ $bad = 0 ] && echo "layer rules enforced by the build"
exit $bad
