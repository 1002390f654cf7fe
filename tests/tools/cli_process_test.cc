// The uroce executable end to end: exit codes, messages, `env` output, `run` with and without setup,
// and `setup` (as root, in a scratch UROCE_DEV_DIR; as another user, the sudo instruction).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "tests/tools/process.h"
#include "tools/uroce/dev_nodes.h"

namespace uroce::test {
namespace {
namespace fs = std::filesystem;
using Args = std::vector<std::string>;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + 1))
    ++n;
  return n;
}

class UroceCli : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(runtime_dir());
    fs::create_directories(libdir());
    write_text(libdir() / "liburoce-rdmav34.so", "");  // never loaded by the programs these tests run
    if (fs::exists(UROCE_SHIM_LIB)) {
      fs::create_symlink(UROCE_SHIM_LIB, libdir() / "liburoce-preload.so");
    } else {
      write_text(libdir() / "liburoce-preload.so", "");
    }
  }

  fs::path runtime_dir() const { return tmp_.path() / "xdg"; }
  fs::path libdir() const { return tmp_.path() / "lib"; }
  fs::path dir(const std::string& name) const { return tmp_.path() / name; }
  fs::path tree(const std::string& dev_ip) const {
    return runtime_dir() / ("uroce-" + std::to_string(getuid())) / dev_ip / "sysfs";
  }

  // Runs uroce with a private runtime dir and library dir, and no device nodes unless the test gives some.
  ProcResult uroce(Args args, ProcEnv env = {}) const {
    args.insert(args.begin(), UROCE_TOOL_BIN);
    env.set.emplace_back("XDG_RUNTIME_DIR", runtime_dir());
    env.set.emplace_back("UROCE_LIBDIR", libdir());
    bool has_dev_dir = false;
    for (const auto& [k, v] : env.set) has_dev_dir = has_dev_dir || k == "UROCE_DEV_DIR";
    if (!has_dev_dir) env.set.emplace_back("UROCE_DEV_DIR", dir("no-such-dev-dir"));
    // These tests are about the command line and the environment, not the host switch: one process, the
    // in-process loopback port (the default, uroced, has its own tests).
    env.set.emplace_back("UROCE_PORT", "loopback");
    return run_process(args, env);
  }

  // A directory with correct nodes, or "" when this process cannot make usable ones.
  fs::path good_dev_dir() const {
    const fs::path d = dir("dev");
    fs::create_directories(d);
    if (geteuid() != 0) {
      const bool ok = tools::check_node("/dev/infiniband/uroce_verbs0").state == tools::NodeState::kOk;
      return ok ? fs::path("/dev/infiniband") : fs::path();
    }
    for (int i = 0; i < 4; ++i) {
      const fs::path n = d / ("uroce_verbs" + std::to_string(i));
      if (mknod(n.c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0 || chmod(n.c_str(), 0666) != 0) return {};
    }
    return tools::check_node(d / "uroce_verbs0").state == tools::NodeState::kOk ? d : fs::path();
  }

  TempDir tmp_;
};

// The helper every test here runs the CLI with is bounded: a child that hangs is killed and reported.
TEST(RunProcess, KillsAChildThatOutlivesItsTimeout) {
  ProcEnv env;
  env.timeout_s = 1;
  const auto t0 = std::chrono::steady_clock::now();
  const ProcResult r = run_process({"sleep", "30"}, env);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.status, 128 + 9);
  EXPECT_NE(r.err.find("killed after 1 s"), std::string::npos) << r.err;
  EXPECT_LT(took, std::chrono::seconds(10));
}

TEST_F(UroceCli, NoCommandIsAUsageError) {
  const ProcResult r = uroce({});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "uroce: missing command")) << r.err;
  EXPECT_TRUE(contains(r.err, "usage: uroce <command>")) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(UroceCli, UnknownCommandIsAUsageError) {
  const ProcResult r = uroce({"start"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "uroce: unknown command 'start'")) << r.err;
}

