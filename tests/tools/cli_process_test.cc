// The uroce executable end to end: exit codes, messages, `env` output, `run` with and without setup,
// and `setup` (as root, in a scratch UROCE_DEV_DIR; as another user, the sudo instruction).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "runtime/env_vars.h"
#include "tests/tools/process.h"
#include "tools/uroce/dev_nodes.h"
#include "uroce_build_info.h"

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
    bool has_port = false;
    for (const auto& [k, v] : env.set) has_port = has_port || k == "UROCE_PORT";
    if (!has_port) env.set.emplace_back("UROCE_PORT", "loopback");
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
  EXPECT_EQ(r.err, "uroce: missing command (run 'uroce --help')\n");
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
    // One line: the problem and where the command's help is, not the whole usage text.
    EXPECT_TRUE(contains(r.err, "(run 'uroce " + args[0] + " --help')\n")) << r.err;
    EXPECT_EQ(count(r.err, "\n"), 1u) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

// Every subcommand's usage error is one line naming the bad option, the same way, whichever subcommand.
TEST_F(UroceCli, UnknownOptionIsOneLineInEverySubcommand) {
  for (const char* cmd : {"setup", "env", "run", "devices", "stats", "capture", "exp"}) {
    const ProcResult r = uroce({cmd, "--no-such-option"});
    EXPECT_EQ(r.status, 2) << cmd;
    EXPECT_EQ(r.err, "uroce " + std::string(cmd) + ": unknown option '--no-such-option' (run 'uroce " + cmd +
                         " --help')\n");
    EXPECT_EQ(r.out, "");
  }
  const ProcResult r = uroce({"--no-such-option"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "uroce: unknown option '--no-such-option' (run 'uroce --help')\n");
}

TEST_F(UroceCli, VersionPrintsTheProjectVersion) {
  const ProcResult r = uroce({"--version"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("uroce " UROCE_VERSION)) << r.out;
  EXPECT_EQ(count(r.out, "\n"), 1u) << r.out;
  EXPECT_EQ(r.err, "");
}

// `uroce CMD --help` is that command's own text: its synopsis and options, not the global usage.
TEST_F(UroceCli, EachSubcommandHasItsOwnHelp) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"stats", {"--pid PID", "--json", "--all", "--watch SECONDS"}},
      {"capture", {"-w FILE.pcap", "--force", "--duration SECONDS", "--snaplen"}},
      {"run", {"--port P", "--cc NAME", "--cc-param K=V", "--mtu N", "-- CMD"}},
      {"env", {"--dev NAME", "--ip ADDR", "--list"}},
      {"exp", {"--out DIR", "--seed N", "--duration-us N", "--no-plots", "--list"}},
      {"setup", {"as root, once"}},
      {"devices", {"sysfs trees"}},
  };
  for (const auto& [cmd, words] : cases) {
    for (const char* flag : {"--help", "-h"}) {
      const ProcResult r = uroce({cmd, flag});
      EXPECT_EQ(r.status, 0) << cmd;
      EXPECT_TRUE(r.out.starts_with("usage: uroce " + cmd)) << r.out;
      EXPECT_FALSE(contains(r.out, "usage: uroce <command>")) << cmd << " printed the global text";
      for (const std::string& w : words) EXPECT_TRUE(contains(r.out, w)) << cmd << ": " << w << "\n" << r.out;
    }
  }
}

// Options of `uroce exp` go before or after the scenario, as --opt=value or --opt value; the run reaches
// the scenario (10 simulated us, no plots) and writes its summary where --out says.
TEST_F(UroceCli, ExpTakesOptionsBeforeAndAfterTheScenario) {
  const std::vector<Args> forms = {
      {"exp", "--out=" + dir("a").string(), "incast", "--duration-us=10", "--no-plots"},
      {"exp", "incast", "--out=" + dir("b").string(), "--duration-us", "10", "--no-plots"},
      {"exp", "--out", dir("c").string(), "incast", "--no-plots", "--duration-us=10"},
  };
  for (const Args& args : forms) {
    const ProcResult r = uroce(args);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "scenario incast")) << r.out;
  }
  for (const char* d : {"a", "b", "c"})
    EXPECT_TRUE(fs::is_regular_file(dir(d) / "incast" / "summary.txt")) << d;
}

