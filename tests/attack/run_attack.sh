#!/usr/bin/env bash
# run_attack.sh UROCE VICTIM CASE...
# Creates two network namespaces joined by a veth pair: the victim's (vv, where `uroce run` puts the uroce
# device on DPDK's af_packet PMD) and the attacker's (va, where attack.py sends and sniffs frames with a raw
# packet socket). No kernel addresses and no IPv6 on either end, so the only frames on the link are the
# test's. The namespaces are deleted whatever happens. Exits 77 (ctest SKIP) when not root, `ip netns` is
# unavailable, Debian's scapy is missing, or the uroce device nodes are missing.
set -u
uroce=$1 victim=$2
shift 2
here=$(dirname "$(readlink -f "$0")")
. "$here/../lib/uroce_test_env.sh"
if [ "$(id -u)" != 0 ]; then echo "SKIP: network namespaces need root"; exit 77; fi
if ! ip netns list >/dev/null 2>&1; then echo "SKIP: 'ip netns' is not available"; exit 77; fi
if ! /usr/bin/python3 -c 'import scapy.contrib.roce' 2>/dev/null; then
  echo "SKIP: /usr/bin/python3 has no scapy (apt-get install python3-scapy)"; exit 77
fi
uroce_require_setup "$uroce"

dir=$(mktemp -d)
v=uroce-atk$$-v a=uroce-atk$$-a
cleanup() {
  ip netns del "$v" 2>/dev/null
  ip netns del "$a" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
ip netns add "$v" && ip netns add "$a" || exit 1
for ns in "$v" "$a"; do
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 || exit 1
done
ip link add vv netns "$v" type veth peer name va netns "$a" || exit 1
ip -n "$v" link set vv mtu 4200 up && ip -n "$a" link set va mtu 4200 promisc on up || exit 1
export XDG_RUNTIME_DIR=$dir
ip netns exec "$a" timeout 55 /usr/bin/python3 "$here/attack.py" --uroce "$uroce" --victim "$victim" \
  --victim-ns "$v" --victim-if vv --iface va "$@"
