#!/usr/bin/env bash
# rping_capture.sh UROCE UROCED
# A capture of an rping run (`uroce capture` of the server process) decodes in tshark as the RDMA CM's
# exchange and the data around it: ConnectRequest, ConnectReply, ReadyToUse first, then RC traffic (SEND,
# RDMA READ and WRITE), then DisconnectRequest and DisconnectReply, with no malformed-packet or error expert
# info. Exits 77 (ctest SKIP) without rping or tshark, or without the device nodes when not root.
set -u
uroce=$1 uroced=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
command -v rping >/dev/null || { echo "SKIP: rping not installed (rdmacm-utils)"; exit 77; }
command -v tshark >/dev/null || { echo "SKIP: tshark not installed"; exit 77; }
uroce_require_setup "$uroce"
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir
unset UROCE_PORT
spid= cpid=
trap '[ -z "$spid" ] || kill $spid 2>/dev/null; [ -z "$cpid" ] || kill $cpid 2>/dev/null;
      "$uroced" --stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
port=$((20000 + ($$ + 7) % 20000))
fail() {
  echo "FAIL: $*"
  for f in server client capture decode; do echo "== $f"; cat "$dir/$f.log" 2>/dev/null; done
  exit 1
}

# No `timeout` wrapper: $spid must be rping itself (`uroce run` execs it), the process `uroce capture` names.
UROCE_UCMA_TRACE=1 "$uroce" run -- rping -s -a 127.0.0.1 -p "$port" -v -C 5 >"$dir/server.log" 2>&1 &
spid=$!
wait_for() {  # FILE PATTERN: up to 20 s
  for _ in $(seq 200); do grep -qF -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
wait_cm_listen "$dir/server.log" "$spid" || fail "the server never listened"
"$uroce" capture --pid "$spid" -w "$dir/cm.pcap" --duration 30 >"$dir/capture.log" 2>&1 &
cpid=$!
wait_for "$dir/capture.log" "-> $dir/cm.pcap" || fail "the capture never started"
timeout 30 "$uroce" run -- rping -c -a 127.0.0.1 -p "$port" -v -C 5 >"$dir/client.log" 2>&1 || fail "client failed"
wait $spid || fail "server failed"
spid=
wait $cpid  # the capture ends with the server process
cpid=
tshark -r "$dir/cm.pcap" >"$dir/decode.log" 2>/dev/null || fail "tshark could not read the capture"
cm=$(grep -o 'CM: [A-Za-z]*' "$dir/decode.log" | tr '\n' ' ')
[ "$cm" = "CM: ConnectRequest CM: ConnectReply CM: ReadyToUse CM: DisconnectRequest CM: DisconnectReply " ] ||
  fail "CM messages in the capture: '$cm'"
first=$(grep -n 'CM: ReadyToUse' "$dir/decode.log" | cut -d: -f1)
last=$(grep -n 'CM: DisconnectRequest' "$dir/decode.log" | cut -d: -f1)
data=$(sed -n "$((first + 1)),$((last - 1))p" "$dir/decode.log")
for op in "RC Send Only" "RC RDMA Read Request" "RC RDMA Read Response" "RC RDMA Write Only" "RC Acknowledge"; do
  grep -q "$op" <<<"$data" || fail "no '$op' between the connection and the disconnect"
done
experts=$(tshark -r "$dir/cm.pcap" -q -z expert 2>/dev/null | grep -iE "malformed|error" || true)
[ -z "$experts" ] || fail "tshark expert info: $experts"
echo "PASS: $(wc -l <"$dir/decode.log") frames: CM REQ/REP/RTU, RC SEND/READ/WRITE, CM DREQ/DREP; no expert errors"