// `uroce run` stops reading options at "--" (or at CMD): CMD's arguments reach it untouched, even ones
// that look like uroce's own options or an empty --opt=.
TEST_F(UroceCli, RunPassesTheCommandsArgumentsUntouched) {
  const fs::path dev = good_dev_dir();
  if (dev.empty()) GTEST_SKIP() << "cannot make device nodes here and 'uroce setup' was not run";
  ProcEnv env;
  env.set = {{"UROCE_DEV_DIR", dev}};
  const Args cmd = {"sh", "-c", "printf '[%s]' \"$@\"", "sh", "--dev=", "--ip", "x", "--", "-h", "--cc=y"};
  for (const Args& before : {Args{"run", "--dev=uroce0", "--"}, Args{"run", "--ip", "127.1.0.1"}}) {
    Args args = before;
    args.insert(args.end(), cmd.begin(), cmd.end());
    const ProcResult r = uroce(args, env);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "[--dev=][--ip][x][--][-h][--cc=y]");
  }
}

TEST_F(UroceCli, HelpGoesToStdout) {
  for (const Args& args : {Args{"help"}, Args{"--help"}, Args{"-h"}}) {
    const ProcResult r = uroce(args);
    EXPECT_EQ(r.status, 0);
    EXPECT_TRUE(contains(r.out, "usage: uroce <command>"));
  }
  for (const Args& args : {Args{"run", "--help"}, Args{"help", "run"}}) {
    const ProcResult r = uroce(args);
    EXPECT_EQ(r.status, 0);
    EXPECT_TRUE(r.out.starts_with("usage: uroce run")) << r.out;
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

// A value of each kind that the table's check refuses; "" for the kinds that take any value.
std::string bad_value(const runtime::EnvVar& v) {
  switch (v.kind) {
    case runtime::EnvKind::kFlag:
      return "yes";
    case runtime::EnvKind::kUint:
      return "abc";
    case runtime::EnvKind::kChoice:
      return "bogus";
    case runtime::EnvKind::kCc:
      return "no_such_cc";
    case runtime::EnvKind::kCcParams:
      return "no_such_param=1";
    case runtime::EnvKind::kPort:
      return "memif:role=sideways";
    case runtime::EnvKind::kDevice:
      return "uroce9";
    case runtime::EnvKind::kText:
    case runtime::EnvKind::kPath:
      return "";
  }
  return "";
}

// `uroce run` refuses a bad value of every variable in the table, naming it and the value, before it runs
// anything (here before it even looks for the device nodes, which this test does not provide).
TEST_F(UroceCli, RunRefusesABadValueOfEveryVariableInTheTable) {
  std::vector<std::string> free_form;
  for (const runtime::EnvVar& v : runtime::env_vars()) {
    const std::string name(v.name), bad = bad_value(v);
    if (bad.empty()) {
      free_form.push_back(name);
      continue;
    }
    const fs::path marker = dir("ran-" + name);
    ProcEnv env;
    env.set = {{name, bad}};
    const ProcResult r = uroce({"run", "--", "touch", marker}, env);
    EXPECT_EQ(r.status, 1) << name << ": " << r.err;
    EXPECT_TRUE(r.err.starts_with("uroce run: " + name + "=" + bad + ": ")) << r.err;
    EXPECT_EQ(count(r.err, "\n"), 1u) << r.err;
    EXPECT_FALSE(fs::exists(marker)) << name;
  }
  // Only paths and free text take any value (UROCE_NETDEV: an interface name, checked when it is used).
  EXPECT_EQ(free_form, (std::vector<std::string>{"UROCE_NETDEV", "UROCE_DPDK_EAL_ARGS", "SYSFS_PATH",
                                                 "LD_PRELOAD", "PATH", "XDG_RUNTIME_DIR", "UROCE_LIBDIR",
                                                 "UROCE_DEV_DIR", "UROCED", "UROCED_CONFIG"}));
}

// The flags for CC and MTU are checked when parsed, as the flag, in one line, before anything runs.
TEST_F(UroceCli, RunRefusesBadCcAndMtuFlags) {
  const std::vector<std::pair<Args, std::string>> cases = {
      {{"--cc", "no_such_cc"}, "bad value 'no_such_cc' for --cc: "},
      {{"--cc=dcqcn", "--cc-param", "no_such_param=1"}, "bad value 'no_such_param=1' for --cc-param: "},
      {{"--cc-param", "rpg_time_reset"}, "bad value 'rpg_time_reset' for --cc-param: expected K=V"},
      {{"--mtu=9000"}, "bad value '9000' for --mtu: expected 256|512|1024|2048|4096"},
      {{"--port", "memif:role=sideways"}, "bad value 'memif:role=sideways' for --port: "},
  };
  for (const auto& [flags, message] : cases) {
    Args args = {"run"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "true"});
    const ProcResult r = uroce(args);
    EXPECT_EQ(r.status, 2) << flags[0];
    EXPECT_TRUE(r.err.starts_with("uroce run: " + message)) << r.err;
    EXPECT_EQ(count(r.err, "\n"), 1u) << r.err;
  }
}

// --cc, --cc-param (repeatable, joined) and --mtu reach the command as UROCE_CC, UROCE_CC_PARAMS, UROCE_MTU.
TEST_F(UroceCli, RunSetsTheCcAndMtuVariablesForTheCommand) {
  const fs::path dev = good_dev_dir();
  if (dev.empty()) GTEST_SKIP() << "cannot make device nodes here and 'uroce setup' was not run";
  ProcEnv env;
  env.set = {{"UROCE_DEV_DIR", dev}, {"UROCE_CC_PARAMS", "replaced=1"}};
  const ProcResult r =
      uroce({"run", "--cc", "dcqcn", "--cc-param", "rpg_time_reset=300", "--cc-param=rpg_ai_rate=10", "--mtu",
             "1024", "--", "sh", "-c", "echo \"$UROCE_CC|$UROCE_CC_PARAMS|$UROCE_MTU\""},
            env);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "dcqcn|rpg_time_reset=300,rpg_ai_rate=10|1024\n");
}

