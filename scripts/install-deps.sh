#!/usr/bin/env bash
# Installs every package uroce needs to build, test and run its demo, by Debian 12 package name.
# Idempotent: packages already present are left alone. Run as root (CI and `README` commands do).
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git clang clang-format libclang-rt-14-dev llvm
  # datapath and provider
  dpdk dpdk-dev libdpdk-dev libibverbs-dev ibverbs-utils ibverbs-providers rdma-core perftest
  liburing-dev libboost-dev libisal-dev libnuma-dev libpcap-dev zlib1g-dev nlohmann-json3-dev
  # the command-line tools' argument parser (header-only)
  libcli11-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev googletest libbenchmark-dev tshark iproute2 iperf3 sockperf valgrind
  python3 python3-scapy gnuplot-nox procps
  # man_completion renders the man pages
  man-db
  # real clients the tests run over uroce
  ucx-utils libucx-dev openmpi-bin libopenmpi-dev
  # RDMA CM: librdmacm headers for the ucma tests, rping/udaddy/ucmatose
  librdmacm-dev rdmacm-utils
  # libfabric (fi_info, fi_pingpong) over its verbs provider
  libfabric-bin
  # qperf -cm1 over the RDMA CM
  qperf
  # between hosts: the rule that keeps the kernel off UDP 4791, and the congestion point of the netdev tests;
  # libbpf-dev for the af_xdp port's XDP program (built with clang -target bpf)
  nftables libbpf-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [[ $(id -u) != 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or: sudo $0)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer once, non-interactively.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
