#!/usr/bin/env bash
# control.sh UROCE UROCED TCP_PORT
# The engines' control sockets (`uroce stats`, `uroce capture`) serve only their own user and root:
#  - uid 65534 cannot reach root's socket (the runtime directory is 0700);
#  - with the directories and the socket opened up to everyone, the engine still refuses uid 65534
#    (SO_PEERCRED) with one error line, for stats and for capture_start alike, and counts the refusals;
#  - root is served by an engine that uid 65534 runs.
set -u
uroce=$1 tcp=$3
. "$(dirname "$0")/trust_lib.sh"
trust_require_root "$uroce"
command -v ibv_rc_pingpong >/dev/null || { echo "SKIP: ibv_rc_pingpong is missing"; exit 77; }
d=$(mktemp -d /tmp/uroce-trust-ctl.XXXXXX)
rpid= npid=
trap 'kill $rpid $npid 2>/dev/null; wait 2>/dev/null; rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; for f in "$d"/*.log; do echo "== $f"; cat "$f"; done; exit 1; }
chmod 0711 "$d"
mkdir -m 0700 "$d/root" "$d/nobody"
chown $NOBODY:$NOBODY "$d/nobody"

# root's engine: an ibv_rc_pingpong server has its device open while it waits for a client.
XDG_RUNTIME_DIR=$d/root "$uroce" run -- ibv_rc_pingpong -g 0 -p "$tcp" >"$d/root.log" 2>&1 &
rpid=$!  # `uroce run` execs: the program's pid names the socket
rsock=$d/root/uroce-0/ctl/$rpid-uroce0.sock
wait_path "$rsock" || fail "root's control socket $rsock never appeared"

r=$(as_uid $NOBODY "$PY" -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' \
  "$rsock" 2>&1) && fail "uid $NOBODY connected to root's control socket through its 0700 directory"
echo "$r" | grep -q PermissionError || fail "unexpected error: $r"
echo "ok: uid $NOBODY cannot reach root's control socket (directory 0700)"

# Open everything up, as a careless chmod would: the engine itself must still refuse.
chmod 0711 "$d/root" "$d/root/uroce-0" "$d/root/uroce-0/ctl"
chmod 0666 "$rsock"
for req in '{"cmd":"stats"}' '{"cmd":"capture_start","path":"/tmp/uroce-trust-never.pcap"}'; do
  r=$(as_uid $NOBODY bash -c "$(declare -f sock_request); PY=$PY; sock_request '$rsock' '$req'")
  echo "uid $NOBODY $req -> $r"
  echo "$r" | grep -q '"ok":false' && echo "$r" | grep -q "refused: uid $NOBODY" ||
    fail "uid $NOBODY was not refused"
done
[ -e /tmp/uroce-trust-never.pcap ] && { rm -f /tmp/uroce-trust-never.pcap; fail "the refused capture made a file"; }
# Back to private (a runtime directory that is not 0700 is not used by the tools either).
chmod 0700 "$d/root/uroce-0" "$d/root/uroce-0/ctl"
XDG_RUNTIME_DIR=$d/root "$uroce" stats --json --pid $rpid >"$d/stats.json" || fail "root's uroce stats failed"
"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1]))[0]; assert s["control_refused"] == 2, s.get("control_refused"); print("ok: root served, control_refused =", s["control_refused"])' \
  "$d/stats.json" || fail "root's stats do not count the two refusals"

# uid 65534's own engine: root (uid 0) is served.
setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups -- env XDG_RUNTIME_DIR="$d/nobody" \
  "$uroce" run -- ibv_rc_pingpong -g 0 -p $((tcp + 20)) >"$d/nobody.log" 2>&1 &  # not as_uid: $! must be the program
npid=$!
nsock=$d/nobody/uroce-$NOBODY/ctl/$npid-uroce0.sock
wait_path "$nsock" || fail "uid $NOBODY's control socket $nsock never appeared"
r=$(sock_request "$nsock" '{"cmd":"stats"}')
echo "$r" | grep -q "\"ok\":true,\"version\":1,\"pid\":$npid" || fail "root was not served by uid $NOBODY's engine: $r"
echo "ok: root is served by uid $NOBODY's engine"
# and its own user too, through the tool
as_uid $NOBODY env XDG_RUNTIME_DIR="$d/nobody" "$uroce" stats --pid $npid >"$d/nobody-stats.log" 2>&1 ||
  fail "uid $NOBODY's uroce stats of its own process failed"
echo "PASS"
