# Sourced by the shell tests that run programs through `uroce run`.
#   uroce_require_setup UROCE  - the device nodes must exist: as root run `uroce setup` (idempotent);
#                                otherwise exit 77 (ctest SKIP) with the instruction.
uroce_require_setup() {
  local node=/dev/infiniband/uroce_verbs0
  if [ "$(stat -c '%F %t:%T' "$node" 2>/dev/null)" != "character special file 1:7" ]; then
    if [ "$(id -u)" != 0 ]; then echo "SKIP: $node missing: run 'sudo uroce setup' once"; exit 77; fi
    "$1" setup >/dev/null || exit 1
  fi
}

#   wait_listen PORT [PID]     - waits (up to 20 s) until something listens on TCP PORT: a verbs server's
#                                out-of-band socket. 1 if nothing did, or at once if process PID (the
#                                server) exited. A client may connect at once: the kernel queues the
#                                connection until the server accepts it.
wait_listen() {
  for _ in $(seq 200); do
    ss -Hltn "sport = :$1" | grep -q . && return 0
    [ -z "${2:-}" ] || kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

#   wait_cm_listen LOG PID     - waits (up to 20 s) until an RDMA CM server run with UROCE_UCMA_TRACE=1, its
#                                output in LOG, has listened (its LISTEN command succeeded). 1 if it did
#                                not, or at once if process PID (the server) exited.
wait_cm_listen() {
  for _ in $(seq 200); do
    grep -q "LISTEN (7) -> ok" "$1" 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

#   uroce_wait_stat UROCE PID FIELD MIN - waits (up to 20 s) until `uroce stats --json --pid PID` shows the
#                                device counter FIELD at MIN or more. 1 if it never did.
uroce_wait_stat() {
  for _ in $(seq 200); do
    "$1" stats --json --pid "$2" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
sys.exit(0 if json.load(sys.stdin)[0]["device"].get(sys.argv[1], 0) >= int(sys.argv[2]) else 1)' "$3" "$4" \
      2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
