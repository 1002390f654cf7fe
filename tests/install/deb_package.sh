#!/usr/bin/env bash
# deb_package.sh CPACK BUILD_DIR
# `cpack -G DEB` for the build tree into a temporary directory (the package is not installed: no dpkg -i
# here), then `dpkg-deb -c` must list uroce, uroced, the provider in libibverbs' provider directory, the
# preload shim and /etc/libibverbs.d/uroce.driver (naming "uroce"), and no test or benchmark binary;
# `dpkg-deb -I` must show the run-time dependencies (libibverbs1, the DPDK memif driver, liburing, ISA-L).
# Exits 77 (ctest SKIP) without dpkg-deb.
set -u
cpack=$1 build=$2
command -v dpkg-deb >/dev/null || { echo "SKIP: dpkg-deb not installed"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
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
  ./usr/share/doc/uroce/README.md; do
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
echo "== dpkg-deb -I"; cat "$dir/info.log"
echo "== dpkg-deb -c"; cat "$dir/contents.log"
echo "PASS: $(basename "$deb") holds the programs, the provider and its driver file, with Depends"