TEST_F(UroceCli, BadOptionsExit2NamingTheProblem) {
  const std::vector<std::pair<Args, std::string>> cases = {
      {{"env", "--bogus"}, "uroce env: unknown option '--bogus'"},
      {{"env", "--ip", "1.2.3"}, "uroce env: bad value '1.2.3' for --ip"},
      {{"env", "--dev"}, "uroce env: option '--dev' needs a value"},
      {{"run", "--dev", "uroce9", "--", "true"}, "uroce run: bad value 'uroce9' for --dev"},
      {{"run", "--dev", "uroce0"}, "uroce run: missing command"},
      {{"setup", "now"}, "uroce setup: unexpected argument 'now'"},
      {{"devices", "--all"}, "uroce devices: unknown option '--all'"},
  };
  for (const auto& [args, message] : cases) {
    const ProcResult r = uroce(args);
    EXPECT_EQ(r.status, 2) << args[0];
    EXPECT_TRUE(contains(r.err, message)) << r.err;
    EXPECT_TRUE(contains(r.err, "usage: uroce <command>")) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST_F(UroceCli, HelpGoesToStdout) {
  for (const Args& args : {Args{"help"}, Args{"--help"}, Args{"run", "--help"}}) {
    const ProcResult r = uroce(args);
    EXPECT_EQ(r.status, 0);
    EXPECT_TRUE(contains(r.out, "usage: uroce <command>"));
  }
}

TEST_F(UroceCli, EnvPrintsTheExportsAShellReadsBack) {
  ProcEnv env;
  env.set = {{"LD_PRELOAD", "/other/libx.so"}};
  const ProcResult r = uroce({"env", "--dev", "uroce1", "--ip", "fd00::9"}, env);
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path root = tree("uroce1-fd00::9");
  const std::string expected = "export SYSFS_PATH=" + root.string() + "\n" +
                               "export RDMAV_DRIVERS=" + (libdir() / "liburoce").string() + "\n" +
                               "export LD_PRELOAD=" + (libdir() / "liburoce-preload.so").string() +
                               ":/other/libx.so\n" + "export UROCE_DEV=uroce1\n" +
                               "export UROCE_SYSFS=" + root.string() + "\n";
  EXPECT_EQ(r.out, expected);
  EXPECT_EQ(read_text(root / "class/infiniband/uroce1/ports/1/gids/0"),
            "fd00:0000:0000:0000:0000:0000:0000:0009\n");
  EXPECT_EQ(read_text(root / "class/infiniband_verbs/uroce_verbs1/ibdev"), "uroce1\n");
  EXPECT_EQ(fs::status(root.parent_path().parent_path()).permissions(), fs::perms::owner_all);
  EXPECT_FALSE(contains(r.err, "setup")) << "the shim stands in for the nodes the test's UROCE_DEV_DIR lacks";

  const ProcResult sh =
      run_process({"sh", "-c", "eval \"$1\" && echo \"$SYSFS_PATH|$UROCE_DEV\"", "sh", r.out});
  EXPECT_EQ(sh.out, root.string() + "|uroce1\n") << sh.err;
}

TEST_F(UroceCli, EnvWithoutLibrariesWarnsAndLeavesLdPreloadAlone) {
  fs::create_directories(dir("empty"));
  const ProcResult r = run_process(
      {UROCE_TOOL_BIN, "env"}, {{{"XDG_RUNTIME_DIR", runtime_dir()}, {"UROCE_LIBDIR", dir("empty")}}, {}});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(contains(r.err, "liburoce-rdmav34.so not found")) << r.err;
  EXPECT_TRUE(contains(r.err, "liburoce-preload.so not found")) << r.err;
  EXPECT_FALSE(contains(r.out, "LD_PRELOAD"));
  EXPECT_TRUE(contains(r.out, "export SYSFS_PATH=")) << r.out;
}

TEST_F(UroceCli, RunWithoutSetupRunsTheCommandWhenTheShimStandsInForTheNode) {
  const fs::path marker = dir("ran");
  const ProcResult r = uroce({"run", "--", "touch", marker});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(marker));
}

TEST_F(UroceCli, RunWithoutSetupOrShimSaysWhatToDoAndDoesNotRunTheCommand) {
  fs::remove(libdir() / "liburoce-preload.so");
  const fs::path marker = dir("ran");
  const ProcResult r = uroce({"run", "--", "touch", marker});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "run 'sudo uroce setup' once")) << r.err;
  EXPECT_TRUE(contains(r.err, "uroce_verbs0: missing")) << r.err;
  EXPECT_FALSE(fs::exists(marker));
}

TEST_F(UroceCli, RunWithoutTheShimRefusesAWrongNode) {
  fs::remove(libdir() / "liburoce-preload.so");
  write_text(dir("wrongdev") / "uroce_verbs2", "");
  ProcEnv env;
  env.set = {{"UROCE_DEV_DIR", dir("wrongdev")}};
  const fs::path marker = dir("ran");
  const ProcResult r = uroce({"run", "--dev", "uroce2", "--", "touch", marker}, env);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "expected char 1:7")) << r.err;
  EXPECT_TRUE(contains(r.err, "run 'sudo uroce setup' once")) << r.err;
  EXPECT_FALSE(fs::exists(marker));
}

TEST_F(UroceCli, RunExecsTheCommandInTheUroceEnvironment) {
  const fs::path dev = good_dev_dir();
  if (dev.empty()) GTEST_SKIP() << "cannot make device nodes here and 'uroce setup' was not run";
  ProcEnv env;
  env.set = {{"UROCE_DEV_DIR", dev}};
  const ProcResult r =
      uroce({"run", "--", "sh", "-c", "echo \"$SYSFS_PATH|$RDMAV_DRIVERS|$UROCE_DEV|$UROCE_SYSFS\""}, env);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string root = tree("uroce0-127.1.0.1").string();
  EXPECT_EQ(r.out, root + "|" + (libdir() / "liburoce").string() + "|uroce0|" + root + "\n");
  EXPECT_TRUE(fs::is_regular_file(root + "/class/infiniband/uroce0/ports/1/gids/0"));
}

