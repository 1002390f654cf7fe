// ns-3 HPCC file formats and the workload generator (tools/exp/ns3.h).
#include "tools/exp/ns3.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace uroce::exp::ns3 {
namespace {

TEST(Ns3Units, RatesAndDelaysAsNs3WritesThem) {
  EXPECT_EQ(parse_rate("100Gbps"), 100'000'000'000u);
  EXPECT_EQ(parse_rate("25Gbps"), 25'000'000'000u);
  EXPECT_EQ(parse_rate("50Mb/s"), 50'000'000u);
  EXPECT_EQ(parse_rate("10G"), 10'000'000'000u);
  EXPECT_EQ(parse_delay("0.001ms"), 1000u);
  EXPECT_EQ(parse_delay("1000ns"), 1000u);
  EXPECT_EQ(parse_delay("1us"), 1000u);
  EXPECT_THROW(parse_rate("100Gbit"), std::invalid_argument);
  EXPECT_THROW(parse_delay("5"), std::invalid_argument);
  EXPECT_EQ(node_ip(0), 0x0b000001u);
  EXPECT_EQ(node_ip(300), 0x0b012c01u);
}

TEST(Ns3Cdf, BuiltInDistributionsHaveThePublishedMeans) {
  // traffic_gen's CustomRand.getAvg: trapezoids between the points.
  EXPECT_NEAR(read_cdf("websearch").mean(), 1711250, 1);
  const Cdf fb = read_cdf("fb_hadoop");
  EXPECT_GT(fb.mean(), 100000);
  EXPECT_DOUBLE_EQ(fb.sample(0), 0);
  EXPECT_DOUBLE_EQ(fb.sample(1), 10000000);
  EXPECT_DOUBLE_EQ(read_cdf("websearch").sample(0.15), 10000);  // a point of the table
}

TEST(Ns3Generator, OfferedLoadMatchesTheTargetAndOneSeedIsOneTrace) {
  const Cdf c = read_cdf("fb_hadoop");
  GenOptions o;
  o.hosts = 32;
  o.load = 0.5;
  o.bandwidth_bps = 100'000'000'000;
  o.seconds = 0.2;
  o.seed = 11;
  const std::vector<FlowLine> a = generate_flows(c, o);
  uint64_t bytes = 0;
  for (const FlowLine& f : a) {
    bytes += f.bytes;
    EXPECT_NE(f.src, f.dst);
    EXPECT_LT(f.dst, o.hosts);
    EXPECT_GE(f.start_s, 2.0);
    EXPECT_LE(f.start_s, 2.2);
  }
  const double offered = static_cast<double>(bytes) * 8 / (o.hosts * 100e9 * o.seconds);
  EXPECT_NEAR(offered, 0.5, 0.1) << a.size() << " flows";
  const std::vector<FlowLine> b = generate_flows(c, o);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].bytes, b[i].bytes);
  o.seed = 12;
  EXPECT_NE(generate_flows(c, o).size(), a.size());
}

TEST(Ns3Topology, FatTreeAndLeafSpineShapes) {
  const Topology f = fat_tree(4, 100'000'000'000, 1000);
  EXPECT_EQ(f.nodes, 36u);
  EXPECT_EQ(f.links.size(), 48u);  // 16 host links, 16 edge-agg, 16 agg-core
  std::vector<int> degree(f.nodes, 0);
  for (const TopoLink& l : f.links) {
    ++degree[l.a];
    ++degree[l.b];
  }
  for (uint32_t n = 0; n < 16; ++n) EXPECT_EQ(degree[n], 1) << "host " << n;
  for (uint32_t n = 16; n < 36; ++n) EXPECT_EQ(degree[n], 4) << "switch " << n;  // k ports each
  const Topology l = leaf_spine(4, 2, 8, 100'000'000'000, 100'000'000'000, 1000);
  EXPECT_EQ(l.nodes, 38u);
  EXPECT_EQ(l.links.size(), 32u + 8u);
  EXPECT_THROW(fat_tree(3, 1, 1), std::invalid_argument);
}

}  // namespace
}  // namespace uroce::exp::ns3
