#!/usr/bin/env bash
# netns_cm_pair.sh UROCE PATTERN [--tcp PORT] -- [SERVER ARGS...] -- CLIENT ARGS...
# An RDMA CM server and client (rdmacm-utils, perftest, libfabric's fabtests), each under `uroce run` in its
# own network namespace that this script creates, joined by a veth pair: each side's uroce device sends and
# receives through DPDK's af_packet PMD on its end of the veth, with the veth's address as its --ip (the
# server 10.214.0.1 on ua, the client 10.214.0.2 on ub). The client names the server's address, so the
# CM's REQ goes to the server's GID on the wire. The client starts once the server's LISTEN succeeded
# (UROCE_UCMA_TRACE), or with --tcp once the server listens on TCP PORT in its namespace (programs such as
# fi_pingpong that exchange addresses out of band before they listen on the CM); both must exit 0 and the
# client's output must match PATTERN (grep -E). Both logs are printed. With no server, the client runs
# alone (a program that only looks at the device, such as fi_info). The namespaces are deleted whatever happens. Exits 77 (ctest SKIP) when not root, `ip netns` is
# unavailable, a program or the uroce device nodes are missing.
# In the arguments, @SERVER@ stands for the server's address.
set -u
uroce=$1 pattern=$2 tcp=
shift 2
if [ "$1" = --tcp ]; then tcp=$2; shift 2; fi
shift
server_ip=10.214.0.1 client_ip=10.214.0.2
server=() client=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do server+=("${1//@SERVER@/$server_ip}"); shift; done
shift
for arg in "$@"; do client+=("${arg//@SERVER@/$server_ip}"); done
. "$(dirname "$0")/../lib/uroce_test_env.sh"
if [ "$(id -u)" != 0 ]; then echo "SKIP: network namespaces need root"; exit 77; fi
if ! ip netns list >/dev/null 2>&1; then echo "SKIP: 'ip netns' is not available"; exit 77; fi
for p in "${server[@]:0:1}" "${client[0]}"; do
  command -v "$p" >/dev/null || { echo "SKIP: $p not installed"; exit 77; }
done
uroce_require_setup "$uroce"

dir=$(mktemp -d)
a=uroce-cm$$-a b=uroce-cm$$-b
spid=
cleanup() {
  [ -z "$spid" ] || kill "$spid" 2>/dev/null
  ip netns del "$a" 2>/dev/null
  ip netns del "$b" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
uroce_netns_pair "$a" "$b" "$server_ip" "$client_ip" || exit 1
export XDG_RUNTIME_DIR=$dir
unset UROCE_PORT

logs() {
  [ ${#server[@]} = 0 ] || { echo "== server (rc ${src:-?}): ${server[*]}"; grep -v "^uroce ucma:" "$dir/server.log"; }
  echo "== client (rc ${crc:-?}): ${client[*]}"; cat "$dir/client.log" 2>/dev/null
}
fail() {
  echo "FAIL: $*"
  logs
  exit 1
}

# RoCE frames go to the MAC uroce derives from the peer's GID, not to the veth's own MAC, so the kernel
# ignores them (PACKET_OTHERHOST) and only the af_packet sockets see them.
if [ ${#server[@]} != 0 ]; then
  UROCE_UCMA_TRACE=1 UROCE_PORT="af_packet:iface=ua" timeout 40 ip netns exec "$a" "$uroce" run --ip "$server_ip" \
    -- "${server[@]}" >"$dir/server.log" 2>&1 &
  spid=$!
  if [ -n "$tcp" ]; then
    netns_wait_listen "$a" "$tcp" "$spid" || fail "the server never listened on TCP port $tcp"
  else
    wait_cm_listen "$dir/server.log" "$spid" || fail "the server never listened"
  fi
fi

UROCE_PORT="af_packet:iface=ub" timeout 30 ip netns exec "$b" "$uroce" run --ip "$client_ip" \
  -- "${client[@]}" >"$dir/client.log" 2>&1
crc=$?
src=0
if [ -n "$spid" ]; then
  [ $crc = 0 ] || kill $spid 2>/dev/null  # a failed client leaves the server waiting for it
  wait $spid
  src=$?
  spid=
fi
[ $crc = 0 ] || fail "the client exited $crc"
[ $src = 0 ] || fail "the server exited $src"
grep -Eq "$pattern" "$dir/client.log" || fail "the client's output does not match '$pattern'"
logs
if [ ${#server[@]} = 0 ]; then
  echo "PASS: ${client[0]} in a network namespace"
else
  echo "PASS: ${server[0]} and ${client[0]} connected through the RDMA CM between two network namespaces"
fi
