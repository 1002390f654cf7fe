// The fake sysfs tree: what libibverbs 44 needs in it, and that rewriting it is atomic and idempotent.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>
#include <set>

#include "tests/tools/process.h"
#include "tools/uroce/layout.h"
#include "tools/uroce/sysfs_tree.h"
#include "transport/counters.h"

namespace uroce::tools {
namespace {
namespace fs = std::filesystem;
using test::read_text;
using test::TempDir;

DeviceSpec spec(const char* ip = "127.1.0.1", unsigned index = 0) {
  DeviceSpec s;
  s.name = "uroce" + std::to_string(index);
  s.index = index;
  s.ip = *parse_ip(ip);
  s.ndev = "lo";
  s.node_desc = "host uroce" + std::to_string(index);
  return s;
}

std::map<std::string, std::string> as_map(const std::vector<TreeFile>& files) {
  std::map<std::string, std::string> m;
  for (const auto& f : files) EXPECT_TRUE(m.emplace(f.path, f.content).second) << "duplicate " << f.path;
  return m;
}

TEST(SysfsTree, UverbsDirectoryPointsAtTheDeviceNode) {
  auto m = as_map(sysfs_files(spec("127.1.0.1", 2)));
  EXPECT_EQ(m["class/infiniband_verbs/abi_version"], "6\n");
  EXPECT_EQ(m["class/infiniband_verbs/uroce_verbs2/ibdev"], "uroce2\n");
  EXPECT_EQ(m["class/infiniband_verbs/uroce_verbs2/dev"], "1:7\n");
  EXPECT_EQ(m["class/infiniband_verbs/uroce_verbs2/abi_version"], "1\n");
  EXPECT_EQ(m["class/misc/rdma_cm/abi_version"], "4\n");
}

TEST(SysfsTree, DeviceAndPortAttributes) {
  auto m = as_map(sysfs_files(spec()));
  const std::string dev = "class/infiniband/uroce0/";
  const std::string port = dev + "ports/1/";
  EXPECT_EQ(m[dev + "node_type"], "1: CA\n");
  EXPECT_EQ(m[dev + "node_guid"], "0000:7fff:fe01:0001\n");
  EXPECT_EQ(m[dev + "sys_image_guid"], "0000:7fff:fe01:0001\n");
  EXPECT_EQ(m[dev + "node_desc"], "host uroce0\n");
  for (const char* f : {"fw_ver", "hca_type", "hw_rev", "board_id"}) EXPECT_FALSE(m[dev + f].empty()) << f;
  EXPECT_EQ(m[port + "state"], "4: ACTIVE\n");
  EXPECT_EQ(m[port + "phys_state"], "5: LinkUp\n");
  EXPECT_EQ(m[port + "link_layer"], "Ethernet\n");
  EXPECT_EQ(m[port + "rate"], "100 Gb/sec (4X EDR)\n");
  EXPECT_EQ(m[port + "lid"], "0x0\n");
  EXPECT_EQ(m[port + "sm_lid"], "0x0\n");
  EXPECT_EQ(m[port + "lid_mask_count"], "0\n");
  EXPECT_EQ(m[port + "sm_sl"], "0\n");
  EXPECT_EQ(m[port + "cap_mask"], "0x00010000\n");
}

TEST(SysfsTree, GidTableHasEveryIndexAndGid0IsTheRoceV2Gid) {
  auto m = as_map(sysfs_files(spec()));
  const std::string port = "class/infiniband/uroce0/ports/1/";
  EXPECT_EQ(m[port + "gids/0"], "0000:0000:0000:0000:0000:ffff:7f01:0001\n");
  EXPECT_EQ(m[port + "gid_attrs/ndevs/0"], "lo\n");
  for (unsigned i = 0; i < kGidTableLen; ++i) {
    const std::string n = std::to_string(i);
    ASSERT_TRUE(m.count(port + "gids/" + n)) << i;
    EXPECT_EQ(m[port + "gid_attrs/types/" + n], "RoCE v2\n") << i;
    ASSERT_TRUE(m.count(port + "gid_attrs/ndevs/" + n)) << i;
    if (i > 0) {
      EXPECT_EQ(m[port + "gids/" + n], "0000:0000:0000:0000:0000:0000:0000:0000\n") << i;
      EXPECT_EQ(m[port + "gid_attrs/ndevs/" + n], "") << i;
    }
  }
  EXPECT_FALSE(m.count(port + "gids/" + std::to_string(kGidTableLen)));
  EXPECT_EQ(kGidTableLen, 16u);
}

// uroce run --netdev: the interface's addresses fill the table, its MAC makes the node GUID, its link state
// the port state.
TEST(SysfsTree, NetdevTableMacAndLinkState) {
  DeviceSpec s = spec("10.0.0.1");
  s.ndev = "eth0";
  s.gids = {parse_ip("10.0.0.1")->gid, Gid{}, parse_ip("fd00::7")->gid};
  s.mac = Mac{0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
  s.link_up = false;
  auto m = as_map(sysfs_files(s));
  const std::string dev = "class/infiniband/uroce0/";
  const std::string port = dev + "ports/1/";
  EXPECT_EQ(m[port + "gids/0"], "0000:0000:0000:0000:0000:ffff:0a00:0001\n");
  EXPECT_EQ(m[port + "gids/1"], "0000:0000:0000:0000:0000:0000:0000:0000\n");
  EXPECT_EQ(m[port + "gid_attrs/ndevs/1"], "");
  EXPECT_EQ(m[port + "gids/2"], "fd00:0000:0000:0000:0000:0000:0000:0007\n");
  EXPECT_EQ(m[port + "gid_attrs/ndevs/2"], "eth0\n");
  EXPECT_EQ(m[port + "gids/3"], "0000:0000:0000:0000:0000:0000:0000:0000\n");
  EXPECT_EQ(m[dev + "node_guid"], "5054:00ff:fe12:3456\n");
  EXPECT_EQ(m[port + "state"], "1: DOWN\n");
}

TEST(SysfsTree, Ipv6Gid0AndNoNetdev) {
  DeviceSpec s = spec("fd00::7");
  s.ndev.clear();
  auto m = as_map(sysfs_files(s));
  EXPECT_EQ(m["class/infiniband/uroce0/ports/1/gids/0"], "fd00:0000:0000:0000:0000:0000:0000:0007\n");
  EXPECT_EQ(m["class/infiniband/uroce0/ports/1/gid_attrs/ndevs/0"], "");
  EXPECT_EQ(m["class/infiniband/uroce0/node_guid"], "0000:00ff:fe00:0007\n");
}

// Every standard counter has its file (hw_counters/ for mlx5/rxe names, counters/ for the IB PMA ones), a
// placeholder "0" that the shim replaces with the live value when it is read as /sys/class/infiniband/...
TEST(SysfsTree, CounterFilesForEveryStandardName) {
  auto m = as_map(sysfs_files(spec()));
  const std::string port = "class/infiniband/uroce0/ports/1/";
  for (const StdCounter& c : kStdCounters) {
    const std::string path = port + (c.kind == StdCounterKind::kHw ? "hw_counters/" : "counters/") + c.name;
    EXPECT_EQ(m[path], "0\n") << path;
  }
  EXPECT_EQ(m.count(port + "hw_counters/np_cnp_sent"), 1u);
  EXPECT_EQ(m.count(port + "counters/port_xmit_data"), 1u);
}

TEST(SysfsTree, PkeyTable) {
  auto m = as_map(sysfs_files(spec()));
  const std::string pkeys = "class/infiniband/uroce0/ports/1/pkeys/";
  EXPECT_EQ(m[pkeys + "0"], "0xffff\n");
  for (unsigned i = 1; i < kPkeyTableLen; ++i) EXPECT_EQ(m[pkeys + std::to_string(i)], "0x0000\n") << i;
  EXPECT_EQ(kPkeyTableLen, 128u);
}

TEST(SysfsTree, WriteCreatesExactlyTheFiles) {
  TempDir tmp;
  const fs::path root = tmp.path() / "uroce0-127.1.0.1" / "sysfs";
  const auto files = sysfs_files(spec());
  EXPECT_EQ(write_tree(root, files), WriteResult::kCreated);
  size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) n += e.is_regular_file();
  EXPECT_EQ(n, files.size());
  for (const auto& f : files) EXPECT_EQ(read_text(root / f.path), f.content) << f.path;
  EXPECT_EQ(fs::status(root).permissions() & fs::perms::others_read, fs::perms::others_read);
}

TEST(SysfsTree, IdenticalTreeIsLeftAloneSoLibibverbsSeesTheSameDevice) {
  TempDir tmp;
  const fs::path root = tmp.path() / "t" / "sysfs";
  const auto files = sysfs_files(spec());
  ASSERT_EQ(write_tree(root, files), WriteResult::kCreated);
  const fs::path ibdev = root / "class/infiniband/uroce0";
  struct stat before {
  }, after{};
  ASSERT_EQ(stat(ibdev.c_str(), &before), 0);
  EXPECT_EQ(write_tree(root, files), WriteResult::kUnchanged);
  ASSERT_EQ(stat(ibdev.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
  EXPECT_EQ(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
}

TEST(SysfsTree, ChangedOrStrayContentIsReplacedWholeAndNothingIsLeftBehind) {
  TempDir tmp;
  const fs::path root = tmp.path() / "t" / "sysfs";
  ASSERT_EQ(write_tree(root, sysfs_files(spec())), WriteResult::kCreated);

  test::write_text(root / "class/infiniband/uroce0/stray", "x\n");
  EXPECT_FALSE(tree_matches(root, sysfs_files(spec())));
  EXPECT_EQ(write_tree(root, sysfs_files(spec())), WriteResult::kReplaced);
  EXPECT_FALSE(fs::exists(root / "class/infiniband/uroce0/stray"));

  const auto v6 = sysfs_files(spec("fd00::2"));
  EXPECT_EQ(write_tree(root, v6), WriteResult::kReplaced);
  EXPECT_TRUE(tree_matches(root, v6));
  EXPECT_EQ(read_text(root / "class/infiniband/uroce0/ports/1/gids/0"),
            "fd00:0000:0000:0000:0000:0000:0000:0002\n");

  std::set<std::string> siblings;
  for (const auto& e : fs::directory_iterator(root.parent_path())) siblings.insert(e.path().filename());
  EXPECT_EQ(siblings, std::set<std::string>{"sysfs"}) << "temporary trees must not be left behind";
}

TEST(SysfsTree, ReplacesAFileInTheWay) {
  TempDir tmp;
  const fs::path root = tmp.path() / "sysfs";
  test::write_text(root, "not a directory");
  EXPECT_EQ(write_tree(root, sysfs_files(spec())), WriteResult::kReplaced);
  EXPECT_TRUE(tree_matches(root, sysfs_files(spec())));
}

}  // namespace
}  // namespace uroce::tools
