#!/usr/bin/env bash
# cm_pair.sh UROCE UROCED PATTERN -- SERVER ARGS... -- CLIENT ARGS...
# An RDMA CM server and client (rdmacm-utils, perftest) as two bare `uroce run` processes through the host
# switch uroced, with a private runtime directory (so a private uroced and CM port table, stopped at the
# end). The client starts once the server's LISTEN succeeded (UROCE_UCMA_TRACE); both must exit 0 and the
# client's output must match PATTERN (grep -E). Exits 77 (ctest SKIP) when a program or the device nodes
# are missing.
set -u
uroce=$1 uroced=$2 pattern=$3
shift 4
server=() client=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do server+=("$1"); shift; done
shift
client=("$@")
. "$(dirname "$0")/../lib/uroce_test_env.sh"
for p in "${server[0]}" "${client[0]}"; do
  command -v "$p" >/dev/null || { echo "SKIP: $p not installed"; exit 77; }
done
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
unset UROCE_PORT
spid=
trap '[ -z "$spid" ] || kill $spid 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
fail() {
  echo "FAIL: $*"
  echo "== server: ${server[*]}"; grep -v "^uroce ucma:" "$dir/server.log"
  echo "== client: ${client[*]}"; cat "$dir/client.log" 2>/dev/null
  exit 1
}

UROCE_UCMA_TRACE=1 timeout 40 "$uroce" run -- "${server[@]}" >"$dir/server.log" 2>&1 &
spid=$!
wait_cm_listen "$dir/server.log" "$spid" || fail "the server never listened"

timeout 30 "$uroce" run -- "${client[@]}" >"$dir/client.log" 2>&1
reap_pair $?
grep -Eq "$pattern" "$dir/client.log" || fail "the client's output does not match '$pattern'"
echo "== client: ${client[*]}"; cat "$dir/client.log"
echo "PASS: ${server[0]} and ${client[0]} connected through the RDMA CM"
