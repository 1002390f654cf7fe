#!/usr/bin/env bash
# kill_phases.sh UROCE UROCED VIA PHASE
# A verbs pair (server and client in two processes) over VIA = uroced (each through the host switch) or
# memif (a direct memif pair), with one side killed with SIGKILL in PHASE:
#   exchange  the out-of-band TCP exchange has not completed: the server is stopped (SIGSTOP) after it
#             listens, the client connects and waits for the server's reply, the server is killed; then a
#             second server whose peer dies with the exchange half-sent (a shell that connects, writes part
#             of a message and kills itself)
#   setup     both QPs are connected (both printed the remote address) and no RDMA frame has passed: through
#             uroced (ibv_rc_pingpong) every egress drops all frames (loss=1) until the kill; over memif
#             (ib_write_bw) the kill follows the remote-address lines at once, so some writes may have passed.
#             The survivor is the client, which always has a request outstanding then and so must see the
#             death. (A pingpong client over memif would not do: killed between ACKing a ping and sending its
#             pong, the server leaves the client waiting for a receive with nothing outstanding, which RC
#             cannot time out, by design.)
#   teardown  the client has printed its results (traffic is over) and is tearing down when it is killed
# (Mid-transfer kills are tests/integration/kill_peer.sh and tests/uroced/kill_peer.sh.)
# The survivor must exit within 10 s (with an error where the peer's death is visible to it); through uroced
# no lease may be left, and the same uroced must serve a next pair.
set -u
uroce=$1 uroced=$2 via=$3 phase=$4
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir UROCE_STATS_ON_EXIT=1
case $via-$phase in
  uroced-exchange) tcp=18981 ;; uroced-setup) tcp=18983 ;; uroced-teardown) tcp=18985 ;;
  memif-exchange) tcp=18987 ;; memif-setup) tcp=18989 ;; memif-teardown) tcp=18991 ;;
  *) echo "usage: kill_phases.sh UROCE UROCED uroced|memif exchange|setup|teardown"; exit 2 ;;