TEST_F(UroceCli, ProgramsUnderRunReadTheTreeThroughSlashSys) {
  if (!fs::exists(UROCE_SHIM_LIB)) GTEST_SKIP() << "preload shim not built";
  const fs::path dev = good_dev_dir();
  if (dev.empty()) GTEST_SKIP() << "cannot make device nodes here and 'uroce setup' was not run";
  ProcEnv env;
  env.set = {{"UROCE_DEV_DIR", dev}};
  const ProcResult r =
      uroce({"run", "--", "sh", "-c",
             "cat /sys/class/infiniband/uroce0/ports/1/gid_attrs/types/0 "
             "/sys/class/infiniband/uroce0/ports/1/gids/0 && ls /sys/class/infiniband_verbs"},
            env);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "RoCE v2\n0000:0000:0000:0000:0000:ffff:7f01:0001\nabi_version\nuroce_verbs0\n");
}

TEST_F(UroceCli, RunReportsACommandThatIsNotThere) {
  const fs::path dev = good_dev_dir();
  if (dev.empty()) GTEST_SKIP() << "cannot make device nodes here and 'uroce setup' was not run";
  ProcEnv env;
  env.set = {{"UROCE_DEV_DIR", dev}};
  const ProcResult r = uroce({"run", "--", "no-such-program-uroce"}, env);
  EXPECT_EQ(r.status, 127);
  EXPECT_TRUE(contains(r.err, "uroce run: cannot run 'no-such-program-uroce'")) << r.err;
}

TEST_F(UroceCli, SetupAsAnotherUserSaysToUseSudo) {
  ProcEnv env;
  if (geteuid() == 0) env.uid = 65534;  // nobody
  env.set = {{"UROCE_DEV_DIR", "/nonexistent/uroce-dev"}};
  const ProcResult r = uroce({"setup"}, env);
  if (r.status == 127 || r.status == 125) GTEST_SKIP() << "cannot run the tool as another user here";
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "must run as root")) << r.err;
  EXPECT_TRUE(contains(r.err, "    sudo uroce setup\n")) << r.err;
  EXPECT_TRUE(contains(r.err, "mknod")) << r.err;
}

TEST_F(UroceCli, SetupCreatesFixesAndKeepsNodes) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  const fs::path dev = dir("dev") / "infiniband";
  ProcEnv env;
  env.set = {{"UROCE_DEV_DIR", dev}};
  ProcResult r = uroce({"setup"}, env);
  if (r.status != 0 && contains(r.err, "check of")) GTEST_SKIP() << "device nodes unusable here: " << r.err;
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(count(r.out, ": created (char 1:7 mode 0666)"), 4u) << r.out;
  EXPECT_TRUE(contains(r.out, "check: uroce_verbs0..3 open read-write")) << r.out;
  for (int i = 0; i < 4; ++i) {
    struct stat st {};
    ASSERT_EQ(lstat((dev / ("uroce_verbs" + std::to_string(i))).c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_EQ(st.st_rdev, makedev(1, 7));
    EXPECT_EQ(st.st_mode & 07777, 0666u);
  }

  r = uroce({"setup"}, env);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(count(r.out, ": ok, left alone"), 4u) << r.out;

  ASSERT_EQ(chmod((dev / "uroce_verbs1").c_str(), 0600), 0);
  fs::remove(dev / "uroce_verbs2");
  write_text(dev / "uroce_verbs2", "junk");
  fs::remove(dev / "uroce_verbs3");
  fs::create_symlink("/dev/null", dev / "uroce_verbs3");
  r = uroce({"setup"}, env);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "uroce_verbs1: fixed mode (was char 1:7 mode 0600)")) << r.out;
  EXPECT_TRUE(contains(r.out, "uroce_verbs2: replaced (was a non-device file")) << r.out;
  EXPECT_TRUE(contains(r.out, "uroce_verbs3: replaced (was a symlink)")) << r.out;

  r = uroce({"devices"}, env);
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(contains(r.out, "setup: done")) << r.out;
}

TEST_F(UroceCli, DevicesShowsMissingSetupAndTrees) {
  ASSERT_EQ(uroce({"env", "--dev", "uroce3"}).status, 0);
  const ProcResult r = uroce({"devices"});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(contains(r.out, "uroce_verbs0  missing")) << r.out;
  EXPECT_TRUE(contains(r.out, "setup: not done (not needed under 'uroce run', whose shim stands in"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "run 'sudo uroce setup' once")) << r.out;
  EXPECT_TRUE(contains(r.out, "uroce3   gid0 0000:0000:0000:0000:0000:ffff:7f01:0001")) << r.out;
  EXPECT_TRUE(contains(r.out, "SYSFS_PATH=" + tree("uroce3-127.1.0.1").string())) << r.out;
}

}  // namespace
}  // namespace uroce::test
