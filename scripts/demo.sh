#!/usr/bin/env bash
# The README's main job. On a fresh Debian 12 machine as root: installs what is missing, builds, and runs
# what uroce can do today, printing what it measured:
#   1. unmodified libibverbs tools see the uroce device (ibv_devices, ibv_devinfo);
#   2. verbs programs move data over uroce (RC/UC/UD, READ, atomics, SRQ) through the system's libibverbs;
#      2b-2d: a server and a client with no flags (ibv_rc_pingpong), the RDMA CM (rping, ib_write_bw -R, mckey),
#      UCX and Open MPI, each pair as two bare `uroce run` through the host switch;
#   3. the wire layer's cost next to memcpy and zlib, measured in the same run;
#   4. RC goodput against packet loss in the deterministic simulator;
#   5. unmodified perftest between two processes over a DPDK memif pair, beside raw memif and TCP loopback
#      (bench/bench_verbs_memif.sh: ratios and targets);
#   6. an ib_write_bw pair through the uroced host switch, with `uroce stats` and `uroce capture` meanwhile;
#   7-8. congestion control (DCQCN, HPCC, PFC) in the simulator and in real time through uroced.
# What is not there yet is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh >/dev/null
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" >/dev/null
uroce=build/release/tools/uroce

echo "== uroce setup (one-time root step: /dev/infiniband nodes)"
"$uroce" setup

echo
echo "== 1. Unmodified libibverbs tools over uroce"
"$uroce" run -- ibv_devices
"$uroce" run -- ibv_devinfo

echo
echo "== 2. Verbs programs moving data over uroce (two contexts in one process, in-process loopback)"
UROCE_PORT=loopback "$uroce" run -- build/release/tests/verbs_test --gtest_brief=1 2>&1 | tail -3

echo
echo "== 2b. A server and a client with no flags, as with an RNIC: two bare 'uroce run' through the host switch"
"$uroce" run -- ibv_rc_pingpong -g 0 -p 18998 >/tmp/uroce-demo-srv.log 2>&1 &
for _ in $(seq 100); do ss -ltn 'sport = :18998' | grep -q LISTEN && break; sleep 0.1; done
"$uroce" run -- ibv_rc_pingpong -g 0 -p 18998 127.0.0.1 | tail -2 || true
wait || true

echo
echo "== 2c. The RDMA CM: rping (data checked), ib_write_bw -R and mckey (multicast) between two bare 'uroce run'"
UROCE_UCMA_TRACE=1 "$uroce" run -- rping -s -a 127.0.0.1 -C 10 -V >/tmp/uroce-demo-rping.log 2>&1 &
for _ in $(seq 100); do grep -q "LISTEN.*-> ok" /tmp/uroce-demo-rping.log && break; sleep 0.1; done
"$uroce" run -- rping -c -a 127.0.0.1 -C 10 -V -v | tail -2 || true
wait || true
UROCE_UCMA_TRACE=1 "$uroce" run -- ib_write_bw -R -D 2 -p 18996 >/tmp/uroce-demo-bwr.log 2>&1 &
for _ in $(seq 100); do grep -q "LISTEN.*-> ok" /tmp/uroce-demo-bwr.log && break; sleep 0.1; done
"$uroce" run -- ib_write_bw -R -D 2 -p 18996 127.0.0.1 | grep -A1 "#bytes" || true
wait || true
# A receiver joins group 224.1.2.3 and waits for 10 datagrams; a sender joins it and sends them.
UROCE_UCMA_TRACE=1 timeout 30 "$uroce" run -- mckey -m 224.1.2.3 -C 10 >/tmp/uroce-demo-mckey.log 2>&1 &
for _ in $(seq 100); do grep -q "JOIN_IP_MCAST.*-> ok" /tmp/uroce-demo-mckey.log && break; sleep 0.1; done
timeout 30 "$uroce" run -- mckey -m 224.1.2.3 -s -C 10 | grep -E "joined|complete" || true
wait || true
grep -E "^mckey: joined|^data transfers complete" /tmp/uroce-demo-mckey.log | sed 's/^/receiver: /' || true

