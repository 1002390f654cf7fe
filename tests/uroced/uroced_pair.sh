#!/usr/bin/env bash
# uroced_pair.sh UROCE UROCED TCP_PORT -- COMMAND ARGS...
# Runs an unmodified verbs program as a server and a client in two processes, both through the host switch
# uroced: each `uroce run --port uroced` gets its own address lease (GID) and memif port from uroced, which
# the first of them starts on demand. The client reaches the server's out-of-band TCP port on 127.0.0.1.
# Both must exit 0; afterwards uroced must have forwarded frames both ways and dropped none.
# With UROCE_MEMIF_DRIVER=uroce both processes must have run on uroce's own memif client.
# Exits 77 (ctest SKIP) when the uroce device nodes are missing and this is not root.
set -u
uroce=$1 uroced=$2 tcp=$3
shift 4
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir UROCE_STATS_ON_EXIT=1
trap 'kill $spid 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; sleep 0.2; rm -rf "$dir"' EXIT
timeout 60 "$uroce" run --port uroced -- "$@" -p "$tcp" >"$dir/server.log" 2>&1 &
spid=$!
wait_listen "$tcp"  # uroced start (first use), the server's EAL and its TCP listener
timeout 60 "$uroce" run --port uroced -- "$@" -p "$tcp" 127.0.0.1 >"$dir/client.log" 2>&1
crc=$?
wait $spid
src=$?
echo "== server (rc $src)"; cat "$dir/server.log"
echo "== client (rc $crc)"; cat "$dir/client.log"
for _ in $(seq 30); do [ "$(grep -c "release 127.1.0" "$dir"/uroce-*/uroced.log)" = 2 ] && break; sleep 0.1; done
echo "== uroced"; "$uroced" --stats; cat "$dir"/uroce-*/uroced.log
[ $src = 0 ] && [ $crc = 0 ] || exit 1
# UROCE_MEMIF_DRIVER=uroce: both processes ran on uroce's own memif client, not DPDK's PMD.
if [ "${UROCE_MEMIF_DRIVER:-}" = uroce ]; then
  for f in server client; do
    grep -q "stats:.* port_driver=uroce" "$dir/$f.log" || { echo "FAIL: the $f did not run on driver=uroce"; exit 1; }
  done
fi
# Both leases were released when their processes exited; the log shows what each port moved.
grep -c "release 127.1.0" "$dir"/uroce-*/uroced.log | grep -qx 2 || { echo "FAIL: leases not released"; exit 1; }
if grep "release 127.1.0" "$dir"/uroce-*/uroced.log | grep -q "rx_frames=0 "; then
  echo "FAIL: a port forwarded nothing"; exit 1
fi
# Dropped none: every drop counter of both ports is zero.
if grep "release 127.1.0" "$dir"/uroce-*/uroced.log | grep -oE "drop_[a-z_]+=[0-9]+" | grep -v "=0$"; then
  echo "FAIL: uroced dropped frames"; exit 1
fi
