# Sourced by the shell tests that run programs through `uroce run`.
#   uroce_require_setup UROCE  - the device nodes must exist: as root run `uroce setup` (idempotent);
#                                otherwise exit 77 (ctest SKIP) with the instruction.
uroce_require_setup() {
  local node=/dev/infiniband/uroce_verbs0
  if [ "$(stat -c '%F %t:%T' "$node" 2>/dev/null)" != "character special file 1:7" ]; then
    if [ "$(id -u)" != 0 ]; then echo "SKIP: $node missing: run 'sudo uroce setup' once"; exit 77; fi
    "$1" setup >/dev/null || exit 1
  fi
}

#   uroce_scratch_env PROVIDER - exit 77 (ctest SKIP) when PROVIDER is not built; else a fresh runtime
#                                directory (XDG_RUNTIME_DIR, removed on exit) and none of the variables that
#                                would point uroce at another device directory or library directory.
uroce_scratch_env() {
  if [ ! -e "$1" ]; then echo "SKIP: provider $1 not built yet"; exit 77; fi
  XDG_RUNTIME_DIR=$(mktemp -d)
  export XDG_RUNTIME_DIR
  trap 'rm -rf "$XDG_RUNTIME_DIR"' EXIT
  unset UROCE_DEV_DIR UROCE_LIBDIR
}

