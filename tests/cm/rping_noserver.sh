#!/usr/bin/env bash
# rping_noserver.sh UROCE UROCED
# An rping client with nothing listening, through the host switch (bare `uroce run`) and on the in-process
# port (UROCE_PORT=loopback): as with a kernel CM's REJ 8 (invalid service ID), it must get
# RDMA_CM_EVENT_REJECTED with status 8 and exit non-zero, not wait for the REQ's ~98 s of retries (which
# would end in UNREACHABLE; the client is bounded at 10 s). The time from the client's last ucma command
# before it connects (INIT_QP_ATTR, as rdma_create_qp asks it; the trace prints CONNECT only once it
# returns, after the event may be out) to the REJECTED event it prints is measured from each output line's
# stamp and printed, not asserted.
set -u
uroce=$1 uroced=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
command -v rping >/dev/null || { echo "SKIP: rping not installed (rdmacm-utils)"; exit 77; }
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
trap '"$uroced" --stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
port=$((20000 + $$ % 20000))
for mode in uroced loopback; do
  if [ $mode = uroced ]; then unset UROCE_PORT; else export UROCE_PORT=loopback; fi
  start=$(date +%s%N)
  out=$(set -o pipefail; UROCE_UCMA_TRACE=1 timeout 10 "$uroce" run -- rping -c -a 127.0.0.1 -p "$port" -v -C 1 2>&1 |
    while IFS= read -r l; do printf '%s %s\n' "${EPOCHREALTIME/./}" "$l"; done)
  rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  printf -- '--- %s: exit %s after %s ms\n%s\n' "$mode" "$rc" "$ms" "$out"
  [ $rc != 124 ] || { echo "FAIL: $mode: the client hung"; exit 1; }
  [ $rc != 0 ] || { echo "FAIL: $mode: the client succeeded with no server"; exit 1; }
  grep -q "RDMA_CM_EVENT_REJECTED, error 8" <<<"$out" || { echo "FAIL: $mode: no REJECTED 8"; exit 1; }
  rej_ms=$(awk '/ INIT_QP_ATTR \(11\) -> ok/ { t = $1 }
                /RDMA_CM_EVENT_REJECTED, error 8/ { if (t) print int(($1 - t) / 1000); exit }' <<<"$out")
  [ -n "$rej_ms" ] || { echo "FAIL: $mode: no INIT_QP_ATTR before the REJECTED line"; exit 1; }
  echo "--- $mode: CONNECT to REJECTED: $rej_ms ms"
done
echo "PASS: no listener is REJECTED 8 at once"
