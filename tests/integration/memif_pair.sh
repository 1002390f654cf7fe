#!/usr/bin/env bash
# memif_pair.sh UROCE TCP_PORT -- COMMAND ARGS...
# Runs an unmodified verbs program as a server and a client in two processes, each with its own uroce device
# (GIDs ::ffff:127.1.0.1 and ::ffff:127.1.0.2), joined by a direct DPDK memif pair. The client connects to
# the server's out-of-band TCP port on 127.0.0.1 (loopback only). Both must exit 0. With PAIR_EXPECT_COUNTER
# set to a device counter's name, one of the two must also have counted it (UROCE_STATS_ON_EXIT's line).
# PAIR_CLIENT_DRIVER=uroce gives the client uroce's own memif client (driver=uroce) instead of DPDK's PMD,
# and checks that its device ran on it.
# Exits 77 (ctest SKIP) when the uroce device nodes are missing and this is not root.
set -u
uroce=$1 tcp=$2
shift 3
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
trap 'kill $spid 2>/dev/null; rm -rf "$dir"' EXIT
export XDG_RUNTIME_DIR=$dir UROCE_STATS_ON_EXIT=1
sock=$dir/memif.sock
case $1 in
  ib_*) port_opt=(-p "$tcp") ;;     # perftest
  *) port_opt=(-p "$tcp") ;;        # ibv_*_pingpong
esac
UROCE_PORT="memif:socket=$sock,role=server" timeout 60 "$uroce" run --ip 127.1.0.1 -- "$@" "${port_opt[@]}" \
  >"$dir/server.log" 2>&1 &
spid=$!
wait_listen "$tcp" $spid || { echo "FAIL: the server never listened on $tcp"; cat "$dir/server.log"; exit 1; }
client_spec="memif:socket=$sock,role=client${PAIR_CLIENT_DRIVER:+,driver=$PAIR_CLIENT_DRIVER}"
UROCE_PORT="$client_spec" timeout 60 "$uroce" run --ip 127.1.0.2 -- "$@" "${port_opt[@]}" 127.0.0.1 \
  >"$dir/client.log" 2>&1
crc=$?
wait $spid
src=$?
echo "== server (rc $src)"; cat "$dir/server.log"
echo "== client (rc $crc)"; cat "$dir/client.log"
[ $src = 0 ] && [ $crc = 0 ] || exit 1
if [ -n "${PAIR_CLIENT_DRIVER:-}" ]; then
  grep -q "stats:.* port_driver=$PAIR_CLIENT_DRIVER" "$dir/client.log" ||
    { echo "FAIL: the client's device did not run on driver=$PAIR_CLIENT_DRIVER"; exit 1; }
fi
if [ -n "${PAIR_EXPECT_COUNTER:-}" ]; then
  grep -q "stats:.* $PAIR_EXPECT_COUNTER=[1-9]" "$dir/server.log" "$dir/client.log" ||
    { echo "FAIL: neither side counted $PAIR_EXPECT_COUNTER"; exit 1; }
  echo "PASS: $(grep -ho " $PAIR_EXPECT_COUNTER=[0-9]*" "$dir/server.log" "$dir/client.log" | tr '\n' ' ')"
fi
