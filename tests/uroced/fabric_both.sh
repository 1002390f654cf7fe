#!/usr/bin/env bash
# fabric_both.sh UROCE UROCED
# One switch model in virtual time and in real time: the same N:1 incast, lossless by PFC (with and without
# DCQCN) and by link credits, through the simulator (`uroce exp`) and through uroced between real processes
# (`uroce exp --realtime`), each with a capture read by tshark. The same outcome in both: 802.1Qbb PFC frames
# reach the senders, the receiver sees CE-marked RoCE packets and the senders get CNPs under DCQCN, nothing is
# dropped; with credits no PFC frame at all and nothing dropped (in real time the credit updates themselves are
# on the wire). Exits 77 (ctest SKIP) without tshark.
set -u
uroce=$1 uroced=$2
. "$(dirname "$0")/../lib/uroce_test_env.sh"
command -v tshark >/dev/null || { echo "SKIP: tshark not installed"; exit 77; }
uroce_exp_realtime_setup

count() { tshark -r "$1" -Y "$2" 2>/dev/null | wc -l; }
pfc='macc.opcode == 0x0101'
ce='udp.dstport == 4791 && ip.dsfield.ecn == 3'
cnp='infiniband.bth.opcode == 129'
credit='eth.type == 0x88b5'

# Virtual time. pfc-vs-dcqcn: a 16:1 incast at 100 Gb/s, PFC alone and DCQCN + PFC; credit-vs-pfc: PFC and
# link credits, no CC. Every host port captured.
"$uroce" exp pfc-vs-dcqcn --duration-us 300 --out "$dir/sim" capture=1 >"$dir/sim.txt" 2>&1 || { cat "$dir/sim.txt"; fail "sim pfc-vs-dcqcn"; }
"$uroce" exp credit-vs-pfc --duration-us 300 --out "$dir/sim" capture=1 >>"$dir/sim.txt" 2>&1 || { cat "$dir/sim.txt"; fail "sim credit-vs-pfc"; }
cat "$dir/sim.txt"
drops() { awk -v v="$1" '$1 == v { print $8 }' "$dir/sim.txt"; }
s=$dir/sim/pfc-vs-dcqcn
[ "$(count "$s/pfc-only/capture.pcap" "$pfc")" -gt 0 ] || fail "sim: no PFC frame in the capture"
[ "$(count "$s/dcqcn+pfc/capture.pcap" "$ce")" -gt 0 ] || fail "sim: no CE-marked packet under DCQCN"
[ "$(count "$s/dcqcn+pfc/capture.pcap" "$cnp")" -gt 0 ] || fail "sim: no CNP under DCQCN"
c=$dir/sim/credit-vs-pfc
cv=$(ls -d "$c"/*credit*) || fail "sim: no credit variant"
[ "$(count "$cv/capture.pcap" "$pfc")" = 0 ] || fail "sim: PFC frames with credits"
for v in pfc-only dcqcn+pfc "$(basename "$cv")"; do [ "$(drops "$v")" = 0 ] || fail "sim: $v dropped frames"; done

# Real time: 4 sender processes through a 500 Mb/s uroced port; the receiver and one sender captured.
"$uroce" exp --realtime incast --duration 2 --no-plots --out "$dir/rt" capture=1 >"$dir/rt.txt" 2>&1 || { cat "$dir/rt.txt"; fail "realtime incast"; }
"$uroce" exp --realtime incast --duration 2 --no-plots --out "$dir/rtc" capture=1 credit=64k >>"$dir/rt.txt" 2>&1 || { cat "$dir/rt.txt"; fail "realtime incast with credits"; }
cat "$dir/rt.txt"
r=$dir/rt/incast
[ "$(count "$r/pfc/sender0.pcap" "$pfc")" -gt 0 ] || fail "realtime: no PFC frame reached the sender"
[ "$(count "$r/dcqcn/receiver.pcap" "$ce")" -gt 0 ] || fail "realtime: no CE-marked packet under DCQCN"
[ "$(count "$r/dcqcn/sender0.pcap" "$cnp")" -gt 0 ] || fail "realtime: no CNP reached the sender under DCQCN"
c=$dir/rtc/incast/pfc  # credits, no CC
[ "$(count "$c/sender0.pcap" "$credit")" -gt 0 ] && [ "$(count "$c/receiver.pcap" "$credit")" -gt 0 ] ||
  fail "realtime: no credit updates on the wire"
[ "$(count "$c/sender0.pcap" "$pfc")" = 0 ] || fail "realtime: PFC frames with credits"
line=$(grep "^pfc " "$dir/rt.txt" | tail -1)
grep -q " pfc_frames 0 " <<<"$line" && grep -q " drops 0 " <<<"$line" || fail "realtime credits: $line"
grep -q " pfc_frames 0 " <<<"$(grep "^pfc " "$dir/rt.txt" | head -1)" && fail "realtime: no PFC frames without credits"
echo PASS
