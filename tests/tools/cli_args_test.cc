// Argument parsing of `uroce env` / `uroce run`, and the environment helpers.
#include <gtest/gtest.h>

#include "tools/uroce/cli.h"
#include "tools/uroce/paths.h"
#include "tools/uroce/session.h"

namespace uroce::tools {
namespace {

using Args = std::vector<std::string>;

std::string usage_error(const Args& args, bool want_command) {
  try {
    parse_device_args(args, want_command);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(CliArgs, Defaults) {
  const ParsedArgs p = parse_device_args({}, false);
  EXPECT_EQ(p.device.dev, "uroce0");
  EXPECT_EQ(p.device.index, 0u);
  EXPECT_EQ(p.device.ip.text, "127.1.0.1");
  EXPECT_TRUE(p.command.empty());
}

TEST(CliArgs, BothSpellingsOfOptions) {
  ParsedArgs p = parse_device_args({"--dev", "uroce3", "--ip", "fd00::5"}, false);
  EXPECT_EQ(p.device.dev, "uroce3");
  EXPECT_EQ(p.device.index, 3u);
  EXPECT_EQ(p.device.ip.text, "fd00::5");
  p = parse_device_args({"--dev=uroce1", "--ip=10.1.2.3"}, false);
  EXPECT_EQ(p.device.index, 1u);
  EXPECT_EQ(p.device.ip.text, "10.1.2.3");
}

// As with getopt: an option given again replaces the earlier value (a wrapper's default, then the user's).
TEST(CliArgs, ARepeatedOptionTakesTheLastValue) {
  const ParsedArgs p =
      parse_device_args({"--dev", "uroce1", "--ip=10.0.0.1", "--dev=uroce2", "--ip", "fd00::2"}, false);
  EXPECT_EQ(p.device.dev, "uroce2");
  EXPECT_EQ(p.device.ip.text, "fd00::2");
}

TEST(CliArgs, RunCommandAfterDoubleDashOrFirstWord) {
  ParsedArgs p = parse_device_args({"--dev", "uroce2", "--", "ibv_devinfo", "-v", "--dev", "x"}, true);
  EXPECT_EQ(p.device.dev, "uroce2");
  EXPECT_EQ(p.command, (Args{"ibv_devinfo", "-v", "--dev", "x"}));
  p = parse_device_args({"ibv_devices", "--ip", "1.2.3.4"}, true);
  EXPECT_EQ(p.command, (Args{"ibv_devices", "--ip", "1.2.3.4"}));
  EXPECT_EQ(p.device.ip.text, "127.1.0.1");
}

TEST(CliArgs, ErrorsNameTheOptionAndValue) {
  EXPECT_EQ(usage_error({"--bogus"}, false), "unknown option '--bogus'");
  EXPECT_EQ(usage_error({"-x", "--", "true"}, true), "unknown option '-x'");
  EXPECT_EQ(usage_error({"--dev"}, false), "option '--dev' needs a value");
  EXPECT_EQ(usage_error({"--ip"}, true), "option '--ip' needs a value");
  EXPECT_EQ(usage_error({"stray"}, false), "unexpected argument 'stray'");
  EXPECT_EQ(usage_error({"--", "true"}, false), "unexpected '--'");
  EXPECT_NE(usage_error({}, true).find("missing command"), std::string::npos);
  EXPECT_NE(usage_error({"--dev", "uroce0", "--"}, true).find("missing command"), std::string::npos);

  for (const char* dev : {"uroce4", "uroce01", "uroce", "mlx5_0", "", "uroce-1", "uroce1x", "Uroce0"}) {
    const std::string e = usage_error({"--dev", dev}, false);
    EXPECT_NE(e.find("bad value '" + std::string(dev) + "' for --dev"), std::string::npos) << e;
    EXPECT_NE(e.find("uroce0 .. uroce3"), std::string::npos) << e;
  }
  for (const char* ip : {"1.2.3", "localhost", "0.0.0.0", "ff02::1", ""}) {
    const std::string e = usage_error({"--ip=" + std::string(ip), "--", "true"}, true);
    EXPECT_NE(e.find("bad value '" + std::string(ip) + "' for --ip"), std::string::npos) << e;
  }
}

TEST(CliArgs, HelpAndNoArgCommands) {
  EXPECT_THROW(parse_device_args({"--help"}, true), HelpRequested);
  EXPECT_THROW(parse_device_args({"--dev", "uroce0", "-h"}, false), HelpRequested);
  EXPECT_NO_THROW(expect_no_args({}));
  EXPECT_THROW(expect_no_args({"-h"}), HelpRequested);
  EXPECT_THROW(expect_no_args({"--force"}), UsageError);
  EXPECT_THROW(expect_no_args({"now"}), UsageError);
}

TEST(CliArgs, DeviceIndex) {
  EXPECT_EQ(device_index("uroce0"), 0u);
  EXPECT_EQ(device_index("uroce3"), 3u);
  EXPECT_FALSE(device_index("uroce4"));
  EXPECT_FALSE(device_index("uroce00"));
  EXPECT_FALSE(device_index("uroce+1"));
}

TEST(Env, PreloadIsPrependedOnce) {
  EXPECT_EQ(prepend_preload("/s.so", ""), "/s.so");
  EXPECT_EQ(prepend_preload("/s.so", "/a.so"), "/s.so:/a.so");
  EXPECT_EQ(prepend_preload("/s.so", "/a.so /b.so:/s.so"), "/s.so:/a.so:/b.so");
  EXPECT_EQ(prepend_preload("/s.so", "/s.so"), "/s.so");
}

TEST(Env, ShellQuoting) {
  EXPECT_EQ(shell_quote("/tmp/uroce-0/uroce0-127.1.0.1/sysfs"), "/tmp/uroce-0/uroce0-127.1.0.1/sysfs");
  EXPECT_EQ(shell_quote("/tmp/uroce-0/uroce0-fd00::1/sysfs"), "/tmp/uroce-0/uroce0-fd00::1/sysfs");
  EXPECT_EQ(shell_quote("/a b"), "'/a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$HOME"), "'$HOME'");
  EXPECT_EQ(shell_quote(""), "''");
}

TEST(Env, DriversValueDropsTheSuffixLibibverbsAppends) {
  EXPECT_EQ(rdmav_drivers_value("/b/provider/liburoce-rdmav34.so"), "/b/provider/liburoce");
}

}  // namespace
}  // namespace uroce::tools