#   wait_listen PORT [PID]     - waits (up to 20 s) until something listens on TCP PORT: a verbs server's
#                                out-of-band socket. 1 if nothing did, or at once if process PID (the
#                                server) exited. A client may connect at once: the kernel queues the
#                                connection until the server accepts it.
wait_listen() {
  for _ in $(seq 200); do
    ss -Hltn "sport = :$1" | grep -q . && return 0
    [ -z "${2:-}" ] || kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

#   wait_cm_listen LOG PID     - waits (up to 20 s) until an RDMA CM server run with UROCE_UCMA_TRACE=1, its
#                                output in LOG, has listened (its LISTEN command succeeded). 1 if it did
#                                not, or at once if process PID (the server) exited.
wait_cm_listen() {
  for _ in $(seq 200); do
    grep -q "LISTEN (7) -> ok" "$1" 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

#   uroce_wait_stat UROCE PID FIELD MIN - waits (up to 20 s) until `uroce stats --json --pid PID` shows the
#                                device counter FIELD at MIN or more. 1 if it never did.
uroce_wait_stat() {
  for _ in $(seq 200); do
    "$1" stats --json --pid "$2" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
sys.exit(0 if json.load(sys.stdin)[0]["device"].get(sys.argv[1], 0) >= int(sys.argv[2]) else 1)' "$3" "$4" \
      2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

#   uroce_netns_pair A B IP_A IP_B - (root) creates network namespaces A and B joined by a veth pair, ua in
#                                A with IP_A/24 and ub in B with IP_B/24, both up (MTU 4200: a 4096-byte RoCE
#                                payload and its headers fit), lo up in each. 1 on any failure. The caller
#                                deletes them (ip netns del, which also removes the veth) in its EXIT trap.
uroce_netns_pair() {
  ip netns add "$1" && ip netns add "$2" || return 1
  ip link add ua netns "$1" type veth peer name ub netns "$2" || return 1
  local spec ns ifc ip
  for spec in "$1 ua $3" "$2 ub $4"; do
    read -r ns ifc ip <<<"$spec"
    ip -n "$ns" link set lo up && ip -n "$ns" link set "$ifc" mtu 4200 up &&
      ip -n "$ns" addr add "$ip/24" dev "$ifc" || return 1
  done
}

#   reap_pair CRC              - after a client exited with CRC, with the server running as $spid: stops the
#                                server when the client failed (it would wait for it), waits for it, clears
#                                spid, then calls the script's fail() if either exited non-zero.
reap_pair() {
  local src
  [ "$1" = 0 ] || kill "$spid" 2>/dev/null
  wait "$spid"
  src=$?
  spid=
  [ "$1" = 0 ] || fail "the client exited $1"
  [ $src = 0 ] || fail "the server exited $src"
}

#   netns_wait_listen NS PORT PID - wait_listen inside network namespace NS.
netns_wait_listen() {
  ip netns exec "$1" bash -c ". '${BASH_SOURCE[0]}' && wait_listen '$2' '$3'"
}

# The set-up every `uroce exp --realtime` test script starts with, given $uroce and $uroced: the device check,
# a scratch directory $dir removed on exit, fail(), and UROCED for the runner.
uroce_exp_realtime_setup() {
  uroce_require_setup "$uroce"
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  fail() { echo "FAIL: $*"; exit 1; }
  export UROCED=$uroced
}

#   uroce_netns_bridge A B M - (root) creates network namespaces A and B, each with one interface (ea in A, eb
#                                in B; MTU 1500, not promiscuous) joined through a Linux bridge br0 in a third
#                                namespace M (not a direct veth): each with its own kernel MAC and addresses
#                                10.214.0.1/24, 10.214.1.1/24 and fd14::1/64 (A), 10.214.0.2/24,
#                                10.214.1.2/24 and fd14::2/64 (B), IPv6 without DAD. In A and B an nftables rule drops UDP port 4791 before the
#                                kernel's UDP layer and counts it (table inet uroce_guard, the rule
#                                docs/between-hosts.md gives). 1 on any failure. The caller deletes A, B, M.
uroce_netns_bridge() {
  ip netns add "$1" && ip netns add "$2" && ip netns add "$3" || return 1
  ip -n "$3" link add br0 type bridge stp_state 0 mcast_snooping 0 && ip -n "$3" link set br0 up || return 1
  ip link add ea netns "$1" type veth peer name pa netns "$3" || return 1
  ip link add eb netns "$2" type veth peer name pb netns "$3" || return 1
  local spec ns ifc n
  for spec in "$1 ea 1 pa" "$2 eb 2 pb"; do
    read -r ns ifc n port <<<"$spec"
    ip -n "$3" link set "$port" master br0 up || return 1
    ip -n "$ns" link set lo up && ip -n "$ns" link set "$ifc" up &&
      ip -n "$ns" addr add "10.214.0.$n/24" dev "$ifc" && ip -n "$ns" addr add "10.214.1.$n/24" dev "$ifc" &&
      ip -n "$ns" addr add "fd14::$n/64" dev "$ifc" nodad || return 1
    printf '%s\n' 'table inet uroce_guard {' \
      '  chain rx { type filter hook prerouting priority raw; udp dport 4791 counter drop; }' '}' |
      ip netns exec "$ns" nft -f - || return 1
  done
}

#   uroce_kernel_udp NS        - prints NS's kernel UDP and ICMP counters that a RoCE frame reaching the kernel's
#                                UDP layer would move: IPv4 and IPv6 datagrams in, to no port, and the
#                                destination-unreachable replies, on one line.
uroce_kernel_udp() {
  ip netns exec "$1" awk '
    /^Udp: [0-9]/ { print "UdpInDatagrams=" $2, "UdpNoPorts=" $3 }
    /^Icmp: [0-9]/ { print "IcmpOutDestUnreachs=" $20 }
    $1 ~ /^(Udp6InDatagrams|Udp6NoPorts|Icmp6OutDestUnreachs)$/ { print $1 "=" $2 }' \
    /proc/net/snmp /proc/net/snmp6 | tr '\n' ' '
}

# The three-namespace tests of `uroce run --netdev` (a bridge or a router in the middle): skips (exit 77)
# without root, ip netns or nft, then sets $dir, the namespace names $a, $b and $m (uroce-TAG<pid>-a/-b/-m), a
# trap that kills $spid and deletes them, and fail(), which prints the logs in $dir. The caller creates them.
uroce_netns3_setup() {
  if [ "$(id -u)" != 0 ]; then echo "SKIP: network namespaces need root"; exit 77; fi
  if ! ip netns list >/dev/null 2>&1; then echo "SKIP: 'ip netns' is not available"; exit 77; fi
  if ! command -v nft >/dev/null; then echo "SKIP: nft (Debian package nftables) is not installed"; exit 77; fi
  uroce_require_setup "$uroce"
  dir=$(mktemp -d)
  a=uroce-$1$$-a b=uroce-$1$$-b m=uroce-$1$$-m
  trap uroce_netns3_cleanup EXIT
  fail() {
    echo "FAIL: $*"
    for f in "$dir"/*.log; do [ -e "$f" ] && { echo "== $f"; cat "$f"; }; done
    exit 1
  }
}
uroce_netns3_cleanup() {
  [ -n "${spid:-}" ] && kill "$spid" 2>/dev/null
  for ns in "$a" "$b" "$m"; do ip netns del "$ns" 2>/dev/null; done
  rm -rf "$dir"
}
