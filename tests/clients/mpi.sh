#!/usr/bin/env bash
# mpi.sh UROCE UROCED NP PROGRAM
# Open MPI over UCX over uroce: mpirun starts NP ranks, each under `uroce run --port uroced`, with the UCX PML
# and one-sided component required (--mca pml ucx --mca osc ucx) and UCX restricted to uroce's verbs transports, so the ranks can only talk through
# uroce. Open MPI's pml ucx accepts only mlx* devices unless told otherwise (pml_ucx_devices/tls = any). The
# program checks its own data and exits non-zero on any wrong byte.
set -u
uroce=$1 uroced=$2 np=$3 prog=$4
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
command -v mpirun >/dev/null || { echo "FAIL: mpirun missing (Debian package openmpi-bin)"; exit 1; }
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
trap '"$uroced" --stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
timeout 100 mpirun --allow-run-as-root --oversubscribe -np "$np" --mca pml ucx --mca osc ucx \
  -x XDG_RUNTIME_DIR -x UCX_NET_DEVICES=uroce0:1 -x UCX_TLS=rc_verbs,ud_verbs \
  -x OMPI_MCA_pml_ucx_devices=any -x OMPI_MCA_pml_ucx_tls=any \
  "$uroce" run --port uroced -- "$prog" >"$dir/mpi.log" 2>&1
rc=$?
cat "$dir/mpi.log"
[ $rc = 0 ] || { echo "FAIL: mpirun exited $rc"; exit 1; }
grep -q "allreduce over $np ranks checked" "$dir/mpi.log" || { echo "FAIL: no checked allreduce"; exit 1; }
grep -q "one-sided put, fetch-and-add and compare-and-swap over $np ranks checked" "$dir/mpi.log" ||
  { echo "FAIL: no checked one-sided operations"; exit 1; }
[ "$(grep -c 'exchanges of 1048576 bytes, data checked' "$dir/mpi.log")" = 2 ] || { echo "FAIL: exchange"; exit 1; }
if grep -E 'UCX +(WARN|ERROR)' "$dir/mpi.log"; then echo "FAIL: UCX warned"; exit 1; fi
echo "PASS: Open MPI over UCX over uroce, $np ranks"
