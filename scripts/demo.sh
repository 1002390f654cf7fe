#!/usr/bin/env bash
# The README's main job. On a fresh Debian 12 machine as root: installs what is missing, builds, and runs
# what uroce can do today, printing what it measured:
#   1. unmodified libibverbs tools see the uroce device (ibv_devices, ibv_devinfo);
#   2. verbs programs move data over uroce (RC/UC/UD, READ, atomics, SRQ) through the system's libibverbs;
#   3. the wire layer's cost next to memcpy and zlib, measured in the same run;
#   4. RC goodput against packet loss in the deterministic simulator.
#   5. unmodified perftest between two processes over a DPDK memif pair, beside raw memif and TCP loopback.
# The uroced host switch and congestion control are not built yet: the script says so at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh >/dev/null
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" >/dev/null
uroce=build/release/tools/uroce/uroce
[ -x "$uroce" ] || uroce=build/release/tools/uroce

echo "== uroce setup (one-time root step: /dev/infiniband nodes)"
"$uroce" setup

echo
echo "== 1. Unmodified libibverbs tools over uroce"
"$uroce" run -- ibv_devices
"$uroce" run -- ibv_devinfo

echo
echo "== 2. Verbs programs moving data over uroce (two contexts in one process, in-process loopback)"
"$uroce" run -- build/release/tests/verbs_test --gtest_brief=1 2>&1 | tail -3

echo
echo "== 3. Wire layer: ICRC and header build/parse next to memcpy and zlib (same run)"
build/release/bench/bench_wire --benchmark_min_time=0.05 2>/dev/null | sed -n '/^Summary/,$p'

echo
echo "== 4. Simulated RC goodput vs loss (100 Gb/s, 4 KiB MTU, go-back-N)"
build/release/bench/bench_goodput 200

pair() {  # pair PORT TOOL ARGS...: server and client in two processes joined by a memif pair
  local port=$1 dir
  shift
  dir=$(mktemp -d)
  UROCE_PORT="memif:socket=$dir/m.sock,role=server" "$uroce" run --ip 127.1.0.1 -- "$@" -p "$port" >"$dir/s" 2>&1 &
  for _ in $(seq 50); do [ -S "$dir/m.sock" ] && break; sleep 0.1; done
  sleep 0.3
  UROCE_PORT="memif:socket=$dir/m.sock,role=client" "$uroce" run --ip 127.1.0.2 -- "$@" -p "$port" 127.0.0.1 \
    2>&1 | sed -n '/#bytes/,$p' | grep -v '^-'
  wait
  rm -rf "$dir"
}

echo
echo "== 5. Two processes over a DPDK memif pair: unmodified perftest"
pair 18650 ib_write_bw -d uroce0 -x 0 -F -s 65536 -n 5000
pair 18651 ib_send_lat -d uroce0 -x 0 -F -s 2 -n 5000
pair 18652 ib_read_lat -d uroce0 -x 0 -F -s 2 -n 2000

echo
echo "== 6. Baselines in the same run: raw memif between two DPDK ports, and TCP loopback"
build/release/bench/bench_memif 2>/dev/null | tail -1

echo
echo "== Not built yet"
echo "The uroced host switch (so: direct memif pairs only), verbs programs over af_packet/veth, uroce stats and"
echo "capture, and congestion-control algorithms. See README.md."
