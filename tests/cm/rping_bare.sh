#!/usr/bin/env bash
# rping_bare.sh UROCE UROCED [COUNT [SERVER_ADDR CLIENT_ADDR]]
# The real rping (rdmacm-utils) between two bare `uroce run` processes, as on a host with an RNIC: both are
# ports of the host switch uroced (each with its own leased address as its GID), the server listens on
# 127.0.0.1 and the client connects to 127.0.0.1, which uroced's CM port table maps to the server's lease.
# The connection is the IB CM's REQ/REP/RTU on QP1 (provider/cm_service.cc), the data RC SEND/READ/WRITE.
# SERVER_ADDR (what the server binds, 0.0.0.0 the wildcard) and CLIENT_ADDR (what the client names) are
# 127.0.0.1 unless given; any address of the host reaches its uroce device.
# Passes when both exit 0 and the client printed COUNT verified "ping data" lines (rping -v checks each).
# Exits 77 (ctest SKIP) without rping, or without the device nodes when not root.
set -u
uroce=$1 uroced=$2 count=${3:-10} saddr=${4:-127.0.0.1} caddr=${5:-127.0.0.1}
. "$(dirname "$0")/../lib/uroce_test_env.sh"
command -v rping >/dev/null || { echo "SKIP: rping not installed (rdmacm-utils)"; exit 77; }
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
unset UROCE_PORT
spid=
trap '[ -z "$spid" ] || kill $spid 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
port=$((20000 + $$ % 20000))
fail() {
  echo "FAIL: $*"
  echo "== server"; cat "$dir/server.log"
  echo "== client"; cat "$dir/client.log" 2>/dev/null
  exit 1
}

UROCE_UCMA_TRACE=1 timeout 40 "$uroce" run -- rping -s -a "$saddr" -p "$port" -v -C "$count" \
  >"$dir/server.log" 2>&1 &
spid=$!
wait_cm_listen "$dir/server.log" "$spid" || fail "the server never listened"

timeout 30 "$uroce" run -- rping -c -a "$caddr" -p "$port" -v -C "$count" >"$dir/client.log" 2>&1
reap_pair $?
got=$(grep -c "^ping data: rdma-ping-" "$dir/client.log")
[ "$got" = "$count" ] || fail "the client printed $got of $count ping data lines"
# rping -v prints what the peer's RDMA WRITE put in its buffer: the rotating pattern, one shift per ping.
grep -q "^ping data: rdma-ping-$((count - 1)): " "$dir/client.log" || fail "the last ping is missing"
grep -q "lease" "$dir"/uroce-*/uroced.log 2>/dev/null || grep -q "lease" "$dir"/uroced.log 2>/dev/null ||
  fail "not through the host switch"
echo "== client"; cat "$dir/client.log"
echo "PASS: rping connected through the RDMA CM and exchanged $count pings"
