#!/usr/bin/env bash
# install_prefix.sh CMAKE BUILD_DIR
# `cmake --install BUILD_DIR --prefix TMP` into an empty temporary prefix, then only that prefix is used:
# TMP/bin/uroce runs ibv_devinfo and an ibv_rc_pingpong pair with nothing in the environment that points
# into the build tree (no UROCE_LIBDIR, UROCED or UROCE_PORT; PATH holds only the system directories), so
# uroce must find the installed provider and shim itself and start the installed uroced.
# Also checks the tree: the provider where libibverbs looks (lib/<multiarch>/libibverbs/), the .driver file
# under TMP/etc/libibverbs.d, the docs, and no test or benchmark binary.
# Exits 77 (ctest SKIP) without ibv_devinfo / ibv_rc_pingpong, or without the device nodes when not root.
set -u
cmake=$1 build=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
if ! command -v ibv_rc_pingpong >/dev/null || ! command -v ibv_devinfo >/dev/null; then
  echo "SKIP: ibverbs-utils not installed"
  exit 77
fi
dir=$(mktemp -d)
prefix=$dir/prefix
spid=
trap '[ -z "$spid" ] || kill $spid 2>/dev/null; [ ! -x "$prefix/bin/uroced" ] || "$prefix/bin/uroced" --stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log "$dir"/run/uroce-*/uroced.log; do [ -f "$f" ] && { echo "== $f"; cat "$f"; }; done
  exit 1
}

"$cmake" --install "$build" --prefix "$prefix" >"$dir/install.log" 2>&1 || fail "cmake --install failed"

# Nothing of the build tree from here on (ctest starts the test inside it).
cd "$dir" || exit 1
unset OLDPWD UROCE_LIBDIR UROCED UROCE_PORT UROCE_DEV UROCE_SYSFS SYSFS_PATH RDMAV_DRIVERS LD_PRELOAD UROCED_CONFIG
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export XDG_RUNTIME_DIR=$dir/run
mkdir -m 700 "$XDG_RUNTIME_DIR"
uroce=$prefix/bin/uroce  # no `uroce setup`: the installed shim stands in for the device node

# The tree.
lib=$(cd "$prefix" && ls -d lib/*/libibverbs 2>/dev/null | head -1)
[ -n "$lib" ] || lib=lib/libibverbs
for f in bin/uroce bin/uroced "$lib/liburoce-rdmav34.so" "${lib%/libibverbs}/uroce/liburoce-preload.so" \
  etc/libibverbs.d/uroce.driver share/doc/uroce/README.md share/man/man1/uroce.1 share/man/man1/uroced.1 \
  share/bash-completion/completions/uroce share/bash-completion/completions/uroced; do
  [ -f "$prefix/$f" ] || fail "$f is not installed"
done
grep -qx "driver $prefix/$lib/liburoce" "$prefix/etc/libibverbs.d/uroce.driver" ||
  fail "the driver file does not name the installed provider: $(cat "$prefix/etc/libibverbs.d/uroce.driver")"
extra=$(cd "$prefix" && find . -type f \( -name '*_test' -o -name 'bench_*' -o -name '*test*' \) | head)
[ -z "$extra" ] || fail "test or benchmark files installed: $extra"
echo "== installed files"
(cd "$prefix" && find . -type f | sort)

# ibv_devinfo through the installed provider.
env | grep -F "$build" && fail "the environment still names the build tree"
timeout 20 "$uroce" run -- ibv_devinfo >"$dir/devinfo.log" 2>&1 || fail "uroce run -- ibv_devinfo failed"
grep -q "hca_id:.*uroce0" "$dir/devinfo.log" || fail "ibv_devinfo lists no uroce device"
timeout 20 "$uroce" env >"$dir/env.log" 2>&1 || fail "uroce env failed"
grep -q "RDMAV_DRIVERS=$prefix/" "$dir/env.log" || fail "RDMAV_DRIVERS does not point into the prefix"
grep -q "LD_PRELOAD=$prefix/" "$dir/env.log" || fail "LD_PRELOAD does not point into the prefix"

# An ibv_rc_pingpong pair through the host switch, which uroce starts from the prefix.
port=18950
timeout 40 "$uroce" run -- ibv_rc_pingpong -g 0 -n 100 -p $port >"$dir/server.log" 2>&1 &
spid=$!
wait_listen $port $spid || fail "the server never listened on $port"
dpid=$("$prefix/bin/uroced" --stats 2>/dev/null | head -1 | tr ' ' '\n' | sed -n 's/^pid=//p')
[ -n "$dpid" ] || fail "no uroced answers"
[ "$(readlink "/proc/$dpid/exe")" = "$prefix/bin/uroced" ] ||
  fail "the running uroced is $(readlink "/proc/$dpid/exe"), not the installed one"
timeout 30 "$uroce" run -- ibv_rc_pingpong -g 0 -n 100 -p $port 127.0.0.1 >"$dir/client.log" 2>&1
reap_pair $?
grep -q "100 iters" "$dir/client.log" || fail "the client did not report 100 iterations"
echo "== client"; cat "$dir/client.log"
echo "PASS: the install tree alone runs ibv_devinfo and an ibv_rc_pingpong pair"
