#!/usr/bin/env bash
# kill_peer.sh UROCE
# Kills the server of an ib_write_bw pair (memif) mid-transfer: the client must fail with
# IBV_WC_RETRY_EXC_ERR (status 12) within the transport timeout (perftest: 4.096 us * 2^14 * 8 tries ~ 0.54 s),
# not hang.
set -u
uroce=$1
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
trap 'kill -9 $spid $cpid 2>/dev/null; rm -rf "$dir"' EXIT
args=(ib_write_bw -d uroce0 -x 0 -F -D 20 -p 18691)
UROCE_PORT="memif:socket=$dir/m.sock,role=server" "$uroce" run --ip 127.1.0.1 -- "${args[@]}" >"$dir/srv.log" 2>&1 &
spid=$!
for _ in $(seq 50); do [ -S "$dir/m.sock" ] && break; sleep 0.1; done
sleep 0.3
UROCE_PORT="memif:socket=$dir/m.sock,role=client" "$uroce" run --ip 127.1.0.2 -- "${args[@]}" 127.0.0.1 \
  >"$dir/cli.log" 2>&1 &
cpid=$!
sleep 3  # mid-transfer
kill -9 $spid
t0=$(date +%s%N)
for _ in $(seq 100); do kill -0 $cpid 2>/dev/null || break; sleep 0.1; done
t1=$(date +%s%N)
cat "$dir/cli.log"
if kill -0 $cpid 2>/dev/null; then echo "FAIL: client still running 10 s after its peer died"; exit 1; fi
echo "client gave up $(( (t1 - t0) / 1000000 )) ms after the kill"
grep -q "Failed status 12" "$dir/cli.log" || { echo "FAIL: no IBV_WC_RETRY_EXC_ERR (12) completion"; exit 1; }
