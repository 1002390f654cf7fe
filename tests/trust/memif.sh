#!/usr/bin/env bash
# memif.sh UROCE UROCED TCP_PORT
# memif ports and uroced against another local user (uid 65534):
#  - a memif spec naming an abstract socket ("@name") is refused, with the value in the message;
#  - the memif socket of root's uroced lease is a filesystem socket in the 0700 runtime directory and
#    not an abstract name too (DPDK 22.11 memif defaults to socket-abstract=yes): uid 65534 can reach it
#    neither by path (EACCES) nor in the abstract namespace (ECONNREFUSED), and `uroce run` as uid 65534
#    with that socket as its port fails;
#  - uroced's control socket, even with its directory and mode opened to everyone, refuses uid 65534
#    (SO_PEERCRED: one error line, counted as refused_peers) for ping and lease alike.
set -u
uroce=$1 uroced=$2 tcp=$3
. "$(dirname "$0")/trust_lib.sh"
trust_require_root "$uroce"
command -v ibv_rc_pingpong >/dev/null && command -v ibv_devinfo >/dev/null ||
  { echo "SKIP: ibv_rc_pingpong / ibv_devinfo missing"; exit 77; }
d=$(mktemp -d /tmp/uroce-trust-memif.XXXXXX)
spid=
export XDG_RUNTIME_DIR=$d/root UROCED=$uroced
trap 'kill $spid 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; wait 2>/dev/null; rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; for f in "$d"/*.log "$d"/root/uroce-0/uroced.log; do echo "== $f"; cat "$f"; done; exit 1; }
chmod 0711 "$d"
mkdir -m 0700 "$d/root"

# "@name" is refused before anything is created.
UROCE_PORT="memif:socket=@uroce-trust-$$,role=server" "$uroce" run -- ibv_devinfo >"$d/at.log" 2>&1 &&
  fail "an abstract memif socket was accepted"
grep -q "'@uroce-trust-$$' names an abstract socket" "$d/at.log" || fail "no clear message for '@name'"
echo "ok: memif:socket=@name refused"

# root's process through root's uroced.
"$uroce" run --port uroced -- ibv_rc_pingpong -g 0 -p "$tcp" >"$d/server.log" 2>&1 &
spid=$!
ports=$d/root/uroce-0/uroced-ports
wait_path "$ports/127.1.0.1.sock" 150 || fail "no lease port appeared in $ports"
sock=$ports/127.1.0.1.sock
[ "$(stat -c %a "$ports")" = 700 ] || fail "$ports is not 0700"
grep -q " $sock\$" /proc/net/unix || fail "$sock is not a listening filesystem socket"
grep -q " @$sock\$" /proc/net/unix && fail "the memif socket is also an abstract name (socket-abstract=yes)"
r=$(as_uid $NOBODY "$PY" - "$sock" <<'PYEOF'
import errno, socket, sys
for name in (sys.argv[1], "\0" + sys.argv[1]):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(name)
        print("CONNECTED", repr(name[:1]))
    except OSError as e:
        print(errno.errorcode[e.errno])
PYEOF
)
echo "uid $NOBODY connecting to root's memif port (path, abstract): $(echo $r)"
[ "$(echo $r)" = "EACCES ECONNREFUSED" ] || fail "uid $NOBODY could reach root's memif port: $r"
as_uid $NOBODY env XDG_RUNTIME_DIR="$d" UROCE_PORT="memif:socket=$sock,role=client,wait=300" \
  "$uroce" run -- ibv_devinfo >"$d/nobody.log" 2>&1 && fail "uid $NOBODY opened a device on root's memif port"
echo "ok: uid $NOBODY cannot attach to root's uroced port"

# uroced's control socket with its protections opened up: SO_PEERCRED still refuses uid 65534.
csock=$d/root/uroce-0/uroced.sock
chmod 0711 "$d/root" "$d/root/uroce-0"
chmod 0666 "$csock"
for req in ping lease; do
  r=$(as_uid $NOBODY bash -c "$(declare -f sock_request); PY=$PY; sock_request '$csock' '$req'")
  echo "uid $NOBODY '$req' -> $r"
  echo "$r" | grep -q "^error refused: uid $NOBODY" || fail "uroced served uid $NOBODY's '$req'"
done
chmod 0700 "$d/root/uroce-0"  # private again, or the tools would not use it
"$uroced" --stats >"$d/stats.log" 2>&1 || fail "uroced --stats failed"
grep -q "refused_peers=2" "$d/stats.log" || fail "uroced did not count two refusals"
grep -q "refused: uid $NOBODY is neither" "$d/root/uroce-0/uroced.log" || fail "no log line"
echo "ok: uroced refuses uid $NOBODY and counts it (refused_peers=2)"
echo PASS
