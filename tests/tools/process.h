// Runs a program with a modified environment and collects its exit status and output (test helper).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace uroce::test {

struct ProcResult {
  int status = -1;  // exit code, or 128 + signal number
  std::string out;
  std::string err;
};

struct ProcEnv {
  std::vector<std::pair<std::string, std::string>> set;
  std::vector<std::string> unset;
  uid_t uid = static_cast<uid_t>(-1);  // switch to this uid (and gid) before exec when not -1
  int timeout_s = 30;                  // then the child is killed (SIGKILL: status 137) and err says so
};

// Runs argv[0] (found on PATH) and waits, at most env.timeout_s seconds, for it to exit.
ProcResult run_process(const std::vector<std::string>& argv, const ProcEnv& env = {});

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::string read_text(const std::filesystem::path& p);
void write_text(const std::filesystem::path& p, const std::string& content);

}  // namespace uroce::test
