#!/usr/bin/env bash
# check_probes.sh BUILD_DIR: the layer rules hold at compile time.
# - A pure-layer object (transport/, cc/) that includes a libibverbs, librdmacm or DPDK header fails to build
#   with the rule's message; one without them builds.
# - A layer's object that includes a project folder its layer may not use fails to build because the folder
#   is not on its include path (uroce_layer); one that includes only allowed folders builds.
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
for p in cc_transport:transport/device.h transport_provider:provider/engine.h \
         transport_runtime:runtime/runtime_dir.h glue_provider:provider/engine.h tools_provider:provider/engine.h; do
  name=${p%%:*} header=${p#*:}
  out=$(cmake --build "$build" --target layer_probe_$name 2>&1)
  if [ $? -eq 0 ]; then
    echo "FAIL: layer_probe_$name built: its layer could include $header"; bad=1
  elif ! grep -q "$header: No such file or directory" <<<"$out"; then
    echo "FAIL: layer_probe_$name failed, but not for want of $header:"; echo "$out" | tail -5; bad=1
  else
    echo "layer_probe_$name refused: $header is not on its layer's include path"
  fi
done
for p in ok layer_ok; do
  if ! out=$(cmake --build "$build" --target layer_probe_$p 2>&1); then
    echo "FAIL: layer_probe_$p (only allowed includes) did not build:"; echo "$out" | tail -5; bad=1
  fi
done
[ $bad = 0 ] && echo "layer rules enforced by the build"
exit $bad
