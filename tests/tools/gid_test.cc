// IP parsing and the GID / GUID text forms the fake sysfs tree uses.
#include <gtest/gtest.h>

#include "tools/uroce/gid.h"

namespace uroce::tools {
namespace {

TEST(Gid, Ipv4IsMappedAndPrintedAsEightGroups) {
  const auto ip = parse_ip("127.1.0.1");
  ASSERT_TRUE(ip);
  EXPECT_TRUE(ip->v4);
  EXPECT_EQ(ip->text, "127.1.0.1");
  EXPECT_EQ(gid_text(ip->gid), "0000:0000:0000:0000:0000:ffff:7f01:0001");
  EXPECT_EQ(gid_text(parse_ip("192.168.10.254")->gid), "0000:0000:0000:0000:0000:ffff:c0a8:0afe");
}

TEST(Gid, Ipv6IsTheGidItself) {
  const auto ip = parse_ip("fd00::1:2");
  ASSERT_TRUE(ip);
  EXPECT_FALSE(ip->v4);
  EXPECT_EQ(gid_text(ip->gid), "fd00:0000:0000:0000:0000:0000:0001:0002");
  EXPECT_EQ(gid_text(parse_ip("fe80::0202:03ff:fe04:0506")->gid), "fe80:0000:0000:0000:0202:03ff:fe04:0506");
  EXPECT_EQ(gid_text(parse_ip("::1")->gid), "0000:0000:0000:0000:0000:0000:0000:0001");
}

TEST(Gid, CanonicalTextNamesOneDirectoryPerAddress) {
  EXPECT_EQ(parse_ip("FD00:0:0::01")->text, "fd00::1");
  EXPECT_EQ(parse_ip("::ffff:127.1.0.1")->text, "::ffff:127.1.0.1");
  EXPECT_EQ(gid_text(parse_ip("::ffff:127.1.0.1")->gid), gid_text(parse_ip("127.1.0.1")->gid));
}

TEST(Gid, RejectsWhatCannotBeAPortGid) {
  for (const char* bad : {"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "127.1.0.1 ", " 127.1.0.1", "abc", "0.0.0.0",
                          "::", "224.0.0.1", "239.255.255.255", "ff02::1", "fe80::1%eth0", "127.1.0.1/8"}) {
    EXPECT_FALSE(parse_ip(bad)) << "'" << bad << "'";
  }
}

TEST(Gid, MacAndGuidComeFromTheLastFourBytes) {
  const auto ip = parse_ip("127.1.0.1");
  const Mac mac = mac_for(*ip);
  EXPECT_EQ(mac, (Mac{0x02, 0x00, 0x7f, 0x01, 0x00, 0x01}));
  // EUI-64: ff:fe in the middle, universal/local bit of the first byte flipped (02 -> 00).
  EXPECT_EQ(guid_text(mac), "0000:7fff:fe01:0001");
  EXPECT_EQ(guid_text(mac_for(*parse_ip("fd00::a:b0c:d0e"))), "0000:0bff:fe0c:0d0e");
}

TEST(Gid, Loopback) {
  EXPECT_TRUE(is_loopback(*parse_ip("127.1.0.1")));
  EXPECT_TRUE(is_loopback(*parse_ip("::1")));
  EXPECT_FALSE(is_loopback(*parse_ip("10.0.0.1")));
  EXPECT_FALSE(is_loopback(*parse_ip("fd00::1")));
}

}  // namespace
}  // namespace uroce::tools
