#!/usr/bin/env bash
# netdev_routed.sh UROCE TCP_PORT -- COMMAND ARGS...
# A peer behind a router: namespaces A (10.217.1.1/24) and B (10.217.2.1/24) each reach the other only through
# a router namespace R (10.217.1.254 and 10.217.2.254, forwarding). `uroce run --netdev` on each side must
# send its RoCE frames to the gateway's MAC (the next hop of the kernel's route, then its neighbour entry), and
# the router forwards them as ordinary UDP (TTL and IP checksum change; the ICRC does not cover them).
# Checked: both programs pass, and each side's neighbour table holds the gateway, not the peer. Exits 77
# (ctest SKIP) without root, ip netns or nft.
set -u
uroce=$1 tcp=$2
shift 3
. "$(dirname "$0")/../lib/uroce_test_env.sh"

uroce_netns3_setup rt
r=$m  # the router
setup() {
  ip netns add "$a" && ip netns add "$b" && ip netns add "$r" || return 1
  ip netns exec "$r" sysctl -qw net.ipv4.ip_forward=1 || return 1
  ip link add ea netns "$a" type veth peer name ra netns "$r" || return 1
  ip link add eb netns "$b" type veth peer name rb netns "$r" || return 1
  local spec ns ifc rif n
  for spec in "$a ea ra 1" "$b eb rb 2"; do
    read -r ns ifc rif n <<<"$spec"
    ip -n "$r" link set "$rif" up && ip -n "$r" addr add "10.217.$n.254/24" dev "$rif" || return 1
    ip -n "$ns" link set lo up && ip -n "$ns" link set "$ifc" up &&
      ip -n "$ns" addr add "10.217.$n.1/24" dev "$ifc" && ip -n "$ns" route add default via "10.217.$n.254" ||
      return 1
    printf '%s\n' 'table inet uroce_guard {' \
      '  chain rx { type filter hook prerouting priority raw; udp dport 4791 counter drop; }' '}' |
      ip netns exec "$ns" nft -f - || return 1
  done
}
setup || fail "cannot build the routed namespaces"
export XDG_RUNTIME_DIR=$dir UROCE_STATS_ON_EXIT=1

timeout 60 ip netns exec "$a" "$uroce" run --netdev ea -- "$@" -p "$tcp" >"$dir/server.log" 2>&1 &
spid=$!
netns_wait_listen "$a" "$tcp" "$spid" || fail "the server never listened"
timeout 60 ip netns exec "$b" "$uroce" run --netdev eb -- "$@" -p "$tcp" 10.217.1.1 >"$dir/client.log" 2>&1
crc=$?
[ $crc = 0 ] || kill "$spid" 2>/dev/null
wait $spid
src=$?
spid=
[ $src = 0 ] && [ $crc = 0 ] || fail "server exited $src, client $crc"
for spec in "$a ea 10.217.1.254 10.217.2.1" "$b eb 10.217.2.254 10.217.1.1"; do
  read -r ns ifc gw peer <<<"$spec"
  ip -n "$ns" neigh show "$gw" dev "$ifc" | grep -q lladdr || fail "$ns has no neighbour entry for its gateway $gw"
  ip -n "$ns" neigh show "$peer" | grep -q . && fail "$ns has a neighbour entry for the off-link peer $peer"
done
echo "== server"; cat "$dir/server.log"
echo "== client"; cat "$dir/client.log"
echo "PASS"
