#!/usr/bin/env bash
# netns_pair.sh UROCE TCP_PORT -- COMMAND ARGS...
# Runs an unmodified verbs program as a server and a client, each in its own network namespace that this
# script creates, joined by a veth pair. Each side's uroce device sends and receives through DPDK's
# af_packet PMD on its end of the veth; the out-of-band TCP connection of the tools uses IPs on the same
# veth (10.213.0.1 and .2, inside the namespaces only). The namespaces are deleted whatever happens.
# Exits 77 (ctest SKIP) when not root, `ip netns` is unavailable, or the uroce device nodes are missing.
set -u
uroce=$1 tcp=$2
shift 3
. "$(dirname "$0")/../lib/uroce_test_env.sh"
if [ "$(id -u)" != 0 ]; then echo "SKIP: network namespaces need root"; exit 77; fi
if ! ip netns list >/dev/null 2>&1; then echo "SKIP: 'ip netns' is not available"; exit 77; fi
uroce_require_setup "$uroce"

dir=$(mktemp -d)
a=uroce-t$$-a b=uroce-t$$-b
cleanup() {
  [ -n "${spid:-}" ] && kill "$spid" 2>/dev/null
  ip netns del "$a" 2>/dev/null
  ip netns del "$b" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
uroce_netns_pair "$a" "$b" 10.213.0.1 10.213.0.2 || exit 1
export XDG_RUNTIME_DIR=$dir UROCE_STATS_ON_EXIT=1

# The server's device is 10.213.0.1 on ua; the client's 10.213.0.2 on ub. RoCE frames go to the MAC
# uroce derives from the peer's GID, not to the veth's own MAC, so the kernel ignores them (PACKET_OTHERHOST)
# and only the af_packet sockets see them.
UROCE_PORT="af_packet:iface=ua" timeout 60 ip netns exec "$a" "$uroce" run --ip 10.213.0.1 -- "$@" -p "$tcp" \
  >"$dir/server.log" 2>&1 &
spid=$!
netns_wait_listen "$a" "$tcp" "$spid"
UROCE_PORT="af_packet:iface=ub" timeout 60 ip netns exec "$b" "$uroce" run --ip 10.213.0.2 -- "$@" -p "$tcp" 10.213.0.1 \
  >"$dir/client.log" 2>&1
crc=$?
wait $spid
src=$?
spid=
echo "== server (rc $src)"; cat "$dir/server.log"
echo "== client (rc $crc)"; cat "$dir/client.log"
[ $src = 0 ] && [ $crc = 0 ]
