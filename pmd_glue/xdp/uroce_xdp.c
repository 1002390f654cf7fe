// XDP program for the af_xdp port (pmd_glue/dpdk_spec.h, af_xdp:iface=X): RoCE v2 frames (UDP destination
// port 4791 over IPv4 or IPv6, untagged or with one 802.1Q tag) go to the AF_XDP socket of the receiving
// queue; every other frame goes on to the kernel (XDP_PASS), so ARP, ND, TCP and the rest of the host's
// traffic are untouched and the kernel never sees a RoCE frame. DPDK's af_xdp PMD loads it (devarg xdp_prog=)
// and puts its socket into the map that must be called xsks_map. Built with clang -target bpf
// (pmd_glue/CMakeLists.txt).
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define ROCE_V2_PORT 4791
#define MAX_QUEUES 64

struct vlan_hdr {
  __be16 tci;
  __be16 proto;
};

struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP);
  __uint(max_entries, MAX_QUEUES);
  __type(key, __u32);
  __type(value, __u32);
} xsks_map SEC(".maps");

// Counts what the program decided, for tests and `bpftool map dump`: [0] frames steered to uroce, [1] passed.
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 2);
  __type(key, __u32);
  __type(value, __u64);
} uroce_xdp_stats SEC(".maps");

static __always_inline void count(__u32 which) {
  __u64* n = bpf_map_lookup_elem(&uroce_xdp_stats, &which);
  if (n) __sync_fetch_and_add(n, 1);
}

static __always_inline int is_roce(void* data, void* end) {
  struct ethhdr* eth = data;
  if ((void*)(eth + 1) > end) return 0;
  __u16 proto = eth->h_proto;
  void* l3 = eth + 1;
  if (proto == bpf_htons(ETH_P_8021Q)) {
    struct vlan_hdr* vlan = l3;
    if ((void*)(vlan + 1) > end) return 0;
    proto = vlan->proto;
    l3 = vlan + 1;
  }
  struct udphdr* udp;
  if (proto == bpf_htons(ETH_P_IP)) {
    struct iphdr* ip = l3;
    if ((void*)(ip + 1) > end || ip->protocol != IPPROTO_UDP || ip->ihl < 5) return 0;
    udp = (void*)ip + ip->ihl * 4;
  } else if (proto == bpf_htons(ETH_P_IPV6)) {
    struct ipv6hdr* ip6 = l3;
    if ((void*)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP) return 0;
    udp = (void*)(ip6 + 1);
  } else {
    return 0;
  }
  if ((void*)(udp + 1) > end) return 0;
  return udp->dest == bpf_htons(ROCE_V2_PORT);
}

SEC("xdp")
int uroce_xdp(struct xdp_md* ctx) {
  void* data = (void*)(long)ctx->data;
  void* end = (void*)(long)ctx->data_end;
  if (!is_roce(data, end)) {
    count(1);
    return XDP_PASS;
  }
  count(0);
  // No socket on this queue: the frame is uroce's, still not the kernel's.
  return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_DROP);
}

char _license[] SEC("license") = "Dual BSD/GPL";
