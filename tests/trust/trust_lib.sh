# Sourced by the tests in tests/trust: running commands as another uid and talking to Unix sockets.
. "$(dirname "$0")/../lib/uroce_test_env.sh"
PY=/usr/bin/python3
NOBODY=65534

# trust_require_root UROCE: these tests switch uids; skip (77) unless root, make the device nodes.
trust_require_root() {
  [ "$(id -u)" = 0 ] || { echo "SKIP: needs root (runs uroce as root and as uid $NOBODY)"; exit 77; }
  command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) is missing"; exit 77; }
  uroce_require_setup "$1"
}

# as_uid UID CMD...: CMD as UID (and gid UID, no supplementary groups), environment kept.
as_uid() {
  local u=$1
  shift
  setpriv --reuid="$u" --regid="$u" --clear-groups -- "$@"
}

# sock_request SOCKET LINE: connects to the Unix stream socket, sends LINE, prints what comes back until
# the peer closes or 2 s pass. Prints "CONNECT-ERROR <errno name>" when the connection is refused.
sock_request() {
  "$PY" - "$1" "$2" <<'PYEOF'
import errno, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(2)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("CONNECT-ERROR", errno.errorcode.get(e.errno, e.errno))
    sys.exit(0)
try:
    s.sendall((sys.argv[2] + "\n").encode())
except OSError:
    pass
out = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
        if out.count(b"\n") >= 1:
            break
except socket.timeout:
    pass
sys.stdout.write(out.decode(errors="replace"))
PYEOF
}

# wait_path PATH [TRIES]: waits until PATH exists (0.1 s steps, 10 s by default). 1 if it never did.
wait_path() {
  for _ in $(seq "${2:-100}"); do
    [ -e "$1" ] && return 0
    sleep 0.1
  done
  return 1
}
