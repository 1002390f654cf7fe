#!/usr/bin/env bash
# fi_host.sh UROCE UROCED
# libfabric's verbs provider between two bare `uroce run` processes on one host, through its host switch:
# fi_info lists a FI_EP_MSG endpoint and fi_pingpong (-c: data checked) runs over MSG endpoints (verbs), over
# RDM endpoints on RC (verbs;ofi_rxm) and on UD (verbs;ofi_rxd), and over DGRAM endpoints (verbs, UD: messages
# up to the MTU), the client naming the host's interface address. libfabric finds RDMA
# devices through the non-loopback interface addresses, so this runs in a network namespace this script
# creates, whose interface (one end of a veth pair) has 10.215.0.1 and which has its own uroced; nothing
# leaves it. The namespace is deleted whatever happens.
# Exits 77 when not root, without `ip netns`, or without libfabric-bin.
set -u
uroce=$1 uroced=$2
if [ "$(id -u)" != 0 ]; then echo "SKIP: network namespaces need root"; exit 77; fi
if ! ip netns list >/dev/null 2>&1; then echo "SKIP: 'ip netns' is not available"; exit 77; fi
command -v fi_pingpong >/dev/null || { echo "SKIP: fi_pingpong not installed (libfabric-bin)"; exit 77; }
. "$(dirname "$0")/../lib/uroce_test_env.sh"
uroce_require_setup "$uroce"
ns=uroce-f$$
dir=$(mktemp -d)
spid=
cleanup() {
  [ -z "$spid" ] || kill "$spid" 2>/dev/null
  ip netns exec "$ns" env XDG_RUNTIME_DIR="$dir" "$uroced" --stop >/dev/null 2>&1
  ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null
  ip netns del "$ns" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
ip netns add "$ns" || exit 1
ip -n "$ns" link set lo up && ip -n "$ns" link add f0 type veth peer name f1 &&
  ip -n "$ns" addr add 10.215.0.1/24 dev f0 && ip -n "$ns" link set f1 up && ip -n "$ns" link set f0 up || exit 1
run() {  # SECONDS COMMAND...: COMMAND under `uroce run` in the namespace, bounded in time
  local t=$1
  shift
  timeout "$t" ip netns exec "$ns" env -u UROCE_PORT XDG_RUNTIME_DIR="$dir" "$uroce" run -- "$@"
}
fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do echo "== $f"; cat "$f"; done
  exit 1
}

run 30 fi_info -p verbs -t FI_EP_MSG >"$dir/fi_info.log" 2>&1 || fail "fi_info exited $?"
grep -q "type: FI_EP_MSG" "$dir/fi_info.log" && grep -q "domain: uroce0" "$dir/fi_info.log" ||
  fail "fi_info listed no FI_EP_MSG endpoint on uroce0"
port=47601
for prov in "verbs msg 1m" "verbs;ofi_rxm rdm 1m" "verbs;ofi_rxd rdm 1m" "verbs dgram 4k"; do
  set -- $prov
  run 60 fi_pingpong -p "$1" -e "$2" -I 50 -c -B "$port" >"$dir/server.log" 2>&1 &
  spid=$!
  netns_wait_listen "$ns" "$port" "$spid" || fail "fi_pingpong -p $1 server never listened"
  run 60 fi_pingpong -p "$1" -e "$2" -I 50 -c -P "$port" 10.215.0.1 >"$dir/client.log" 2>&1 ||
    fail "fi_pingpong -p $1 client exited $?"
  wait "$spid" || fail "fi_pingpong -p $1 server exited $?"
  spid=
  grep -Eq "^$3 +50 +=50 " "$dir/client.log" || fail "fi_pingpong -p $1 -e $2 did not reach $3"
  echo "== fi_pingpong -p $1 -e $2"; cat "$dir/client.log"
  port=$((port + 1))
done
grep -q "lease" "$dir"/uroce-*/uroced.log 2>/dev/null || grep -q "lease" "$dir"/uroced.log 2>/dev/null ||
  fail "not through the host switch"
echo "PASS: libfabric verbs (msg, rxm, rxd and dgram) between two bare uroce run processes through the host switch"
