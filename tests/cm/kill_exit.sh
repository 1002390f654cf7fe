#!/usr/bin/env bash
# kill_exit.sh UROCE UROCED EXIT_OPEN [ROUNDS]
# A client process that returns from main with its RDMA CM connection open (tests/cm/kill_exit_open.cc),
# ROUNDS times against one persistent rping server (-P), through uroced and on a direct memif pair. As a
# kernel does when the rdma_cm file closes, the client's exit handler sends the DREQ
# (provider/cm_service.cc): the server must print a DISCONNECT EVENT for every round (waited for up to
# 10 s; the time is printed, not asserted), and its CM must have received (and handled) that DREQ every
# time: 3 handled MADs per connection, REQ, RTU and DREQ (`uroce stats` "cm" rx_handled), not a
# DISCONNECTED made up by a fallback
# (uroced's DREQ for a process that died, cm_dreq_sent; the memif link going down). Then a client that forks a
# child which exits at once: the child's exit must not disconnect the parent.
set -u
uroce=$1 uroced=$2 exit_open=$3 rounds=${4:-6}
. "$(dirname "$0")/../lib/uroce_test_env.sh"
. "$(dirname "$0")/kill_lib.sh"
command -v rping >/dev/null || { echo "SKIP: rping not installed (rdmacm-utils)"; exit 77; }
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
spid=
trap '[ -z "$spid" ] || kill -9 $spid 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
port=$((20000 + ($$ + 23) % 20000))
fail() {
  echo "FAIL: $*"
  for f in server client; do echo "== $f"; tail -20 "$dir/$f.log" 2>/dev/null; done
  echo "== uroced"; "$uroced" --stats 2>&1 | head -1; cut -c1-150 "$dir"/uroce-*/uroced.log | tail -12
  exit 1
}
server_cm() {
  "$uroce" stats --json --pid "$spid" 2>/dev/null |
    /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["cm"].get(sys.argv[1], 0))' "$1"
}
disconnects() { [ "$(grep -c "server DISCONNECT EVENT" "$dir/server.log")" -ge "$1" ]; }

for mode in uroced memif; do
  if [ $mode = uroced ]; then
    unset UROCE_PORT
    srv=() cli=() addr=127.0.0.1
  else
    srv=(--ip 127.1.0.1) cli=(--ip 127.1.0.2) addr=127.1.0.1
  fi
  [ $mode = uroced ] || export UROCE_PORT="memif:socket=$dir/m.sock,role=server"
  # No `timeout` wrapper: $spid must be rping itself, whose stats are read.
  UROCE_UCMA_TRACE=1 "$uroce" run "${srv[@]}" -- rping -s -P -a $addr -p "$port" >"$dir/server.log" 2>&1 &
  spid=$!
  wait_cm_listen "$dir/server.log" "$spid" || fail "$mode: the server never listened"
  [ $mode = uroced ] || export UROCE_PORT="memif:socket=$dir/m.sock,role=client"
  worst=0
  for r in $(seq "$rounds"); do
    timeout 20 "$uroce" run "${cli[@]}" -- "$exit_open" $addr "$port" >"$dir/client.log" 2>&1 ||
      fail "$mode round $r: the client exited $?"
    t0=$(date +%s%N)
    grep -q "^connected" "$dir/client.log" || fail "$mode round $r: not connected"
    wait_for 10 disconnects "$r" || fail "$mode round $r: no server DISCONNECT EVENT"
    ms=$(ms_since $t0)
    [ "$ms" -le "$worst" ] || worst=$ms
    handled=$(server_cm rx_handled)
    [ "$handled" = $((3 * r)) ] ||
      fail "$mode round $r: the server's CM handled $handled MADs, not $((3 * r)): an exit DREQ was lost"
  done
  # A child forked with the connection open and exiting runs the exit handlers its parent registered: they
  # must leave the parent's connection alone (the child's copy of the CM would send the parent's DREQ on the
  # parent's port, and wait for its DREP). Then the parent's own exit disconnects, as above.
  mkfifo "$dir/go"
  timeout 20 "$uroce" run "${cli[@]}" -- "$exit_open" $addr "$port" fork <"$dir/go" >"$dir/client.log" 2>&1 &
  cpid=$!
  exec 3>"$dir/go"
  child_exited() { grep -q "^child exited" "$dir/client.log"; }
  wait_for 20 child_exited || fail "$mode fork round: the forked child did not exit"
  grep -q "^child exited 0" "$dir/client.log" || fail "$mode fork round: $(grep "^child" "$dir/client.log")"
  handled=$(server_cm rx_handled)
  [ "$handled" = $((3 * rounds + 2)) ] && ! disconnects $((rounds + 1)) ||
    fail "$mode fork round: the child's exit disconnected its parent (server CM handled $handled MADs)"
  echo >&3
  exec 3>&-
  wait $cpid || fail "$mode fork round: the client exited $?"
  rm -f "$dir/go"
  wait_for 10 disconnects $((rounds + 1)) || fail "$mode fork round: no server DISCONNECT EVENT"
  handled=$(server_cm rx_handled)
  [ "$handled" = $((3 * (rounds + 1))) ] || fail "$mode fork round: the server's CM handled $handled MADs"
  [ $mode != uroced ] || [ "$(uroced_field cm_dreq_sent)" = 0 ] ||
    fail "uroced had to send $(uroced_field cm_dreq_sent) DREQs for processes that exited normally"
  echo "== $mode: $rounds clients exited with their connection open: every DREQ arrived, DISCONNECTED within $worst ms;" \
    "a forked child's exit left its parent's connection alone"
  kill $spid
  wait $spid 2>/dev/null
  spid=
done
echo "PASS: an exit with a connection open sends its DREQ"
