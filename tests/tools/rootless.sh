#!/usr/bin/env bash
# Rootless use: as an unprivileged user (nobody) on a machine where `uroce setup` never ran, `uroce run --
# ibv_devinfo` lists uroce0 and a perftest pair (ib_send_bw, and ib_write_bw -R through the RDMA CM) runs
# between two bare `uroce run` processes. The shim answers for /dev/infiniband/uroce_verbsN, which
# libibverbs stats and opens, so no device node has to exist.
#
# "Never ran" is made, without touching this machine's nodes, by a private mount namespace with an empty
# tmpfs over /dev/infiniband; the programs then run as nobody with an environment of their own.
# Usage: rootless.sh UROCE
set -u
UROCE=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ "${2:-}" != inner ]; then
  [ "$(id -u)" = 0 ] || { echo "SKIP: needs root to make a mount namespace and become nobody"; exit 77; }
  for t in unshare setpriv ib_send_bw ib_write_bw ibv_devinfo; do
    command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
  done
  exec unshare -m --propagation private "$0" "$UROCE" inner
fi

. "$(dirname "$0")/../lib/uroce_test_env.sh"
NOBODY=65534
rt=$(mktemp -d /tmp/uroce-rootless.XXXXXX) || fail "mktemp"
chown $NOBODY "$rt" && chmod 700 "$rt" || fail "chown $rt"
spid=
cleanup() {
  [ -z "$spid" ] || kill "$spid" 2>/dev/null
  # The host switch a bare `uroce run` started for this user, found by its runtime directory.
  for p in $(pgrep -u $NOBODY -x uroced); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "XDG_RUNTIME_DIR=$rt" && kill "$p"
  done
  rm -rf "$rt"
}
trap cleanup EXIT

if [ -d /dev/infiniband ]; then mount -t tmpfs -o mode=0755 none /dev/infiniband || fail "mount tmpfs"; fi
[ ! -e /dev/infiniband/uroce_verbs0 ] || fail "the device node is still visible"

as_nobody() {
  setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
    env -i PATH=/usr/bin:/bin HOME="$rt" XDG_RUNTIME_DIR="$rt" ${TRACE:+UROCE_UCMA_TRACE=1} \
    timeout 60 "$UROCE" run -- "$@"
}

out=$(as_nobody ibv_devinfo 2>&1) || fail "uroce run -- ibv_devinfo as nobody: $out"
grep -q "hca_id:.*uroce0" <<<"$out" || fail "ibv_devinfo lists no uroce0: $out"
grep -q "PORT_ACTIVE" <<<"$out" || fail "uroce0's port is not active: $out"
echo "ibv_devinfo as nobody without device nodes: uroce0, PORT_ACTIVE"

pair() {
  local port=$1 prog=$2
  shift 2
  TRACE=1 as_nobody "$prog" -p "$port" -n 2000 -s 4096 "$@" >"$rt/server.log" 2>&1 &
  spid=$!
  # perftest's out-of-band TCP socket, or with -R its RDMA CM listen (the shim's trace shows it).
  if [ "${1:-}" = -R ]; then
    wait_cm_listen "$rt/server.log" "$spid" || fail "$prog $* server never listened: $(cat "$rt/server.log")"
  else
    wait_listen "$port" "$spid" || fail "$prog server never listened: $(cat "$rt/server.log")"
  fi
  as_nobody "$prog" -p "$port" -n 2000 -s 4096 "$@" 127.0.0.1 >"$rt/client.log" 2>&1
  local crc=$?
  [ $crc = 0 ] || cat "$rt/client.log" "$rt/server.log" >&2
  reap_pair $crc
  grep -A1 "#bytes" "$rt/client.log" | tail -1 | tr -s ' \t' ' ' | sed "s/^/$prog $* as nobody:/"
}
pair 19871 ib_send_bw
pair 19872 ib_write_bw -R
echo "PASS: ibv_devinfo and two perftest pairs as nobody, with no device node"
