#!/usr/bin/env bash
# capture.sh UROCE UROCED TCP_PORT
# `uroce capture -w FILE` creates FILE itself, new, mode 0600, never through a symbolic link:
#  - a new file is created 0600 and holds a pcap; uid 65534 cannot read it;
#  - an existing file is refused and left as it was; --force replaces it (a regular file only);
#  - a planted symbolic link (to an existing file, or dangling) is refused with and without --force, and
#    neither its target nor anything else is written;
#  - a FIFO is refused with --force (and the command does not hang on it);
#  - the engine, asked over its socket without a descriptor, refuses existing files and links as well.
set -u
uroce=$1 tcp=$3
. "$(dirname "$0")/trust_lib.sh"
trust_require_root "$uroce"
command -v ibv_rc_pingpong >/dev/null || { echo "SKIP: ibv_rc_pingpong is missing"; exit 77; }
d=$(mktemp -d /tmp/uroce-trust-cap.XXXXXX)
rpid=
trap 'kill $rpid 2>/dev/null; wait 2>/dev/null; rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; cat "$d/root.log" "$d/cap.log" 2>/dev/null; exit 1; }
chmod 0711 "$d"
mkdir -m 0700 "$d/xdg"
mkdir -m 0777 "$d/out"  # a shared directory, like /tmp (sticky)
chmod +t "$d/out"
export XDG_RUNTIME_DIR=$d/xdg

"$uroce" run -- ibv_rc_pingpong -g 0 -p "$tcp" >"$d/root.log" 2>&1 &
rpid=$!
wait_path "$d/xdg/uroce-0/ctl/$rpid-uroce0.sock" || fail "no control socket"

cap() { timeout 20 "$uroce" capture --pid $rpid --duration 0.2 "$@" >"$d/cap.log" 2>&1; }
is_pcap() { [ "$(od -An -tx4 -N4 "$1" | tr -d ' ')" = a1b23c4d ]; }  # nanosecond pcap, host order

# A new file: 0600, a pcap, unreadable by another uid.
cap -w "$d/out/new.pcap" || fail "capture to a new file failed"
[ "$(stat -c %a "$d/out/new.pcap")" = 600 ] || fail "new capture has mode $(stat -c %a "$d/out/new.pcap")"
is_pcap "$d/out/new.pcap" || fail "new capture is not a pcap"
as_uid $NOBODY cat "$d/out/new.pcap" >/dev/null 2>&1 && fail "uid $NOBODY could read the capture"
echo "ok: new file created 0600, unreadable by uid $NOBODY"

# An existing file: refused, untouched; --force replaces it.
echo keep >"$d/out/exists.pcap"
cap -w "$d/out/exists.pcap" && fail "an existing file was accepted"
grep -q "already exists" "$d/cap.log" || fail "no clear message for an existing file"
[ "$(cat "$d/out/exists.pcap")" = keep ] || fail "the existing file was changed"
cap -w "$d/out/exists.pcap" --force || fail "--force on an existing regular file failed"
is_pcap "$d/out/exists.pcap" || fail "--force did not write a pcap"
echo "ok: existing file refused, replaced with --force"

# Symbolic links planted by another user: never followed.
echo victim >"$d/victim"
ln -s "$d/victim" "$d/out/link.pcap"
ln -s "$d/made-by-link" "$d/out/dangling.pcap"
chown -h $NOBODY:$NOBODY "$d/out/link.pcap" "$d/out/dangling.pcap"
for f in link dangling; do
  for force in "" --force; do
    cap -w "$d/out/$f.pcap" $force && fail "symlink $f.pcap accepted ($force)"
    grep -q "symbolic link" "$d/cap.log" || fail "no clear message for symlink $f.pcap ($force): $(cat "$d/cap.log")"
  done
done
[ "$(cat "$d/victim")" = victim ] || fail "the link's target was written"
[ -e "$d/made-by-link" ] && fail "a dangling link's target was created"
echo "ok: symbolic links refused, targets untouched"

# Asked over the socket without a descriptor, the engine creates the file itself with the same rules.
sock=$d/xdg/uroce-0/ctl/$rpid-uroce0.sock
for f in link dangling exists; do
  r=$(sock_request "$sock" "{\"cmd\":\"capture_start\",\"path\":\"$d/out/$f.pcap\"}")
  echo "$r" | grep -q '"ok":false' || fail "the engine accepted an existing $f.pcap: $r"
done
[ "$(cat "$d/victim")" = victim ] && [ ! -e "$d/made-by-link" ] || fail "the engine wrote through a link"
echo "ok: the engine, asked directly, refuses existing files and links too"

# A FIFO: --force replaces regular files only, and opening must not block.
mkfifo "$d/out/fifo.pcap"
cap -w "$d/out/fifo.pcap" --force && fail "a FIFO was accepted"
grep -q "not a regular file" "$d/cap.log" || fail "no clear message for a FIFO: $(cat "$d/cap.log")"
echo "ok: FIFO refused"
echo PASS
