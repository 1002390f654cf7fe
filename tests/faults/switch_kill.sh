#!/usr/bin/env bash
# switch_kill.sh UROCE UROCED
# Kills the host switch uroced with SIGKILL while an ib_write_bw pair moves data through it. Both sides must
# end with an error (the transport's retry budget runs out: perftest's timeout 14, retry 7 ~ 0.6 s) within
# a few seconds, never hang. Then a fresh pair through a newly started uroced must complete: the killed
# daemon's control socket, lock file and memif port sockets must not block its successor.
set -u
uroce=$1 uroced=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
spid= cpid=
trap 'kill -9 $spid $cpid 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; sleep 0.2; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; for f in "$dir"/*.log "$dir"/uroce-*/uroced.log; do echo "== $f"; cat "$f"; done; exit 1; }
stat_field() { "$uroced" --stats | head -1 | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# Frames uroced has handed to its ports so far (every port line's tx_frames, summed).
forwarded() { "$uroced" --stats 2>/dev/null | sed -n 's/.* tx_frames=\([0-9]*\).*/\1/p' | awk '{s += $1} END {print s + 0}'; }

args=(ib_write_bw -d uroce0 -x 0 -F -D 30 -p 18971)
"$uroce" run --port uroced -- "${args[@]}" >"$dir/srv.log" 2>&1 &
spid=$!
wait_listen 18971 || fail "the server never listened"
"$uroce" run --port uroced -- "${args[@]}" 127.0.0.1 >"$dir/cli.log" 2>&1 &
cpid=$!
dpid=$(stat_field pid)
[ -n "$dpid" ] || fail "no uroced answers"
# Traffic is flowing once the switch has forwarded well past what connection setup alone moves.
flowing=
for _ in $(seq 200); do
  [ "$(forwarded)" -gt 20000 ] && { flowing=1; break; }
  sleep 0.1
done
[ -n "$flowing" ] || fail "no traffic through uroced within 20 s"
"$uroced" --stats
kill -9 "$dpid"
t0=$(date +%s%N)
for _ in $(seq 100); do
  kill -0 $spid 2>/dev/null || kill -0 $cpid 2>/dev/null || break
  sleep 0.1
done
t1=$(date +%s%N)
kill -0 $spid 2>/dev/null && fail "server still running 10 s after uroced was killed"
kill -0 $cpid 2>/dev/null && fail "client still running 10 s after uroced was killed"
wait $spid
src=$?
wait $cpid
crc=$?
spid= cpid=
echo "== server (rc $src)"; cat "$dir/srv.log"
echo "== client (rc $crc)"; cat "$dir/cli.log"
echo "both sides ended $(( (t1 - t0) / 1000000 )) ms after the kill"
[ $src != 0 ] || fail "the server exited 0 after losing its switch"
[ $crc != 0 ] || fail "the client exited 0 after losing its switch"
ls -la "$dir"/uroce-*/ "$dir"/uroce-*/uroced-ports/

# A fresh pair: the first `uroce run` starts a new daemon over the dead one's leftovers.
"$uroce" run --port uroced -- ibv_rc_pingpong -g 0 -n 200 -c -p 18972 >"$dir/srv2.log" 2>&1 &
spid=$!
wait_listen 18972 || fail "the next server never listened"
timeout 30 "$uroce" run --port uroced -- ibv_rc_pingpong -g 0 -n 200 -c -p 18972 127.0.0.1 >"$dir/cli2.log" 2>&1 ||
  fail "the next pair's client failed"
timeout 10 tail --pid=$spid -f /dev/null
wait $spid || fail "the next pair's server failed"
spid=
new=$(stat_field pid)
[ -n "$new" ] && [ "$new" != "$dpid" ] || fail "no fresh uroced (pid '$new', killed $dpid)"
cat "$dir/cli2.log"
echo "PASS: both sides failed after uroced $dpid was killed; uroced $new served the next pair"
