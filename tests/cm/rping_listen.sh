#!/usr/bin/env bash
# rping_listen.sh UROCE
# The real rping (rdmacm-utils) under `uroce run` on the shim's ucma emulation: the server creates its
# event channel, binds 127.0.0.1 and listens (seen in UROCE_UCMA_TRACE's LISTEN line); the client resolves
# address and route and, on its own in-process port where nothing listens, is REJECTED 8 by its own CM (as a
# kernel answers a REQ for a service nobody listens on), not failed with ENOENT.
# Exits 77 (ctest SKIP) without rping, or without the device nodes when not root.
set -u
uroce=$1
. "$(dirname "$0")/../lib/uroce_test_env.sh"
command -v rping >/dev/null || { echo "SKIP: rping not installed (rdmacm-utils)"; exit 77; }
uroce_require_setup "$uroce"

XDG_RUNTIME_DIR=$(mktemp -d)
export XDG_RUNTIME_DIR
server_pid=
cleanup() {
  [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null
  rm -rf "$XDG_RUNTIME_DIR"
}
trap cleanup EXIT
export UROCE_PORT=loopback  # each process has its own in-process port: no host switch needed
port=$((20000 + $$ % 20000))
fail() { echo "FAIL: $*"; echo "--- server:"; cat "$XDG_RUNTIME_DIR/server.log"; exit 1; }

UROCE_UCMA_TRACE=1 timeout 40 "$uroce" run -- rping -s -a 127.0.0.1 -p "$port" -v \
  >"$XDG_RUNTIME_DIR/server.log" 2>&1 &
server_pid=$!
wait_cm_listen "$XDG_RUNTIME_DIR/server.log" "$server_pid" || fail "the server never listened"
grep -q "BIND (20) -> -EAFNOSUPPORT" "$XDG_RUNTIME_DIR/server.log" || fail "the AF_IB probe did not fail"

client=$(timeout 20 "$uroce" run -- rping -c -a 127.0.0.1 -p "$port" -C 1 -v 2>&1)
rc=$?
printf -- '--- client (exit %s):\n%s\n' "$rc" "$client"
[ $rc != 124 ] || fail "the client hung"
[ $rc != 0 ] || fail "the client succeeded without a listener"
grep -q "No such file or directory" <<<"$client" && fail "the client could not open the event channel"
grep -q "cma event RDMA_CM_EVENT_REJECTED, error 8" <<<"$client" || fail "no REJECTED event"
kill -0 "$server_pid" 2>/dev/null || fail "the server exited"
echo "--- server:"
cat "$XDG_RUNTIME_DIR/server.log"
echo PASS
