#!/usr/bin/env bash
# bare_pair.sh UROCE UROCED TCP_PORT -- COMMAND ARGS...
# A newcomer's first try, as with an RNIC: `uroce run -- SERVER` and `uroce run -- CLIENT 127.0.0.1` with no
# other flag and no UROCE_PORT. Both are ports of the host switch uroced, which the first one starts; both
# must exit 0. With BARE_EXPECT_LINGERS=1, the polls of the two must have lingered for the peer's WRITE
# (provider/progress_policy.h's Linger) and caught it at least ten times as often as they missed it.
set -u
uroce=$1 uroced=$2 tcp=$3
shift 4
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir UROCE_STATS_ON_EXIT=1
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
if [ "${BARE_EXPECT_LINGERS:-0}" = 1 ]; then
  sum() { grep -ho " $1=[0-9]*" "$dir/server.log" "$dir/client.log" | awk -F= '{ n += $2 } END { print n + 0 }'; }
  caught=$(sum lingers_caught) missed=$(sum lingers_missed)
  echo "lingers: caught $caught, missed $missed"
  [ "$caught" -gt 0 ] && [ "$caught" -ge $((10 * missed)) ] ||
    { echo "FAIL: the polls did not linger for the peer's WRITE, or missed it too often"; exit 1; }
fi
echo "PASS: two bare uroce run processes reached each other"
