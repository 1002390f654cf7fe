// Options of `uroce stats` and `uroce capture`. Bad input throws UsageError (tools/uroce/cli.h) naming the
// option.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace uroce::tools {

struct StatsArgs {
  pid_t pid = 0;    // --pid (0: every process)
  std::string dev;  // --dev ("": every device)
  bool json = false;
  bool all = false;
  double watch_s = 0;  // --watch SECONDS (0: once)
};

struct CaptureArgs {
  pid_t pid = 0;
  std::string dev;
  std::string file;    // -w
  bool force = false;  // --force: replace an existing regular file (never through a symbolic link)
  uint64_t count = 0;  // -c (0: until --duration or Ctrl-C)
  double duration_s = 0;
  uint32_t snaplen = 0;  // -s (0: whole frames)
};

StatsArgs parse_stats_args(const std::vector<std::string>& args);
CaptureArgs parse_capture_args(const std::vector<std::string>& args);

}  // namespace uroce::tools
