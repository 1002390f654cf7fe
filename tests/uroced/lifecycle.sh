#!/usr/bin/env bash
# lifecycle.sh UROCE UROCED
# uroced is started on demand by the first `uroce run --port uroced`, gives each process its own address
# (GID), uses under 2% of a core while a connected client is idle, releases a lease when its process exits,
# exits after idle_exit seconds without clients, and the next client starts a fresh one.
set -u
uroce=$1 uroced=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir UROCED_CONFIG=$dir/uroced.conf
trap 'kill $spid 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; sleep 0.2; rm -rf "$dir"' EXIT
printf 'idle_exit = 2  # seconds\n' >"$UROCED_CONFIG"
fail() { echo "FAIL: $*"; echo "== uroced log"; cat "$dir"/uroce-*/uroced.log; exit 1; }
stat_field() { "$uroced" --stats | head -1 | tr ' ' '\n' | sed -n "s/^$1=//p"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

"$uroced" --stats >/dev/null 2>&1 && fail "a daemon answers before anything started one"

# A verbs server that opens its device (memif connected to uroced) and then waits for a client that never
# comes: an idle client.
"$uroce" run --port uroced -- ibv_rc_pingpong -g 0 -p 18940 >"$dir/server.log" 2>&1 &
spid=$!
for _ in $(seq 50); do [ "$(stat_field leases 2>/dev/null)" = 1 ] && break; sleep 0.1; done
[ "$(stat_field leases)" = 1 ] || fail "no lease after the first uroce run"
dpid=$(stat_field pid)
echo "uroced started on demand: pid $dpid"
"$uroced" --stats

# A second process gets a different address, so a different GID.
gid=$("$uroce" run --port uroced -- sh -c 'cat "$SYSFS_PATH/class/infiniband/uroce0/ports/1/gids/0"')
echo "second client's GID 0: $gid"
[ "$gid" = 0000:0000:0000:0000:0000:ffff:7f01:0002 ] || fail "second client got GID $gid"

sleep 1.5  # let the daemon settle into its long naps
t0=$(cpu_ticks "$dpid")
sleep 5  # the measurement window itself
t1=$(cpu_ticks "$dpid")
# A daemon that died uses no CPU either: it must be alive, with its idle client's lease, at the end.
[ -n "$t0" ] && [ -n "$t1" ] && kill -0 "$dpid" 2>/dev/null || fail "uroced $dpid died during the measurement"
[ "$(stat_field leases)" = 1 ] && kill -0 $spid 2>/dev/null || fail "the idle client or its lease is gone"
hz=$(getconf CLK_TCK)
pct=$(awk -v t=$((t1 - t0)) -v hz="$hz" 'BEGIN { printf "%.2f", 100 * t / hz / 5 }')
echo "uroced CPU with one idle client over 5 s: $pct% of a core"
awk -v p="$pct" 'BEGIN { exit !(p < 2.0) }' || fail "idle uroced used $pct% of a core"

kill $spid
wait $spid 2>/dev/null
for _ in $(seq 30); do [ "$(stat_field leases)" = 0 ] && break; sleep 0.1; done
[ "$(stat_field leases)" = 0 ] || fail "lease not released after its process exited"
ls "$dir"/uroce-*/uroced-ports/*.sock 2>/dev/null && fail "a memif socket of a released port is left"

# No clients: the daemon exits after idle_exit (2 s) and removes its control socket.
for _ in $(seq 80); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$dpid" 2>/dev/null && fail "uroced still running 8 s after its last client left"
[ -e "$dir"/uroce-*/uroced.sock ] && fail "control socket left behind"
grep -q "no clients for 2s: exiting" "$dir"/uroce-*/uroced.log || fail "no idle-exit line in the log"

# The next client starts a new daemon.
"$uroce" run --port uroced -- true || fail "uroce run after the idle exit"
new=$(stat_field pid)
[ -n "$new" ] && [ "$new" != "$dpid" ] || fail "no fresh daemon (pid '$new', old $dpid)"
echo "PASS: a fresh uroced ($new) after the idle exit"
