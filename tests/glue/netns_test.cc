// af_packet and tap ports on kernel interfaces. Each test makes its own network namespace
// (uroce-test-<pid>) and runs glue_peer inside it, so no traffic and no interface touches the host's
// namespace; the namespace is deleted whatever happens. Skipped when not root or `ip netns` is missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace {

struct CmdResult {
  int status = -1;
  std::string output;
};

CmdResult run(const std::string& cmd) {
  CmdResult r;
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (f == nullptr) return r;
  std::array<char, 512> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.output.append(buf.data(), n);
  const int st = pclose(f);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

class NetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create a network namespace";
    if (run("ip netns list").status != 0) GTEST_SKIP() << "`ip netns` is not available";
    ns_ = "uroce-test-" + std::to_string(getpid());
    const CmdResult add = run("ip netns add " + ns_);
    if (add.status != 0) GTEST_SKIP() << "cannot create a network namespace: " << add.output;
    created_ = true;
    ASSERT_EQ(in_ns("ip link set lo up").status, 0);
  }
  void TearDown() override {
    if (created_) run("ip netns del " + ns_);
  }
  CmdResult in_ns(const std::string& cmd) { return run("ip netns exec " + ns_ + " " + cmd); }

  std::string ns_;
  bool created_ = false;
};

TEST_F(NetnsTest, AfPacketOverVethEverySizeBothWays) {
  // MTU 4210 (+14 bytes of Ethernet header = 4224, uroce's largest frame) on both ends.
  for (const char* cmd : {"ip link add ua type veth peer name ub", "ip link set ua mtu 4210 up",
                          "ip link set ub mtu 4210 up"}) {
    const CmdResult r = in_ns(cmd);
    ASSERT_EQ(r.status, 0) << cmd << ": " << r.output;
  }
  const CmdResult r = in_ns(std::string(GLUE_PEER) + " pair af_packet:iface=ua af_packet:iface=ub");
  std::printf("%s", r.output.c_str());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("max frame 4224"), std::string::npos) << r.output;
}

TEST_F(NetnsTest, TapAgainstAfPacketOnTheTapInterface) {
  if (!std::filesystem::exists("/dev/net/tun")) GTEST_SKIP() << "no /dev/net/tun";
  // The tap port creates ut0 in the namespace; an af_packet port on ut0 is its kernel-side peer.
  const CmdResult r = in_ns(std::string(GLUE_PEER) + " pair tap:iface=ut0 af_packet:iface=ut0");
  std::printf("%s", r.output.c_str());
  EXPECT_EQ(r.status, 0) << r.output;
}

}  // namespace
