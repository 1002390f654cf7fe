#!/usr/bin/env bash
# engine_sched.sh UROCE
# The threads a one-sided target's frames wait for ask the kernel for a short slice (UROCE_ENGINE_SCHED,
# pmd_glue/thread_sched.h): with the default, an ibv_rc_pingpong server on a memif port has its progress
# thread (uroce-engine) and DPDK's interrupt thread (eal-intr-thread) at se.slice 100000 ns, and its own
# main thread at the kernel's default; with UROCE_ENGINE_SCHED=boost both also get nice -10 (as root; the
# slice alone and a note on stderr without CAP_SYS_NICE); with UROCE_ENGINE_SCHED=none no thread has the
# short slice. Before that, on any kernel: the progress thread has a DPDK lcore id, so its bursts use a
# per-thread cache of the port's buffer pool (`uroce stats` port_stats engine_pool_cache=1).
# /proc/PID/task/TID/sched shows se.slice on Linux >= 6.12; on older kernels the rest of the test skips.
set -u
uroce=$1
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; echo "== server log"; cat "$dir/out.log"; exit 1; }

# task_of PID NAME: /proc/PID/task/TID of PID's thread named NAME ("" when there is none).
task_of() {
  local t
  for t in /proc/"$1"/task/*; do
    [ "$(cat "$t/comm" 2>/dev/null)" = "$2" ] && { echo "$t"; return; }
  done
}
# slice_of / nice_of PID NAME: se.slice / nice value of that thread ("" when there is none).
slice_of() {
  local t
  t=$(task_of "$1" "$2")
  [ -n "$t" ] && awk '/^se.slice/ {print $NF; exit}' "$t/sched"
}
nice_of() {
  local t
  t=$(task_of "$1" "$2")
  [ -n "$t" ] && awk '{sub(/.*\) /, ""); print $17}' "$t/stat"
}

# run_server SCHED PORT: an ibv_rc_pingpong server (no client comes) with UROCE_ENGINE_SCHED=SCHED (empty:
# unset); sets $pid once it listens.
run_server() {
  env ${1:+UROCE_ENGINE_SCHED=$1} UROCE_PORT="memif:socket=$dir/m$2.sock,role=server" \
    "$uroce" run --ip 127.1.0.9 -- ibv_rc_pingpong -g 0 -p "$2" >"$dir/out.log" 2>&1 &
  pid=$!
  wait_listen "$2" $pid || fail "ibv_rc_pingpong never listened on $2"
}

run_server "" 18696
cache=$("$uroce" stats --json --pid $pid 2>"$dir/stats.err" |
  /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["port_stats"]["engine_pool_cache"])')
echo "port_stats engine_pool_cache=$cache"
[ "$cache" = 1 ] || { cat "$dir/stats.err"; fail "the progress thread has no DPDK lcore id (no pool cache)"; }
grep -q '^se.slice' /proc/self/sched 2>/dev/null || { echo "SKIP: no se.slice in /proc/self/sched (Linux < 6.12)"; exit 77; }
# The interrupt thread takes the setting on its next pass of the gate (every 2 ms while the port is used).
for _ in $(seq 50); do [ "$(slice_of $pid eal-intr-thread)" = 100000 ] && break; sleep 0.1; done
engine=$(slice_of $pid uroce-engine)
intr=$(slice_of $pid eal-intr-thread)
main=$(slice_of $pid ibv_rc_pingpong)
echo "default: uroce-engine se.slice=$engine eal-intr-thread se.slice=$intr main thread se.slice=$main"
[ "$engine" = 100000 ] || fail "the progress thread's slice is '$engine', not 100000"
[ "$intr" = 100000 ] || fail "the interrupt thread's slice is '$intr', not 100000"
[ -n "$main" ] && [ "$main" != 100000 ] || fail "the application's own thread got the short slice ('$main')"
kill $pid
wait $pid 2>/dev/null

# boost: the same slice and nice -10 for both threads (as root, or with CAP_SYS_NICE); refused, the slice
# alone and a line on stderr that says so. The application's thread keeps nice 0 either way.
run_server boost 18698
for _ in $(seq 50); do [ "$(slice_of $pid eal-intr-thread)" = 100000 ] && break; sleep 0.1; done
engine=$(slice_of $pid uroce-engine)/$(nice_of $pid uroce-engine)
intr=$(slice_of $pid eal-intr-thread)/$(nice_of $pid eal-intr-thread)
main=$(nice_of $pid ibv_rc_pingpong)
echo "UROCE_ENGINE_SCHED=boost: uroce-engine slice/nice=$engine eal-intr-thread slice/nice=$intr main thread nice=$main"
[ "$main" = 0 ] || fail "the application's own thread was reniced to '$main'"
if [ "$(id -u)" = 0 ]; then
  [ "$engine" = 100000/-10 ] || fail "boost gave the progress thread '$engine', not 100000/-10"
  [ "$intr" = 100000/-10 ] || fail "boost gave the interrupt thread '$intr', not 100000/-10"
else
  [ "$engine" = 100000/0 ] || fail "boost without CAP_SYS_NICE gave the progress thread '$engine', not 100000/0"
  grep -q "UROCE_ENGINE_SCHED=boost: nice -10 refused" "$dir/out.log" || fail "no line saying boost was refused"
fi
kill $pid
wait $pid 2>/dev/null

run_server none 18697
sleep 0.5
engine=$(slice_of $pid uroce-engine)
intr=$(slice_of $pid eal-intr-thread)
echo "UROCE_ENGINE_SCHED=none: uroce-engine se.slice=$engine eal-intr-thread se.slice=$intr"
[ -n "$engine" ] || fail "no uroce-engine thread"
[ "$engine" != 100000 ] && [ "$intr" != 100000 ] || fail "UROCE_ENGINE_SCHED=none still set the short slice"
echo "PASS"
