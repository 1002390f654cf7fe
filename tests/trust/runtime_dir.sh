#!/usr/bin/env bash
# runtime_dir.sh UROCE UROCED TCP_PORT
# Another user pre-creates the victim's /tmp/uroce-<uid> (XDG_RUNTIME_DIR unset): world-writable and owned
# by root, and plants /tmp/uroce-<uid>.1 as a symbolic link. The victim (a fresh uid with no runtime
# directory yet):
#  - still runs `uroce run -- ibv_devinfo`, in /tmp/uroce-<uid>.2 (created 0700, its own);
#  - never writes into the planted directory nor through the link;
#  - its engine's control socket and its `uroce stats` agree on the fallback (stats finds the process).
set -u
uroce=$1 tcp=$3
. "$(dirname "$0")/trust_lib.sh"
trust_require_root "$uroce"
command -v ibv_devinfo >/dev/null && command -v ibv_rc_pingpong >/dev/null ||
  { echo "SKIP: ibv_devinfo / ibv_rc_pingpong missing"; exit 77; }
# A uid nobody uses, so that no runtime directory of it exists yet.
v=
for i in $(seq 50); do
  c=$((40000 + ($$ + i * 7919) % 20000))
  compgen -G "/tmp/uroce-$c*" >/dev/null || getent passwd $c >/dev/null || { v=$c; break; }
done
[ -n "$v" ] || { echo "SKIP: no free uid found"; exit 77; }
base=/tmp/uroce-$v
target=$(mktemp -d /tmp/uroce-trust-target.XXXXXX)
spid=
trap 'kill $spid 2>/dev/null; wait 2>/dev/null; rm -rf "$base" "$base".[0-9]* "$target" "$log"' EXIT
log=$(mktemp)
fail() { echo "FAIL: $*"; cat "$log"; ls -la /tmp | grep "uroce-$v"; exit 1; }

mkdir -m 0777 "$base"  # root's, world-writable: what an attacker leaves behind
chmod 0777 "$base"
chown $v:$v "$target"
chmod 0700 "$target"
ln -s "$target" "$base.1"  # a link to a directory that looks right: never used either
victim() { env -u XDG_RUNTIME_DIR setpriv --reuid=$v --regid=$v --clear-groups -- "$@"; }

victim "$uroce" run -- ibv_devinfo >"$log" 2>&1 || fail "uroce run -- ibv_devinfo failed for uid $v"
grep -q "hca_id:.*uroce0" "$log" || fail "ibv_devinfo did not list uroce0"
[ "$(stat -c '%u %a %F' "$base.2")" = "$v 700 directory" ] || fail "$base.2 is not uid $v's 0700 directory"
[ -z "$(ls -A "$base")" ] || fail "something was written into the planted $base"
[ -z "$(ls -A "$target")" ] || fail "something was written through the link $base.1"
[ "$(stat -c '%u %a' "$base")" = "0 777" ] || fail "the planted directory was changed"
echo "ok: uroce run works for uid $v in $base.2; the planted directory and link are untouched"

# The engine (provider) and the tool pick the same directory.
env -u XDG_RUNTIME_DIR setpriv --reuid=$v --regid=$v --clear-groups -- \
  "$uroce" run -- ibv_rc_pingpong -g 0 -p "$tcp" >"$log" 2>&1 &
spid=$!
wait_path "$base.2/ctl/$spid-uroce0.sock" || fail "the engine's control socket is not in $base.2/ctl"
victim "$uroce" stats --pid $spid >"$log" 2>&1 || fail "uid $v's uroce stats did not find its process"
grep -q "^pid $spid " "$log" || fail "uroce stats output lacks the process"
echo "ok: the engine and uroce stats agree on $base.2"
echo PASS
