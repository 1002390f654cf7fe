#!/usr/bin/env bash
# deb_package.sh CPACK BUILD_DIR
# `cpack -G DEB` for the build tree into a temporary directory (the package is not installed: no dpkg -i
# here), then `dpkg-deb -c` must list uroce, uroced, the provider in libibverbs' provider directory, the
# preload shim and /etc/libibverbs.d/uroce.driver (naming "uroce"), and no test or benchmark binary;
# `dpkg-deb -I` must show the run-time dependencies (libibverbs1, the DPDK memif driver, liburing, ISA-L).
# The package's tree, unpacked with `dpkg-deb -x` into the temporary directory (not installed), must work
# on its own: its uroce names its own provider and shim, and runs ibv_devinfo (when the device nodes exist).
# Exits 77 (ctest SKIP) without dpkg-deb.
set -u
cpack=$1 build=$2
command -v dpkg-deb >/dev/null || { echo "SKIP: dpkg-deb not installed"; exit 77; }
dir=$(mktemp -d)
root=$dir/root
trap '[ ! -x "$root/usr/bin/uroced" ] || "$root/usr/bin/uroced" --stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do [ -f "$f" ] && { echo "== $f"; cat "$f"; }; done
  exit 1
}

# --config names the build tree's CPackConfig.cmake; -B keeps the package and its staging out of the tree.
"$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$dir/out" >"$dir/cpack.log" 2>&1 || fail "cpack failed"
deb=$(ls "$dir"/out/uroce_*_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "no uroce_<version>_<arch>.deb in $(ls "$dir/out")"
echo "package: $(basename "$deb")"
[ "$(basename "$deb")" = "uroce_$(dpkg-deb -f "$deb" Version)_$(dpkg --print-architecture).deb" ] ||
  fail "unexpected file name $(basename "$deb")"

dpkg-deb -c "$deb" >"$dir/contents.log" || fail "dpkg-deb -c failed"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
for f in ./usr/bin/uroce ./usr/bin/uroced "./usr/lib/$multiarch/libibverbs/liburoce-rdmav34.so" \
  "./usr/lib/$multiarch/uroce/liburoce-preload.so" ./etc/libibverbs.d/uroce.driver \
  ./usr/share/doc/uroce/README.md ./usr/share/doc/uroce/copyright; do
  awk '{print $6}' "$dir/contents.log" | grep -qxF "$f" || fail "$f is not in the package"
done
awk '{print $6}' "$dir/contents.log" | grep -E '_test$|/bench_|tests/' && fail "test or benchmark files packaged"
dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./etc/libibverbs.d/uroce.driver >"$dir/driver.log" ||
  fail "cannot read the driver file"
grep -qx "driver uroce" "$dir/driver.log" || fail "the driver file does not say 'driver uroce'"

dpkg-deb -I "$deb" >"$dir/info.log" || fail "dpkg-deb -I failed"
depends=$(dpkg-deb -f "$deb" Depends)
for p in libibverbs1 librte-net-memif23 liburing2 libisal2 librte-eal23; do
  echo "$depends" | tr ',' '\n' | grep -q "^ *$p\b" || fail "Depends lacks $p: $depends"
done

# The unpacked tree alone (no build tree in the environment; ctest starts the test inside it).
dpkg-deb -x "$deb" "$root" || fail "dpkg-deb -x failed"
cd "$dir" || exit 1
unset OLDPWD UROCE_LIBDIR UROCED UROCE_PORT SYSFS_PATH RDMAV_DRIVERS LD_PRELOAD UROCED_CONFIG
export PATH=/usr/sbin:/usr/bin:/sbin:/bin XDG_RUNTIME_DIR=$dir/run
mkdir -m 700 "$XDG_RUNTIME_DIR"
"$root/usr/bin/uroce" env >"$dir/env.log" 2>&1 || fail "the packaged uroce env failed"
grep -qx "export RDMAV_DRIVERS=$root/usr/lib/$multiarch/libibverbs/liburoce" "$dir/env.log" ||
  fail "the packaged uroce does not name the packaged provider"
grep -qx "export LD_PRELOAD=$root/usr/lib/$multiarch/uroce/liburoce-preload.so" "$dir/env.log" ||
  fail "the packaged uroce does not preload the packaged shim"
if command -v ibv_devinfo >/dev/null; then
  timeout 20 "$root/usr/bin/uroce" run -- ibv_devinfo >"$dir/devinfo.log" 2>&1 ||
    fail "the packaged uroce run -- ibv_devinfo failed"
  grep -q "hca_id:.*uroce0" "$dir/devinfo.log" || fail "ibv_devinfo lists no uroce device"
  echo "the unpacked package runs ibv_devinfo"
else
  echo "no ibv_devinfo: the unpacked package's ibv_devinfo run is left out"
fi

echo "== dpkg-deb -I"; cat "$dir/info.log"
echo "== dpkg-deb -c"; cat "$dir/contents.log"
echo "PASS: $(basename "$deb") holds the programs, the provider and its driver file, with Depends"