esac
spid= cpid=
trap 'kill -9 $spid $cpid 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; sleep 0.2; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; for f in "$dir"/*.log "$dir"/uroce-*/uroced.log; do echo "== $f"; cat "$f"; done; exit 1; }
stat_field() { "$uroced" --stats | head -1 | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# start_server LOG ARGS... / start_client LOG ARGS...: one side of the pair over $via; sets spid / cpid.
start_server() {
  local log=$1
  shift
  if [ "$via" = uroced ]; then
    "$uroce" run --port uroced -- "$@" -p $tcp >"$log" 2>&1 &
    spid=$!
  else
    rm -f "$dir/m.sock"
    UROCE_PORT="memif:socket=$dir/m.sock,role=server" "$uroce" run --ip 127.1.0.1 -- "$@" -p $tcp >"$log" 2>&1 &
    spid=$!
  fi
  wait_listen $tcp || fail "server never listened"
}
start_client() {
  local log=$1
  shift
  if [ "$via" = uroced ]; then
    "$uroce" run --port uroced -- "$@" -p $tcp 127.0.0.1 >"$log" 2>&1 &
  else
    UROCE_PORT="memif:socket=$dir/m.sock,role=client" "$uroce" run --ip 127.1.0.2 -- "$@" -p $tcp 127.0.0.1 \
      >"$log" 2>&1 &
  fi
  cpid=$!
}
# wait_line FILE REGEX SECONDS: until FILE has a line matching REGEX.
wait_line() {
  for _ in $(seq $(($3 * 20))); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  return 1
}
# survivor PID LOG WHAT: PID must exit within 10 s; prints how long it took; returns its exit status.
survivor() {
  local t0 t1 rc
  t0=$(date +%s%N)
  for _ in $(seq 200); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
  t1=$(date +%s%N)
  kill -0 "$1" 2>/dev/null && fail "$3 still running 10 s after its peer was killed"
  wait "$1"
  rc=$?
  echo "== $3 (exit $rc, $(( (t1 - t0) / 1000000 )) ms after the kill)"
  cat "$2"
  return $rc
}
if [ "$via" = uroced ]; then "$uroced" --stop >/dev/null 2>&1; fi

wb=(stdbuf -oL ib_write_bw -d uroce0 -x 0 -F)  # line-buffered: a log line is there when printed
case $phase in
  exchange)
    start_server "$dir/srv.log" "${wb[@]}" -n 2000
    kill -STOP $spid
    start_client "$dir/cli.log" "${wb[@]}" -n 2000
    for _ in $(seq 200); do ss -Htn state established "dport = :$tcp" | grep -q . && break; sleep 0.05; done
    ss -Htn state established "dport = :$tcp" | grep -q . || fail "the client never connected"
    kill -9 $spid
    wait $spid 2>/dev/null
    spid=
    survivor $cpid "$dir/cli.log" "client" && fail "the client exited 0 without a server"
    cpid=
    # The other way round: the server's peer dies half-way through sending its address.
    start_server "$dir/srv2.log" "${wb[@]}" -n 2000
    bash -c 'exec 3<>/dev/tcp/127.0.0.1/'$tcp'; printf "0000:000011:" >&3; kill -9 $$' 2>/dev/null
    survivor $spid "$dir/srv2.log" "server" && fail "the server exited 0 after a half exchange"
    spid=
    ;;
  setup)
    # Line-buffered output, so "remote address" is in the log when it is printed, not at exit.
    pp=(stdbuf -oL ibv_rc_pingpong -g 0 -n 100000)
    [ "$via" = uroced ] || pp=("${wb[@]}" -D 30)
    start_server "$dir/srv.log" "${pp[@]}"
    if [ "$via" = uroced ]; then "$uroced" --set loss=1 >/dev/null || fail "uroced --set loss=1"; fi
    start_client "$dir/cli.log" "${pp[@]}"
    wait_line "$dir/cli.log" "remote address" 20 || fail "the client never connected"
    wait_line "$dir/srv.log" "remote address" 20 || fail "the server never connected"
    kill -9 $spid
    wait $spid 2>/dev/null
    spid=
    if [ "$via" = uroced ]; then
      "$uroced" --stats | grep -q " tx_frames=0 " || fail "frames passed before the kill"
      "$uroced" --set loss=0 >/dev/null || fail "uroced --set loss=0"
    fi
    survivor $cpid "$dir/cli.log" "client" && fail "the client exited 0 although its peer died before traffic"
    cpid=
    grep -q "status transport retry counter exceeded\|status 12\|Failed status" "$dir/cli.log" ||
      fail "the client did not report a failed completion"
    ;;
  teardown)
    start_server "$dir/srv.log" "${wb[@]}" -n 2000
    start_client "$dir/cli.log" "${wb[@]}" -n 2000
    # perftest prints the results row (size, iterations, ...) when traffic is over, before it tears down.
    wait_line "$dir/cli.log" "^ *65536 +2000 " 30 || fail "the client never finished its traffic"
    kill -9 $cpid
    wait $cpid 2>/dev/null
    cpid=
    survivor $spid "$dir/srv.log" "server"
    echo "(the server's exit status after its peer died in teardown: $?; either is correct)"
    spid=
    ;;
esac

[ "$via" = uroced ] || { echo "PASS: $via $phase"; exit 0; }
for _ in $(seq 50); do [ "$(stat_field leases)" = 0 ] && break; sleep 0.1; done
[ "$(stat_field leases)" = 0 ] || fail "uroced still holds leases: $("$uroced" --stats)"
dpid=$(stat_field pid)
# The same daemon serves the next pair.
start_server "$dir/next_srv.log" ibv_rc_pingpong -g 0 -n 100 -c
timeout 30 "$uroce" run --port uroced -- ibv_rc_pingpong -g 0 -n 100 -c -p $tcp 127.0.0.1 >"$dir/next_cli.log" 2>&1 ||
  fail "the next pair failed"
timeout 10 tail --pid=$spid -f /dev/null
wait $spid || fail "the next pair's server failed"
spid=
[ "$(stat_field pid)" = "$dpid" ] || fail "the next pair did not use the same uroced"
echo "PASS: $via $phase: survivor exited, no lease left, uroced $dpid served the next pair"
