#!/usr/bin/env bash
# netdev_bridge.sh UROCE TCP_PORT FAMILY MODE -- COMMAND ARGS...
# Between hosts over a commodity NIC, on af_packet: two network namespaces, each with
# one interface of its own kernel MAC and addresses, joined through a Linux bridge in a third namespace (not a
# direct veth). Each side runs `uroce run --netdev IF` (the device takes the interface's MAC, its addresses as
# GIDs, and peers' MACs from the kernel's neighbour table; not promiscuous). MODE af_packet: the af_packet
# port, the kernel's IP layer kept off UDP 4791 by the nftables rule (which counts what it drops); MODE
# af_xdp: `--xdp`, uroce's XDP program takes the RoCE frames before the kernel sees them (the same rule must
# then count none). The tools' out-of-band
# TCP runs over 10.214.0.x (perftest and ibv_rc_pingpong speak IPv4 only there), the RoCE traffic over other
# addresses of the same interfaces, so the neighbour entry RoCE needs is never one the TCP connection made:
# FAMILY 4: GID 0 = 10.214.1.x (--ip), resolved by ARP; FAMILY 6: GID index 2 = fd14::x (the table is
# 10.214.0.x, 10.214.1.x, fd14::x, fe80::...), resolved by ND. Checked: both programs succeed; neither interface is promiscuous while they run;
# each side's neighbour table holds the other's real MAC for the RoCE address; the kernel's UDP layer got no
# frame (its counters and ICMP unreachables do not move; the nftables rule counted what it dropped before
# UDP); a TCP transfer between the same interfaces works afterwards. The caller appends -g/-x (GID index)
# to COMMAND. Exits 77 (ctest SKIP) without root, ip netns or nft.
set -u
uroce=$1 tcp=$2 family=$3 mode=$4
shift 5
. "$(dirname "$0")/../lib/uroce_test_env.sh"
xdp=()
if [ "$mode" = af_xdp ]; then
  xdp=(--xdp)
  xdp_prog=$(dirname "$uroce")/../provider/shim/uroce_xdp.o
  [ -e "$xdp_prog" ] || { echo "SKIP: $xdp_prog not built (clang and libbpf-dev)"; exit 77; }
fi

uroce_netns3_setup nd
uroce_netns_bridge "$a" "$b" "$m" || fail "cannot build the bridged namespaces"
export XDG_RUNTIME_DIR=$dir UROCE_STATS_ON_EXIT=1
oob=10.214.0.1
if [ "$family" = 4 ]; then
  server_roce=10.214.1.1 client_roce=10.214.1.2 server_ip=(--ip 10.214.1.1) client_ip=(--ip 10.214.1.2)
else
  server_roce=fd14::1 client_roce=fd14::2 server_ip=() client_ip=()
fi
mac_a=$(ip -n "$a" -br link show ea | awk '{print $3}')
mac_b=$(ip -n "$b" -br link show eb | awk '{print $3}')
before_a=$(uroce_kernel_udp "$a") before_b=$(uroce_kernel_udp "$b")

timeout 60 ip netns exec "$a" "$uroce" run --netdev ea "${xdp[@]}" "${server_ip[@]}" -- "$@" -p "$tcp" >"$dir/server.log" 2>&1 &
spid=$!
netns_wait_listen "$a" "$tcp" "$spid" || fail "the server never listened"
timeout 60 ip netns exec "$b" "$uroce" run --netdev eb "${xdp[@]}" "${client_ip[@]}" -- "$@" -p "$tcp" "$oob" >"$dir/client.log" 2>&1 &
cpid=$!
# Not promiscuous while the ports are open (af_packet with promisc=0; the uroce derived-MAC scheme needed it).
for ns_if in "$a ea" "$b eb"; do
  read -r ns ifc <<<"$ns_if"
  p=$(ip -n "$ns" -d link show "$ifc" | grep -o 'promiscuity [0-9]*')
  [ "$p" = "promiscuity 0" ] || fail "$ifc in $ns is promiscuous ($p)"
done
wait $cpid
crc=$?
[ $crc = 0 ] || kill "$spid" 2>/dev/null
wait $spid
src=$?
spid=
[ $src = 0 ] && [ $crc = 0 ] || fail "server exited $src, client $crc"
grep -q "drop_dst_mac" "$dir/server.log" "$dir/client.log" && fail "frames arrived for another MAC"

# The peers were resolved through the kernel's neighbour tables (ARP for IPv4, ND for IPv6).
ip -n "$b" neigh show "$server_roce" dev eb | grep -q "lladdr $mac_a" ||
  fail "B's neighbour table has no $server_roce -> $mac_a: $(ip -n "$b" neigh show)"
ip -n "$a" neigh show "$client_roce" dev ea | grep -q "lladdr $mac_b" ||
  fail "A's neighbour table has no $client_roce -> $mac_b: $(ip -n "$a" neigh show)"

# The kernel's UDP stack saw no RoCE frame: af_packet - the rule dropped them before it, and counted them;
# af_xdp - they never reached the kernel's IP layer at all (the rule counted none).
after_a=$(uroce_kernel_udp "$a") after_b=$(uroce_kernel_udp "$b")
[ "$before_a" = "$after_a" ] || fail "kernel UDP counters moved in A: $before_a -> $after_a"
[ "$before_b" = "$after_b" ] || fail "kernel UDP counters moved in B: $before_b -> $after_b"
for ns in "$a" "$b"; do
  n=$(ip netns exec "$ns" nft list table inet uroce_guard | grep -o 'counter packets [0-9]*' | awk '{print $3}')
  echo "$ns: RoCE frames dropped before the kernel's UDP layer: $n; UDP/ICMP counters: $(uroce_kernel_udp "$ns")"
  if [ "$mode" = af_xdp ]; then
    [ "${n:-0}" = 0 ] || fail "$n RoCE frames reached the kernel's IP layer in $ns despite the XDP program"
  else
    [ "${n:-0}" -gt 0 ] || fail "the nftables rule in $ns counted no RoCE frame: did any frame reach the interface?"
  fi
done

# The kernel's own TCP keeps working on the same interfaces: 1 MiB echoed back byte for byte.
tcp2=$((tcp + 1000))
ip netns exec "$a" /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET6); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::", int(sys.argv[1]))); s.listen(1); s.settimeout(20); c, _ = s.accept(); c.settimeout(20)
n = 0
while n < 1 << 20:
    d = c.recv(65536)
    if not d: break
    c.sendall(d); n += len(d)
' "$tcp2" &
tpid=$!
netns_wait_listen "$a" "$tcp2" "$tpid" || fail "the TCP echo server never listened"
ip netns exec "$b" /usr/bin/python3 -c '
import os, socket, sys
data = os.urandom(1 << 20)
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=20)
c.sendall(data); got = b""
while len(got) < len(data):
    d = c.recv(65536)
    if not d: break
    got += d
sys.exit(0 if got == data else 1)' "$oob" "$tcp2" || fail "TCP between the namespaces failed"
wait $tpid
echo "== server"; cat "$dir/server.log"
echo "== client"; cat "$dir/client.log"
echo "PASS"
