#!/usr/bin/env bash
# provider_env_test.sh UROCE PROVIDER_LIB
# Outside `uroce run` (the environment from `uroce env`, as a shell would have it), a bad value of each
# variable the provider, its DPDK layer or the shim reads makes the device open fail with a line naming the
# variable: ibv_devinfo exits non-zero and says NAME=VALUE. The variables come from `uroce env --list`.
# Exits 77 (ctest SKIP) without the provider or ibv_devinfo; needs no device node (the shim stands in).
set -u
uroce=$1 provider=$2

. "$(dirname "$0")/../lib/uroce_test_env.sh"
if ! command -v ibv_devinfo >/dev/null; then echo "SKIP: ibv_devinfo not installed (ibverbs-utils)"; exit 77; fi
uroce_scratch_env "$provider"  # no device node needed: the shim stands in for it
export UROCE_PORT=loopback  # no DPDK port: the check must not depend on one being opened
eval "$("$uroce" env 2>/dev/null)" || { echo "FAIL: uroce env failed"; exit 1; }

out=$(timeout 30 ibv_devinfo -d uroce0 2>&1) || { echo "FAIL: ibv_devinfo fails with good values: $out"; exit 1; }

fail=0 n=0
# `uroce env --list`: "NAME KIND... doc" then "    values: ...; default: ...; read by: READERS".
while read -r name kind rest && read -r details; do
  case $details in *"read by: "*provider* | *"read by: "*pmd_glue* | *"read by: "*shim*) ;; *) continue ;; esac
  case "$kind ${rest%% *}" in
    "flag "*) bad=yes ;;
    "number "*) bad=abc ;;
    "choice "*) bad=bogus ;;
    "device "*) bad=uroce9 ;;
    "cc name") bad=no_such_cc ;;
    "cc params") bad=no_such_param=1 ;;
    "port "*) bad=memif:role=sideways ;;
    *) continue ;;  # path, text: every value is accepted
  esac
  [ "$name" = UROCE_DEV ] && continue  # the device name itself: libibverbs opens uroce0 by the sysfs tree
  n=$((n + 1))
  out=$(env "$name=$bad" timeout 30 ibv_devinfo -d uroce0 2>&1)
  rc=$?
  if [ $rc = 0 ] || ! grep -qF "$name=$bad" <<<"$out"; then
    echo "FAIL: $name=$bad: ibv_devinfo exited $rc without naming it:"
    printf '%s\n' "$out" | head -5
    fail=1
  fi
done < <("$uroce" env --list)
((n >= 8)) || { echo "FAIL: only $n variables checked: is 'uroce env --list' still two lines per variable?"; exit 1; }
((fail == 0)) && echo "a bad value of each of the $n variables the provider side reads fails the device open, naming it"
exit $fail
