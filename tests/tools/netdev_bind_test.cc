// The GID table of a device bound to a netdev (runtime/netdev.h, tools/uroce/netdev_bind.h): slots stay put
// as addresses come and go, as in rxe, and the IB MTU fits the interface's.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/netdev.h"
#include "tools/uroce/gid.h"
#include "tools/uroce/netdev_bind.h"

namespace uroce::tools {
namespace {

runtime::NetGid g(const char* ip) { return parse_ip(ip)->gid; }

TEST(NetdevGidTable, NewAddressesTakeFreeSlotsAndRemovedOnesLeaveThemEmpty) {
  std::vector<runtime::NetGid> table(4);
  table[0] = g("10.0.0.1");
  runtime::update_gid_table(table, {g("10.0.0.1"), g("fd00::1"), g("fe80::1")});
  EXPECT_EQ(table, (std::vector<runtime::NetGid>{g("10.0.0.1"), g("fd00::1"), g("fe80::1"), {}}));
  // fd00::1 goes, 10.0.0.2 comes: the others keep their indices.
  runtime::update_gid_table(table, {g("10.0.0.1"), g("10.0.0.2"), g("fe80::1")});
  EXPECT_EQ(table, (std::vector<runtime::NetGid>{g("10.0.0.1"), g("10.0.0.2"), g("fe80::1"), {}}));
  runtime::update_gid_table(table, {g("10.0.0.2")});
  EXPECT_EQ(table, (std::vector<runtime::NetGid>{{}, g("10.0.0.2"), {}, {}}));
  // More addresses than slots: the table holds what fits.
  runtime::update_gid_table(table,
                            {g("10.0.0.2"), g("10.0.0.3"), g("10.0.0.4"), g("10.0.0.5"), g("10.0.0.6")});
  EXPECT_EQ(table,
            (std::vector<runtime::NetGid>{g("10.0.0.3"), g("10.0.0.2"), g("10.0.0.4"), g("10.0.0.5")}));
}

TEST(NetdevGidTable, Ipv4GidsAreTheMappedOnes) {
  EXPECT_TRUE(runtime::is_ipv4_gid(g("192.0.2.1")));
  EXPECT_FALSE(runtime::is_ipv4_gid(g("fd00::1")));
}

TEST(NetdevGidTable, IbMtuFitsTheInterface) {
  EXPECT_EQ(ib_mtu_for(1500), 1024u);
  EXPECT_EQ(ib_mtu_for(4200), 4096u);
  EXPECT_EQ(ib_mtu_for(9000), 4096u);
  EXPECT_EQ(ib_mtu_for(2048 + 84), 2048u);
  EXPECT_EQ(ib_mtu_for(2048 + 83), 1024u);
  EXPECT_EQ(ib_mtu_for(300), 0u);
}

TEST(NetdevGidTable, LoopbackIsNotAnEthernetInterface) {
  runtime::NetdevInfo info;
  std::string err;
  EXPECT_FALSE(runtime::read_netdev("lo", &info, &err));
  EXPECT_NE(err.find("not an Ethernet"), std::string::npos) << err;
  EXPECT_FALSE(runtime::read_netdev("no-such-if0", &info, &err));
  EXPECT_NE(err.find("no network interface"), std::string::npos) << err;
}

}  // namespace
}  // namespace uroce::tools
