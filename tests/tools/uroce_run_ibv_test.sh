#!/usr/bin/env bash
# uroce_run_ibv_test.sh TOOL UROCE PROVIDER_LIB
# Runs an unmodified rdma-core tool through `uroce run` (default device uroce0, IP 127.1.0.1) and checks
# what it reports:
#   ibv_devices: uroce0 with the node GUID derived from the IP (MAC 02:00:7f:01:00:01 -> EUI-64)
#   ibv_devinfo: uroce0, port 1 PORT_ACTIVE / LINK_UP, link_layer Ethernet, GID[0] = RoCE v2 GID of the IP
# Exits 77 (ctest SKIP) when the provider is not built yet. Needs no device node (no `uroce setup`).
set -u
tool=$1 uroce=$2 provider=$3

. "$(dirname "$0")/../lib/uroce_test_env.sh"
if ! command -v "$tool" >/dev/null; then echo "SKIP: $tool not installed (ibverbs-utils)"; exit 77; fi
uroce_scratch_env "$provider"  # no device node needed: the shim stands in for it
export UROCE_PORT=loopback  # one process: the in-process port (the host switch has its own tests)

case $tool in
  ibv_devinfo) args=(-v -d uroce0) ;;
  *) args=() ;;
esac
out=$(timeout 30 "$uroce" run -- "$tool" "${args[@]}" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ $rc != 0 ]; then echo "FAIL: uroce run -- $tool exited $rc"; exit 1; fi

fail=0
expect() {
  if ! grep -Eq -- "$1" <<<"$out"; then echo "FAIL: no line matches /$1/"; fail=1; fi
}
case $tool in
  ibv_devices)
    expect '^[[:space:]]+uroce0[[:space:]]+00007ffffe010001$'
    ;;
  ibv_devinfo)
    expect '^hca_id:[[:space:]]+uroce0$'
    expect '^[[:space:]]+node_guid:[[:space:]]+0000:7fff:fe01:0001$'
    expect '^[[:space:]]+state:[[:space:]]+PORT_ACTIVE \(4\)$'
    expect '^[[:space:]]+phys_state:[[:space:]]+LINK_UP \(5\)$'
    expect '^[[:space:]]+link_layer:[[:space:]]+Ethernet$'
    expect '^[[:space:]]+GID\[  0\]:[[:space:]]+(::ffff:127\.1\.0\.1|0000:0000:0000:0000:0000:ffff:7f01:0001), RoCE v2$'
    ;;
esac
exit $fail
