# Sourced by tests/cm/kill_*.sh and mad_*.sh (after tests/lib/uroce_test_env.sh): what they ask uroced and
# how they wait. Needs $uroced and $dir (the test's XDG_RUNTIME_DIR).

#   uroced_field NAME      - the value of NAME=... on the first line of `uroced --stats` (the daemon's own).
uroced_field() { "$uroced" --stats 2>/dev/null | head -1 | tr ' ' '\n' | sed -n "s/^$1=//p"; }

#   wait_for SECONDS CMD... - runs CMD every 50 ms until it succeeds (0) or SECONDS pass (1).
wait_for() {
  local end=$((SECONDS + $1))
  shift
  until "$@"; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.05
  done
}

#   field_is NAME VALUE    - uroced's NAME is VALUE now.
field_is() { [ "$(uroced_field "$1")" = "$2" ]; }

#   log_has FILE PATTERN   - FILE has a line matching the extended regex PATTERN.
log_has() { grep -Eq -- "$2" "$1" 2>/dev/null; }

#   cm_lookup ADDR PORT    - uroced's answer to `cm lookup` of TCP-space ADDR:PORT on its control socket.
cm_lookup() {
  /usr/bin/python3 - "$(ls "$dir"/uroce-*/uroced.sock)" "$1" "$2" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(("cm lookup 0x106 %s %s\n" % (sys.argv[2], sys.argv[3])).encode())
out = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    out += b
print(out.decode().strip())
PY
}

#   ms_since T0            - milliseconds since T0 (a `date +%s%N` value).
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

#   kill_server_and_wait PATTERN WHAT - SIGKILLs the server ($spid), waits up to 10 s for PATTERN in the
#                          client's log ($dir/client.log), then up to 10 s for the client ($cpid) to exit; sets
#                          ms to the time from the kill to PATTERN. Calls the test's fail on a timeout.
kill_server_and_wait() {
  kill -9 $spid
  local t0
  t0=$(date +%s%N)
  wait $spid 2>/dev/null
  spid=
  wait_for 10 log_has "$dir/client.log" "$1" || fail "$2: no '$1' within 10 s"
  ms=$(ms_since $t0)
  wait_for 10 eval '! kill -0 $cpid 2>/dev/null' || fail "$2: the client did not exit"
}
