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

#   wait_listen PORT           - waits (up to 20 s) until something listens on TCP PORT: a verbs server's
#                                out-of-band socket. 1 if nothing did.
wait_listen() {
  for _ in $(seq 200); do
    ss -Hltn "sport = :$1" | grep -q . && { sleep 0.3; return 0; }
    sleep 0.1
  done
  return 1
}