echo
echo "== 2d. UCX (ucx_perftest tag_bw at the UCP level) and Open MPI (pml ucx, 2 ranks) over uroce"
export UCX_NET_DEVICES=uroce0:1 UCX_TLS=rc_verbs,ud_verbs
"$uroce" run -- ucx_perftest -t tag_bw -n 2000 -s 65536 -p 18997 >/tmp/uroce-demo-ucx.log 2>&1 &
for _ in $(seq 100); do ss -ltn 'sport = :18997' | grep -q LISTEN && break; sleep 0.1; done
"$uroce" run -- ucx_perftest 127.0.0.1 -t tag_bw -n 2000 -s 65536 -p 18997 2>&1 | grep -E "Stage|Final" || true
wait || true
if [ -x build/release/tests/clients/mpi_exchange ]; then
  mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml ucx --mca osc ucx -x UCX_NET_DEVICES -x UCX_TLS \
    -x OMPI_MCA_pml_ucx_devices=any -x OMPI_MCA_pml_ucx_tls=any \
    "$uroce" run -- build/release/tests/clients/mpi_exchange 2>&1 | tail -3 || true
fi
unset UCX_NET_DEVICES UCX_TLS

echo
echo "== 3. Wire layer: ICRC and header build/parse next to memcpy and zlib (same run)"
build/release/bench/bench_wire --benchmark_min_time=0.05 2>/dev/null | sed -n '/^Summary/,$p'
echo "-- the engine's pass and a WRITE round with 0 (the baseline) to 10,000 idle QPs beside it (medians)"
build/release/bench/bench_engine --benchmark_min_time=0.05 2>/dev/null | grep -E '^Benchmark|_median'

echo
echo "== 4. Simulated RC goodput vs loss (100 Gb/s, 4 KiB MTU, go-back-N)"
build/release/bench/bench_goodput 200

echo
echo "== 5. Two processes over a DPDK memif pair: unmodified perftest beside raw memif and TCP loopback (same run)"
bash bench/bench_verbs_memif.sh build/release || true  # prints which targets are met; a miss is not a failure
echo
echo "== 6. Through the uroced host switch: an ib_write_bw pair, 'uroce stats' and 'uroce capture' while it runs"
demo_dir=$(mktemp -d)
uroce_abs=$(realpath "$uroce") uroced_abs=$(realpath build/release/tools/uroced/uroced)
(
  cd "$demo_dir"
  "$uroce_abs" run --port uroced -- ib_write_bw -d uroce0 -x 0 -F -D 4 -p 18999 >server.log 2>&1 &
  srv=$!
  for _ in $(seq 50); do ss -ltn 'sport = :18999' | grep -q LISTEN && break; sleep 0.1; done
  "$uroce_abs" run --port uroced -- ib_write_bw -d uroce0 -x 0 -F -D 4 -p 18999 127.0.0.1 >client.log 2>&1 &
  cli=$!
  sleep 2
  "$uroce_abs" stats --pid "$cli" | head -25 || true
  "$uroce_abs" capture --pid "$cli" -s 128 -c 2000 -w demo.pcap || true
  wait "$cli" "$srv" || true
  sed -n '/#bytes/,/^-/p' client.log
  echo "-- tshark: opcodes and PSNs of the first captured frames"
  tshark -r demo.pcap -d udp.port==4791,infiniband -T fields -e frame.number -e ip.src -e ip.dst \
    -e infiniband.bth.opcode -e infiniband.bth.psn 2>/dev/null | head -8 || true
  echo "-- uroced's ports"
  "$uroced_abs" --stats 2>/dev/null | head -8 || true
)
rm -rf "$demo_dir"

echo
echo "== 7. Congestion control in the deterministic simulator (DCQCN, HPCC, PFC)"
build/release/bench/bench_cc_sim || true

echo
echo "== 8. Congestion control in real time: two DCQCN flows through a 1 Gb/s ECN-marking uroced port"
demo_out=$(mktemp -d)
build/release/tools/uroce exp --realtime fair --duration 4 --out "$demo_out" 2>&1 | grep -v "^CSV" || true
rm -rf "$demo_out"

echo
echo "== Not there yet"
echo "One GID per host (each process leases its own from uroced), AF_IB in the RDMA CM,"
echo "fast-register MRs, type 2A windows, FLUSH, IPv6 through uroced, and the bandwidth and latency targets over"
echo "memif (section 5). README.md, 'Not yet'."
