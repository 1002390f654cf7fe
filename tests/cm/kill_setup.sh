#!/usr/bin/env bash
# kill_setup.sh UROCE UROCED
# An rping server killed while a client's connection is being set up, both bare `uroce run` through uroced:
# the server is stopped (SIGSTOP) once it listens, so the client's REQ reaches its port but no REP ever
# leaves; then it is killed with SIGKILL. A kernel would destroy the dead process's pending connection and
# answer the REQ with REJ 28 (consumer defined); uroced does the same for it (tools/uroced/cm_track.h). The
# client must report RDMA_CM_EVENT_REJECTED, error 28 (a REJ: the REQ's retries ending would be
# UNREACHABLE, after ~98 s) and exit non-zero, uroced must count the one REJ it sent, and hold nothing of
# the server afterwards. The time from the kill is printed, not asserted.
set -u
uroce=$1 uroced=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
. "$(dirname "$0")/kill_lib.sh"
command -v rping >/dev/null || { echo "SKIP: rping not installed (rdmacm-utils)"; exit 77; }
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
unset UROCE_PORT
spid= cpid=
trap '[ -z "$spid" ] || kill -9 $spid 2>/dev/null; [ -z "$cpid" ] || kill -9 $cpid 2>/dev/null;
      "$uroced" --stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
port=$((20000 + ($$ + 13) % 20000))
fail() {
  echo "FAIL: $*"
  for f in server client; do echo "== $f"; tail -30 "$dir/$f.log" 2>/dev/null; done
  echo "== uroced"; "$uroced" --stats 2>&1 | head -1; cat "$dir"/uroce-*/uroced.log 2>/dev/null | tail -8
  exit 1
}

# No `timeout` wrapper: $spid must be rping itself (`uroce run` execs it).
UROCE_UCMA_TRACE=1 "$uroce" run -- rping -s -a 127.0.0.1 -p "$port" >"$dir/server.log" 2>&1 &
spid=$!
wait_cm_listen "$dir/server.log" "$spid" || fail "the server never listened"
kill -STOP $spid
UROCE_UCMA_TRACE=1 "$uroce" run -- rping -c -a 127.0.0.1 -p "$port" -C 1 >"$dir/client.log" 2>&1 &
cpid=$!
# The REQ went through the switch to the stopped server.
wait_for 20 field_is cm_conns 1 || fail "uroced never saw the REQ"
kill_server_and_wait "RDMA_CM_EVENT_REJECTED, error 28" "SIGKILL during setup"
wait $cpid
crc=$?
cpid=
echo "== the client's REJECTED 28 came $ms ms after the kill; it exited $crc"
[ $crc != 0 ] || fail "the client exited 0"
[ "$(uroced_field cm_rej_sent)" = 1 ] || fail "uroced sent $(uroced_field cm_rej_sent) REJs, not 1"
wait_for 5 field_is leases 0 || fail "leases left"
[ "$(uroced_field cm_binds)$(uroced_field cm_conns)" = 00 ] || fail "uroced still holds CM state"
case $(cm_lookup 127.0.0.1 "$port") in "error errno=111"*) ;; *) fail "the dead server's port still looks up" ;; esac
echo "PASS: a server killed during connection setup: its client is REJECTED 28 in $ms ms"
