#!/usr/bin/env bash
# mckey_bare.sh UROCE UROCED [COUNT [GROUP [FLAGS]]]
# The real mckey (rdmacm-utils) between two bare `uroce run` processes, as on a host with an RNIC: a
# receiver joins multicast group GROUP (224.1.2.3 unless given) through the RDMA CM and posts COUNT receives;
# a sender joins the same group and sends COUNT UD messages to it (QPN 0xFFFFFF, the group's address
# handle). Both are ports of the host switch uroced, which floods group frames to every other port; the
# receiver's device delivers them to the QP librdmacm attached to the group (ibv_attach_mcast).
# FLAGS are given to both mckeys: "-l" joins without multicast loopback (each QP created with
# IBV_QP_CREATE_BLOCK_SELF_MCAST_LB). Passes when both exit 0 and the receiver got all COUNT messages. mckey waits 3 s after joining on each
# side ("for the SM"), so this takes ~7 s.
# Exits 77 (ctest SKIP) without mckey, or without the device nodes when not root.
set -u
uroce=$1 uroced=$2 count=${3:-10} group=${4:-224.1.2.3} flags=${5:-}
. "$(dirname "$0")/../lib/uroce_test_env.sh"
command -v mckey >/dev/null || { echo "SKIP: mckey not installed (rdmacm-utils)"; exit 77; }
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
unset UROCE_PORT
spid=
trap '[ -z "$spid" ] || kill $spid 2>/dev/null; "$uroced" --stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
fail() {
  echo "FAIL: $*"
  echo "== receiver"; cat "$dir/server.log"
  echo "== sender"; cat "$dir/client.log" 2>/dev/null
  exit 1
}

UROCE_UCMA_TRACE=1 timeout 40 "$uroce" run -- mckey -m "$group" $flags -C "$count" >"$dir/server.log" 2>&1 &
spid=$!
# Joined once it has read its join's event (librdmacm attaches its QP then): mckey's own lines come only at
# its exit (stdout to a file is buffered), the shim's trace at once.
joined=
for _ in $(seq 200); do
  awk '/JOIN_IP_MCAST \(16\) -> ok/ {j = 1} j && /GET_EVENT \(12\) -> ok/ {found = 1} END {exit !found}' \
    "$dir/server.log" 2>/dev/null && { joined=1; break; }
  kill -0 "$spid" 2>/dev/null || break
  sleep 0.1
done
[ -n "$joined" ] || fail "the receiver never joined"

timeout 30 "$uroce" run -- mckey -m "$group" -s $flags -C "$count" >"$dir/client.log" 2>&1
reap_pair $?
grep -q "^mckey: joined dgid: ::ffff:$group" "$dir/client.log" || fail "the sender's join named no group GID"
grep -q "^data transfers complete" "$dir/server.log" || fail "the receiver did not complete"
grep -q "lease" "$dir"/uroce-*/uroced.log 2>/dev/null || grep -q "lease" "$dir"/uroced.log 2>/dev/null ||
  fail "not through the host switch"
echo "== receiver"; cat "$dir/server.log"
echo "== sender"; cat "$dir/client.log"
echo "PASS: mckey joined $group on both sides and the receiver got $count messages"
