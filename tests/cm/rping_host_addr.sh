#!/usr/bin/env bash
# rping_host_addr.sh UROCE UROCED
# An RDMA CM client that names one of its host's interface addresses (not 127.0.0.1) reaches a server on
# that host, as with an RNIC bound to that interface: rping_bare.sh run inside a network namespace this
# script creates, whose only interfaces besides lo are the two ends of a veth pair, one with 10.214.0.1 (so the test does not
# depend on the machine's own addresses, and nothing leaves the namespace). Once with the server on the
# wildcard, once bound to 10.214.0.1 itself. The namespace is deleted whatever happens.
# Exits 77 (ctest SKIP) when not root, without `ip netns`, or without rping.
set -u
uroce=$1 uroced=$2
if [ "$(id -u)" != 0 ]; then echo "SKIP: network namespaces need root"; exit 77; fi
if ! ip netns list >/dev/null 2>&1; then echo "SKIP: 'ip netns' is not available"; exit 77; fi
command -v rping >/dev/null || { echo "SKIP: rping not installed (rdmacm-utils)"; exit 77; }
ns=uroce-h$$
trap 'ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null; ip netns del "$ns" 2>/dev/null' EXIT
ip netns add "$ns" || exit 1
ip -n "$ns" link set lo up && ip -n "$ns" link add d0 type veth peer name d1 && ip -n "$ns" addr add 10.214.0.1/24 dev d0 &&
  ip -n "$ns" link set d1 up && ip -n "$ns" link set d0 up || exit 1
here=$(dirname "$0")
ip netns exec "$ns" "$here/rping_bare.sh" "$uroce" "$uroced" 5 0.0.0.0 10.214.0.1 || exit 1
ip netns exec "$ns" "$here/rping_bare.sh" "$uroce" "$uroced" 5 10.214.0.1 10.214.0.1 || exit 1
echo "PASS: a client naming the host's interface address reached the server, wildcard and specific"
