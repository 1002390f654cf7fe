#!/usr/bin/env bash
# ucx_perftest.sh UROCE UROCED TCP_PORT TLS TEST [uct]
# UCX over uroce: ucx_perftest's server and client, each under `uroce run --port uroced`, with UCX restricted
# to the uroce device (UCX_NET_DEVICES=uroce0:1) and to the verbs transports TLS (rc_verbs,ud_verbs or
# ud_verbs alone), so nothing but uroce can carry the traffic. At the UCP level (4 KiB messages) by default;
# with `uct`, a UCT test on the one transport TLS (-d uroce0:1 -x TLS, 8-byte messages: UCT's short active
# messages and its 64-bit atomics). Both must exit 0, print their final figures, and UCX must print no
# warning or error.
set -u
uroce=$1 uroced=$2 tcp=$3 tls=$4 test=$5 level=${6:-ucp}
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
command -v ucx_perftest >/dev/null || { echo "FAIL: ucx_perftest missing (Debian package ucx-utils)"; exit 1; }
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir UCX_NET_DEVICES=uroce0:1 UCX_TLS=$tls
trap 'kill $spid 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
args=(-t "$test" -n 300 -s 4096 -p "$tcp")
[ "$level" = uct ] && args=(-d uroce0:1 -x "$tls" -t "$test" -n 300 -s 8 -p "$tcp")
timeout 60 "$uroce" run --port uroced -- ucx_perftest "${args[@]}" >"$dir/server.log" 2>&1 &
spid=$!
wait_listen "$tcp" || { echo "FAIL: the server never listened"; cat "$dir/server.log"; exit 1; }
timeout 60 "$uroce" run --port uroced -- ucx_perftest 127.0.0.1 "${args[@]}" >"$dir/client.log" 2>&1
crc=$?
wait $spid
src=$?
echo "== server (rc $src)"; cat "$dir/server.log"
echo "== client (rc $crc)"; cat "$dir/client.log"
[ $src = 0 ] && [ $crc = 0 ] || { echo "FAIL: ucx_perftest failed"; exit 1; }
grep -q '^Final:' "$dir/client.log" || { echo "FAIL: no final figures"; exit 1; }
if grep -E 'UCX +(WARN|ERROR)' "$dir/server.log" "$dir/client.log"; then
  echo "FAIL: UCX warned"
  exit 1
fi
echo "PASS: ucx_perftest $test ($level) over $tls on uroce0:1"
