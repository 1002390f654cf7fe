// uroced's egress knobs (token bucket, RED, CE marking) and its config parsing, without DPDK.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tools/uroced/config.h"
#include "tools/uroced/egress.h"
#include "transport/wire/headers.h"

namespace uroce::uroced {
namespace {

TEST(TokenBucket, EarnsAtTheRateUpToTheBurst) {
  TokenBucket tb;
  tb.configure(1'000'000'000, 10'000, 0);  // 1 Gb/s = 125 bytes/us
  EXPECT_TRUE(tb.allows(10'000));
  tb.take(10'000);
  EXPECT_FALSE(tb.allows(1));
  EXPECT_EQ(tb.ready_at(1250, 0), 10'001u);  // 1250 bytes take 10 us
  tb.refill(8'000);
  EXPECT_TRUE(tb.allows(1000));
  EXPECT_FALSE(tb.allows(1001));
  tb.refill(1'000'000'000);
  EXPECT_TRUE(tb.allows(10'000));
  EXPECT_FALSE(tb.allows(10'001));  // capped at the burst
}

TEST(TokenBucket, ZeroRateIsUnlimited) {
  TokenBucket tb;
  tb.configure(0, 0, 0);
  EXPECT_TRUE(tb.unlimited());
  EXPECT_TRUE(tb.allows(1u << 30));
}

std::vector<uint8_t> ip_frame(bool v6, bool vlan, uint8_t ecn) {
  std::vector<uint8_t> f(128, 0);
  auto* eth = reinterpret_cast<wire::EthHdr*>(f.data());
  size_t off = sizeof(wire::EthHdr);
  if (vlan) {
    eth->ether_type.set(wire::kEtherTypeVlan);
    auto* tag = reinterpret_cast<wire::VlanTag*>(f.data() + off);
    tag->tci.set(0x2005);
    tag->ether_type.set(v6 ? wire::kEtherTypeIpv6 : wire::kEtherTypeIpv4);
    off += sizeof(wire::VlanTag);
  } else {
    eth->ether_type.set(v6 ? wire::kEtherTypeIpv6 : wire::kEtherTypeIpv4);
  }
  if (v6) {
    auto* ip = reinterpret_cast<wire::Ipv6Hdr*>(f.data() + off);
    ip->ver_tc_flow.set(6u << 28 | uint32_t{0xA0u | ecn} << 20 | 0x12345);
  } else {
    auto* ip = reinterpret_cast<wire::Ipv4Hdr*>(f.data() + off);
    ip->ver_ihl = 0x46;  // with one option word: the incremental checksum must not care
    ip->tos = static_cast<uint8_t>(0xA0 | ecn);
    ip->total_len.set(100);
    ip->ttl = 3;
    ip->proto = 17;
    ip->src.set(0x0a000001);
    ip->dst.set(0x0a000002);
  }
  return f;
}

// RFC 1071 over an IPv4 header of any length: 0 when the stored checksum is right.
uint16_t header_sum(const uint8_t* h, size_t len) {
  uint32_t sum = 0;
  for (size_t i = 0; i < len; i += 2) sum += static_cast<uint32_t>(h[i] << 8 | h[i + 1]);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

TEST(MarkCe, Ipv4WithOptionsKeepsAValidChecksum) {
  for (uint8_t ecn : {1, 2}) {
    auto f = ip_frame(false, false, ecn);
    uint8_t* ip = f.data() + 14;
    const uint16_t cs = header_sum(ip, 24);
    ip[10] = static_cast<uint8_t>(cs >> 8);
    ip[11] = static_cast<uint8_t>(cs);
    ASSERT_EQ(header_sum(ip, 24), 0);
    EXPECT_EQ(mark_ce(f.data(), static_cast<uint32_t>(f.size())), EcnResult::kMarked);
    EXPECT_EQ(ip[1], 0xA3);
    EXPECT_EQ(header_sum(ip, 24), 0);
  }
}

TEST(MarkCe, Ipv6AndVlanAndTheNonMarkableCases) {
  auto f6 = ip_frame(true, true, 2);
  EXPECT_EQ(mark_ce(f6.data(), static_cast<uint32_t>(f6.size())), EcnResult::kMarked);
  const auto* ip6 = reinterpret_cast<const wire::Ipv6Hdr*>(f6.data() + 18);
  EXPECT_EQ(wire::ipv6_tclass(*ip6), 0xA3);
  EXPECT_EQ(wire::ipv6_flow_label(*ip6), 0x12345u);
  EXPECT_EQ(mark_ce(f6.data(), static_cast<uint32_t>(f6.size())), EcnResult::kAlreadyCe);
  auto n = ip_frame(false, true, 0);
  EXPECT_EQ(mark_ce(n.data(), static_cast<uint32_t>(n.size())), EcnResult::kNotEct);
  EXPECT_EQ(mark_ce(n.data(), 20), EcnResult::kNotIp);  // truncated
  std::vector<uint8_t> arp(60, 0);
  arp[12] = 0x08;
  arp[13] = 0x06;
  EXPECT_EQ(mark_ce(arp.data(), 60), EcnResult::kNotIp);
}

TEST(Config, RatesAndSizes) {
  uint64_t v = 0;
  EXPECT_TRUE(parse_rate("10g", &v));
  EXPECT_EQ(v, 10'000'000'000u);
  EXPECT_TRUE(parse_rate("1.5G", &v));
  EXPECT_EQ(v, 1'500'000'000u);
  EXPECT_TRUE(parse_rate("0", &v));
  EXPECT_EQ(v, 0u);
  EXPECT_FALSE(parse_rate("fast", &v));
  EXPECT_FALSE(parse_rate("-1g", &v));
  EXPECT_TRUE(parse_bytes("64k", &v));
  EXPECT_EQ(v, 65536u);
  EXPECT_TRUE(parse_bytes("1m", &v));
  EXPECT_EQ(v, 1u << 20);
  EXPECT_FALSE(parse_bytes("1x", &v));
}

TEST(Config, FileWithPortSectionsAndErrorsThatNameTheKey) {
  DaemonConfig dc;
  std::string err;
  ASSERT_TRUE(
      parse_config_text("# fabric\nrate = 10g\necn = 20k, 200k, 0.1\nidle_exit = 0\n"
                        "[port 127.1.0.2]\nrate = 1g\nbuffer = 2m\n",
                        "f.conf", &dc, &err))
      << err;
  EXPECT_EQ(dc.idle_exit_s, 0u);
  PortConfig pc;
  ASSERT_TRUE(port_config_for(dc, "127.1.0.2", &pc, &err)) << err;
  EXPECT_EQ(pc.rate_bps, 1'000'000'000u);
  EXPECT_EQ(pc.buffer_bytes, 2u << 20);
  EXPECT_TRUE(pc.red.enabled);
  EXPECT_EQ(pc.red.kmin, 20u << 10);
  EXPECT_DOUBLE_EQ(pc.red.pmax, 0.1);
  ASSERT_TRUE(port_config_for(dc, "127.1.0.3", &pc, &err));
  EXPECT_EQ(pc.rate_bps, 10'000'000'000u);

  DaemonConfig bad;
  EXPECT_FALSE(parse_config_text("rate = 1g\nspeed = 2\n", "f.conf", &bad, &err));
  EXPECT_NE(err.find("f.conf:2"), std::string::npos) << err;
  EXPECT_NE(err.find("'speed'"), std::string::npos) << err;
  EXPECT_FALSE(parse_config_text("ecn = 200k,20k,0.1\n", "f.conf", &bad, &err));
  EXPECT_NE(err.find("ecn"), std::string::npos) << err;
  EXPECT_FALSE(parse_config_text("[port x]\nidle_exit = 3\n", "f.conf", &bad, &err));
  EXPECT_NE(err.find("'idle_exit'"), std::string::npos) << err;
  EXPECT_FALSE(parse_config_text("ecn = 1k,2k,1.5\n", "f.conf", &bad, &err));
  EXPECT_NE(err.find("PMAX"), std::string::npos) << err;
}

TEST(Config, CommandLineOverridesAndNamesBadOptions) {
  DaemonConfig dc;
  std::string err;
  const char* ok[] = {"uroced", "--rate", "2g", "--ecn=1k,8k,1", "--idle-exit", "3", "--pause", "off"};
  ASSERT_TRUE(parse_args(8, const_cast<char**>(ok), &dc, &err)) << err;
  EXPECT_EQ(dc.defaults.rate_bps, 2'000'000'000u);
  EXPECT_EQ(dc.idle_exit_s, 3u);
  EXPECT_EQ(dc.defaults.pause_bytes, 0u);
  DaemonConfig bad;
  const char* unknown[] = {"uroced", "--speed", "3"};
  EXPECT_FALSE(parse_args(3, const_cast<char**>(unknown), &bad, &err));
  EXPECT_NE(err.find("--speed"), std::string::npos) << err;
  EXPECT_NE(err.find("'speed'"), std::string::npos) << err;
}

}  // namespace
}  // namespace uroce::uroced
