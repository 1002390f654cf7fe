#!/usr/bin/env bash
# bare_pair.sh UROCE UROCED TCP_PORT -- COMMAND ARGS...
# A newcomer's first try, as with an RNIC: `uroce run -- SERVER` and `uroce run -- CLIENT 127.0.0.1` with no
# other flag and no UROCE_PORT. Both are ports of the host switch uroced, which the first one starts; both
# must exit 0.
set -u
uroce=$1 uroced=$2 tcp=$3
shift 4
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
unset UROCE_PORT
trap 'kill $spid 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
timeout 60 "$uroce" run -- "$@" -p "$tcp" >"$dir/server.log" 2>&1 &
spid=$!
wait_listen "$tcp" || { echo "FAIL: the server never listened"; cat "$dir/server.log"; exit 1; }
timeout 60 "$uroce" run -- "$@" -p "$tcp" 127.0.0.1 >"$dir/client.log" 2>&1
crc=$?
wait $spid
src=$?
echo "== server (rc $src)"; cat "$dir/server.log"
echo "== client (rc $crc)"; cat "$dir/client.log"
[ $src = 0 ] && [ $crc = 0 ] || { echo "FAIL: the pair failed"; exit 1; }
grep -q "lease" "$dir"/uroce-*/uroced.log || { echo "FAIL: not through the host switch"; exit 1; }
echo "PASS: two bare uroce run processes reached each other"
