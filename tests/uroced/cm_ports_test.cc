// The host's RDMA CM port spaces as uroced keeps them: bind conflicts as the kernel's, ephemeral ports,
// listener lookup by destination, and everything of a process gone with it.
#include <gtest/gtest.h>

#include <cerrno>
#include <set>

#include "tools/uroced/cm_ports.h"

namespace uroce::uroced {
namespace {

constexpr uint32_t kA = 0x7F010001, kB = 0x7F010002;  // two leases' addresses
constexpr uint32_t kLo = 0x7F000001, kAny = 0;
constexpr pid_t kPa = 100, kPb = 200;

bool lease(uint32_t ip) { return ip == kA || ip == kB; }

TEST(CmPorts, SamePortConflictsAcrossProcesses) {
  CmPorts p(32768, 60999, 1, lease);
  uint16_t got = 0;
  EXPECT_EQ(p.bind(kPa, kA, kPsTcp, kLo, 7174, false, &got), 0);
  EXPECT_EQ(got, 7174);
  EXPECT_EQ(p.bind(kPb, kB, kPsTcp, kLo, 7174, false, &got), EADDRINUSE);
  EXPECT_EQ(p.bind(kPb, kB, kPsTcp, 0x7F000002, 7174, false, &got), EADDRINUSE) << "all of 127/8 is one";
  EXPECT_EQ(p.bind(kPb, kB, kPsTcp, kAny, 7174, false, &got), EADDRINUSE) << "wildcard covers loopback";
  EXPECT_EQ(p.bind(kPb, kB, kPsTcp, kB, 7174, false, &got), 0) << "another address is another binding";
  EXPECT_EQ(p.bind(kPb, kB, kPsUdp, kLo, 7174, false, &got), 0) << "port spaces are separate";
  EXPECT_EQ(p.bind(kPb, kB, 0x0999, kLo, 1, false, &got), EINVAL);
  EXPECT_EQ(p.bind(kPb, kB, kPsTcp, kA, 9000, false, &got), EADDRNOTAVAIL) << "another lease's address";
}

TEST(CmPorts, ReuseSharesUntilOneListens) {
  CmPorts p(32768, 60999, 1, lease);
  uint16_t got = 0;
  ASSERT_EQ(p.bind(kPa, kA, kPsTcp, kAny, 5000, true, &got), 0);
  ASSERT_EQ(p.bind(kPb, kB, kPsTcp, kAny, 5000, true, &got), 0);
  EXPECT_EQ(p.listen(kPa, kPsTcp, kAny, 5000), EADDRINUSE);
  ASSERT_EQ(p.unbind(kPb, kPsTcp, kAny, 5000), 0);
  EXPECT_EQ(p.listen(kPa, kPsTcp, kAny, 5000), 0);
  EXPECT_EQ(p.bind(kPb, kB, kPsTcp, kAny, 5000, true, &got), EADDRINUSE) << "a listener's port is its own";
  EXPECT_EQ(p.listen(kPb, kPsTcp, kAny, 5000), ENOENT);
}

TEST(CmPorts, EphemeralPortsAreFreeAndInRange) {
  CmPorts p(40000, 40063, 7, lease);
  std::set<uint16_t> seen;
  for (int i = 0; i < 64; ++i) {
    uint16_t got = 0;
    ASSERT_EQ(p.bind(i % 2 ? kPa : kPb, i % 2 ? kA : kB, kPsTcp, kAny, 0, false, &got), 0);
    EXPECT_GE(got, 40000);
    EXPECT_LE(got, 40063);
    seen.insert(got);
  }
  EXPECT_EQ(seen.size(), 64u);
  uint16_t got = 0;
  EXPECT_EQ(p.bind(kPa, kA, kPsTcp, kAny, 0, false, &got), EADDRINUSE) << "range exhausted";
}

TEST(CmPorts, LookupFindsTheListenerForTheDestination) {
  CmPorts p(32768, 60999, 1, lease);
  uint16_t got = 0;
  CmPorts::Listener l;
  ASSERT_EQ(p.bind(kPa, kA, kPsTcp, kAny, 7174, false, &got), 0);
  EXPECT_FALSE(p.lookup(kPsTcp, kLo, 7174, &l)) << "bound, not listening";
  ASSERT_EQ(p.listen(kPa, kPsTcp, kAny, 7174), 0);
  ASSERT_TRUE(p.lookup(kPsTcp, 0x7F000001, 7174, &l));
  EXPECT_EQ(l.pid, kPa);
  EXPECT_EQ(l.own_ip, kA);
  ASSERT_TRUE(p.lookup(kPsTcp, kA, 7174, &l)) << "its own address";
  EXPECT_FALSE(p.lookup(kPsTcp, kB, 7174, &l)) << "another process's address";
  EXPECT_FALSE(p.lookup(kPsUdp, kLo, 7174, &l));
  EXPECT_FALSE(p.lookup(kPsTcp, kLo, 7175, &l));
  // An exact binding wins over the wildcard.
  ASSERT_EQ(p.bind(kPb, kB, kPsTcp, kB, 7174, false, &got), 0);
  ASSERT_EQ(p.listen(kPb, kPsTcp, kB, 7174), 0);
  ASSERT_TRUE(p.lookup(kPsTcp, kB, 7174, &l));
  EXPECT_EQ(l.pid, kPb);
}

TEST(CmPorts, ReleaseDropsEverythingOfTheProcess) {
  CmPorts p(32768, 60999, 1, lease);
  uint16_t got = 0;
  CmPorts::Listener l;
  ASSERT_EQ(p.bind(kPa, kA, kPsTcp, kLo, 7174, false, &got), 0);
  ASSERT_EQ(p.listen(kPa, kPsTcp, kLo, 7174), 0);
  ASSERT_EQ(p.bind(kPa, kA, kPsUdp, kAny, 0, false, &got), 0);
  ASSERT_EQ(p.bind(kPb, kB, kPsTcp, kB, 7000, false, &got), 0);
  p.release(kPa);
  EXPECT_EQ(p.size(), 1u);
  EXPECT_FALSE(p.lookup(kPsTcp, kLo, 7174, &l));
  EXPECT_EQ(p.bind(kPb, kB, kPsTcp, kLo, 7174, false, &got), 0);
}

}  // namespace
}  // namespace uroce::uroced
