#!/usr/bin/env bash
# devinfo_caps.sh UROCE
# `ibv_devinfo -v`, the stock rdma-core tool, run under `uroce run`, must show the capabilities the verbs tests
# prove (verbs_test, verbs_ext_test): memory windows of type 1 and 2B, global atomics, ATOMIC WRITE in
# device_cap_flags_ex (bit 40, the kernel's IB_UVERBS_DEVICE_ATOMIC_WRITE; rdma-core 44's ibv_devinfo has no
# name for it and prints it as an unknown flag) and nothing else there, one port, the vendor id of a software
# device, and UD multicast's limits.
set -u
uroce=$1
command -v ibv_devinfo >/dev/null || { echo "SKIP: ibv_devinfo not installed (ibverbs-utils)"; exit 77; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$(dirname "$0")/run_under_uroce.sh" "$uroce" ibv_devinfo -v >"$out" 2>&1
rc=$?
[ "$rc" = 77 ] && exit 77
fail=0
expect() {  # expect REGEX WHAT
  if ! grep -Eq -- "$1" "$out"; then
    echo "FAIL: ibv_devinfo -v does not show $2 (/$1/)"
    fail=1
  fi
}
[ "$rc" = 0 ] || { echo "FAIL: ibv_devinfo -v exited $rc"; fail=1; }
expect '^hca_id:[[:space:]]+uroce' "the uroce device"
expect 'vendor_id:[[:space:]]+0xffffff$' "the software-device vendor id"
expect 'phys_port_cnt:[[:space:]]+1$' "one port"
expect 'atomic_cap:[[:space:]]+ATOMIC_HCA' "HCA atomics, as Soft-RoCE and a ConnectX report them"
expect '^[[:space:]]+MEM_WINDOW$' "memory windows"
expect '^[[:space:]]+MEM_WINDOW_TYPE_2B$' "type 2B memory windows"
expect 'device_cap_flags_ex:[[:space:]]+0x10000000000$' "ATOMIC WRITE (bit 40) as the only extended flag"
expect 'link_layer:[[:space:]]+Ethernet' "a RoCE port"
expect 'max_mcast_grp:[[:space:]]+8192$' "Soft-RoCE's multicast group limit (VerbsMcast.*)"
expect 'max_mcast_qp_attach:[[:space:]]+56$' "Soft-RoCE's QPs per multicast group"
expect 'max_total_mcast_qp_attach:[[:space:]]+458752$' "Soft-RoCE's multicast attachments in all"
[ "$fail" = 0 ] || { echo "--- ibv_devinfo -v:"; cat "$out"; exit 1; }
echo "ibv_devinfo -v shows the tested capabilities"
