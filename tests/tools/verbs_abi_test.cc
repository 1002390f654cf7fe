// uroce warns when the libibverbs programs will load cannot load its provider (another provider ABI).
#include "tools/uroce/verbs_abi.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/tools/process.h"

namespace uroce::test {
namespace {
namespace fs = std::filesystem;

TEST(VerbsAbi, ThisMachinesLibibverbsHasTheProviderAbi) { EXPECT_EQ(tools::verbs_abi_problem(), ""); }

TEST(VerbsAbi, UroceEnvNamesALibibverbsWithAnotherProviderAbi) {
  // A library named as rdma-core 58 names its libibverbs, without verbs_register_driver_34.
  TempDir tmp;
  fs::copy_file(UROCE_FAKE_VERBS_LIB, tmp.path() / "libibverbs.so.1.14.58.0");
  fs::create_symlink("libibverbs.so.1.14.58.0", tmp.path() / "libibverbs.so.1");
  fs::create_directories(tmp.path() / "xdg");
  const ProcResult r = run_process(
      {UROCE_TOOL_BIN, "env"},
      {{{"LD_LIBRARY_PATH", tmp.path().string()}, {"XDG_RUNTIME_DIR", (tmp.path() / "xdg").string()}}, {}});
  EXPECT_EQ(r.status, 0) << r.err;
  const std::string expected = "warning: " + (tmp.path() / "libibverbs.so.1.14.58.0").string() +
                               " (rdma-core 58) has no IBVERBS_PRIVATE_34 provider ABI";
  EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
}

TEST(VerbsAbi, UroceEnvIsQuietAboutThisMachinesLibibverbs) {
  TempDir tmp;
  const ProcResult r = run_process({UROCE_TOOL_BIN, "env"}, {{{"XDG_RUNTIME_DIR", tmp.path().string()}}, {}});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("provider ABI"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace uroce::test