TEST(UrocedCli, VersionHelpAndOneLineErrors) {
  ProcResult r = run_process({UROCED_TOOL_BIN, "--version"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("uroced " UROCE_VERSION)) << r.out;
  r = run_process({UROCED_TOOL_BIN, "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.out.starts_with("usage: uroced")) << r.out;
  const std::vector<std::pair<Args, std::string>> cases = {
      {{"--no-such-option", "1"}, "uroced: --no-such-option: unknown key 'no_such_option'"},
      {{"--rate"}, "uroced: option '--rate' needs a value"},
      {{"--rate=fast"}, "uroced: --rate: rate: bits/s expected (0, 100000, 500m, 10g), got 'fast'"},
      {{"--idle-exit", "x"}, "uroced: --idle-exit: idle_exit: seconds expected, got 'x'"},
      {{"stray"}, "uroced: unexpected argument 'stray'"},
  };
  for (const auto& [args, message] : cases) {
    Args argv = {UROCED_TOOL_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    r = run_process(argv);
    EXPECT_EQ(r.status, 2) << args[0];
    EXPECT_TRUE(r.err.starts_with(message)) << r.err;
    EXPECT_TRUE(r.err.ends_with("(run 'uroced --help')\n")) << r.err;
    EXPECT_EQ(count(r.err, "\n"), 1u) << r.err;
  }
  // The variables uroced reads are refused at start when bad, naming them.
  for (const auto& [name, bad] : {std::pair{"UROCED_SPIN_US", "abc"}, std::pair{"UROCED_YIELD", "no"},
                                  std::pair{"UROCE_DPDK_MEM_MB", "8"}}) {
    r = run_process({UROCED_TOOL_BIN, "--stats"}, {{{name, bad}}, {}});
    EXPECT_EQ(r.status, 2) << name;
    EXPECT_TRUE(r.err.starts_with("uroced: " + std::string(name) + "=" + bad + ": expected")) << r.err;
  }
}

}  // namespace
}  // namespace uroce::test
