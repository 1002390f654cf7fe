#!/usr/bin/env bash
# netdev_gid_follow.sh UROCE TCP_PORT
# The GID table of a device bound with `uroce run --netdev IF` follows the interface's
# addresses while the program runs. In a namespace of its own, an ibv_rc_pingpong server (waiting for a client
# that never comes) holds the device open; an address is then added to the interface and removed again, and
# after each step `ibv_devinfo -v`, run with the server's own environment (the same sysfs tree; what
# ibv_query_gid reads), must show the change: the new address as a RoCE v2 GID in a slot of its own, then
# that slot empty, while GID 0 stays where it was. Exits 77 (ctest SKIP) without root or ip netns.
set -u
uroce=$1 tcp=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
if [ "$(id -u)" != 0 ]; then echo "SKIP: network namespaces need root"; exit 77; fi
if ! ip netns list >/dev/null 2>&1; then echo "SKIP: 'ip netns' is not available"; exit 77; fi
uroce_require_setup "$uroce"

dir=$(mktemp -d)
ns=uroce-gf$$
cleanup() {
  [ -n "${spid:-}" ] && kill "$spid" 2>/dev/null
  ip netns del "$ns" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  echo "== server"; cat "$dir/server.log"
  echo "== ibv_devinfo"; cat "$dir/devinfo.txt" 2>/dev/null
  exit 1
}
ip netns add "$ns" && ip -n "$ns" link set lo up &&
  ip -n "$ns" link add ga type veth peer name gb && ip -n "$ns" link set ga up && ip -n "$ns" link set gb up &&
  ip -n "$ns" addr add 10.215.0.1/24 dev ga || fail "cannot set up the namespace"
export XDG_RUNTIME_DIR=$dir
timeout 60 ip netns exec "$ns" "$uroce" run --netdev ga -- ibv_rc_pingpong -g 0 -p "$tcp" >"$dir/server.log" 2>&1 &
spid=$!
netns_wait_listen "$ns" "$tcp" "$spid" || fail "the server never started"
server=$(pgrep -P "$spid" | head -1)  # timeout's child: ip netns exec, then uroce run, exec'ed into CMD
[ "$(cat "/proc/$server/comm" 2>/dev/null)" = ibv_rc_pingpong ] || fail "no server process"

# ibv_devinfo -v with the server's device environment (SYSFS_PATH, RDMAV_DRIVERS, LD_PRELOAD, ...): the GID
# table as libibverbs in that process sees it. Without UROCE_NETDEV and UROCE_PORT: ibv_devinfo's own engine
# (in-process loopback) must not bind the interface, or it would bring the tree up to date itself.
devinfo() {
  (
    env -i $(tr '\0' '\n' <"/proc/$server/environ" | grep -E '^(SYSFS_PATH|RDMAV_DRIVERS|LD_PRELOAD|UROCE_DEV|UROCE_SYSFS|XDG_RUNTIME_DIR)=') \
      ip netns exec "$ns" ibv_devinfo -v -d uroce0 >"$dir/devinfo.txt" 2>&1
  )
}
# wait_gid PATTERN PRESENT: until a GID line matching PATTERN is (1) or is not (0) shown; up to 10 s.
wait_gid() {
  for _ in $(seq 100); do
    devinfo
    if grep -E 'GID\[' "$dir/devinfo.txt" | grep -qE "$1"; then [ "$2" = 1 ] && return 0; else [ "$2" = 0 ] && return 0; fi
    sleep 0.1
  done
  return 1
}
wait_gid 'GID\[ *0\]:.*::ffff:10.215.0.1, RoCE v2' 1 || fail "GID 0 is not the interface's address"
ip -n "$ns" addr add 10.215.7.9/24 dev ga || fail "cannot add an address"
wait_gid '::ffff:10.215.7.9, RoCE v2' 1 || fail "the added address never appeared in the GID table"
echo "added:"; grep -E 'GID\[' "$dir/devinfo.txt"
ip -n "$ns" addr add fd15::9/64 dev ga nodad || fail "cannot add an IPv6 address"
wait_gid 'fd15::9, RoCE v2' 1 || fail "the added IPv6 address never appeared in the GID table"
ip -n "$ns" addr del 10.215.7.9/24 dev ga || fail "cannot remove the address"
wait_gid '10.215.7.9' 0 || fail "the removed address stayed in the GID table"
echo "removed:"; grep -E 'GID\[' "$dir/devinfo.txt"
grep -qE 'GID\[ *0\]:.*::ffff:10.215.0.1, RoCE v2' "$dir/devinfo.txt" || fail "GID 0 moved"
grep -qE 'fd15::9, RoCE v2' "$dir/devinfo.txt" || fail "the IPv6 address moved out of the table"
kill -0 "$server" || fail "the server died"
echo "PASS"
