// uroced: the uroce host switch (see daemon.h, client.h, config.h and docs/uroced.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "runtime/runtime_dir.h"
#include "runtime/uroced_client.h"
#include "tools/uroce/cli_app.h"
#include "tools/uroce/env_check.h"
#include "tools/uroced/config.h"
#include "tools/uroced/daemon.h"

namespace {

using namespace uroce::uroced;

int client_action(const DaemonConfig& dc) {
  std::string line = dc.action == Action::kStats ? "stats" : dc.action == Action::kStop ? "stop" : "set";
  for (const auto& w : dc.set_args) line += " " + w;
  std::string reply, err;
  if (!uroce::runtime::request(line, &reply, &err)) {
    std::fprintf(stderr, "uroced: not running (%s)\n", err.c_str());
    return dc.action == Action::kStop ? 0 : 1;
  }
  std::printf("%s%s", reply.c_str(), reply.empty() || reply.back() != '\n' ? "\n" : "");
  return reply.rfind("error", 0) == 0 ? 1 : 0;
}

// --daemon: the launcher forks the daemon, which detaches (new session, stdio to the log file) and writes
// one line to `ready_fd` once it listens ("ok", or the error). The launcher exits 0 only after "ok", so a
// caller that waits for it knows the control socket answers.
int launch_daemon(const DaemonConfig& dc, const std::filesystem::path& base) {
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0) {
    std::perror("uroced: pipe");
    return 1;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("uroced: fork");
    return 1;
  }
  if (pid > 0) {
    close(pfd[1]);
    std::string said;
    char buf[512];
    for (ssize_t n; (n = read(pfd[0], buf, sizeof buf)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      said.append(buf, static_cast<size_t>(n));
    }
    if (said.rfind("ok", 0) == 0) return 0;
    std::fprintf(stderr, "uroced: %s\n", said.empty() ? "daemon died while starting" : said.c_str());
    return 1;
  }
  close(pfd[0]);
  // A process group of its own (a terminal's Ctrl-C does not reach it; SIGHUP is ignored in run()), but
  // the starter's session, not setsid(): with the kernel's scheduler autogroups (on by default) a session
  // is a task group, and a switch alone in its group was measured starved of CPU for ~0.5 s at a time
  // while busy-polling verbs processes (the group next door) outnumbered the cores: every peer's ACK timer
  // then expired at once (docs/uroced.md, "Scheduling").
  setpgid(0, 0);
  umask(077);
  const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int logfd =
      open(uroce::runtime::log_path(base).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (devnull >= 0) dup2(devnull, 0);
  if (logfd >= 0) {
    dup2(logfd, 1);
    dup2(logfd, 2);
  }
  // Whatever the starter left open (a test harness's pipes) must not be held by a long-lived daemon.
  const int ready = fcntl(pfd[1], F_DUPFD_CLOEXEC, 3);
  for (int fd = 3; fd < 1024; ++fd)
    if (fd != ready) close(fd);
  if (chdir("/") != 0) {
  }

  int rc = 1;
  {
    Daemon d(dc, base);
    std::string err;
    bool already = false;
    const bool ok = d.start(&err, &already);
    const std::string msg = ok || already ? "ok\n" : err + "\n";
    (void)!write(ready, msg.data(), msg.size());
    close(ready);
    if (!ok && !already) std::fprintf(stderr, "uroced: %s\n", err.c_str());
    if (ok) rc = d.run();
    if (already) rc = 0;
  }
  std::fflush(nullptr);
  _exit(rc);  // DPDK's threads and static destructors do not mix; the ports are already closed
}

}  // namespace

int main(int argc, char** argv) {
  DaemonConfig dc;
  std::string err;
  if (!parse_args(argc, argv, &dc, &err)) {
    // One line; the pointer to the help fits a bad option, not a bad line in a config file.
    const bool option = err.rfind("--", 0) == 0 || err.rfind("option", 0) == 0 ||
                        err.rfind("unexpected", 0) == 0 || err.rfind("unknown option", 0) == 0;
    std::fprintf(stderr, "uroced: %s%s\n", err.c_str(), option ? " (run 'uroced --help')" : "");
    return 2;
  }
  if (dc.action == Action::kVersion) {
    std::printf("%s\n", uroce::tools::version_line("uroced").c_str());
    return 0;
  }
  // The variables uroced reads (runtime/env_vars.h): a bad value is refused here, naming it.
  for (const char* name :
       {"UROCED_YIELD", "UROCED_SPIN_US", "UROCE_DPDK_MEM_MB", "UROCE_HUGEPAGES", "UROCE_DPDK_LOG",
        "UROCE_MEMIF_BELL"}) {
    const char* v = std::getenv(name);
    if (const std::string bad = uroce::tools::check_env_var(name, v ? v : ""); !bad.empty()) {
      std::fprintf(stderr, "uroced: %s\n", bad.c_str());
      return 2;
    }
  }
  if (dc.action == Action::kHelp) {
    std::fputs(usage_text(), stdout);
    return 0;
  }
  try {
    if (dc.action != Action::kRun) return client_action(dc);
    const std::filesystem::path base = uroce::runtime::runtime_base(true);
    if (dc.daemon) return launch_daemon(dc, base);
    int rc = 1;
    {
      Daemon d(dc, base);
      bool already = false;
      if (!d.start(&err, &already)) {
        std::fprintf(stderr, "uroced: %s\n", err.c_str());
        return already ? 0 : 1;
      }
      rc = d.run();
    }
    std::fflush(nullptr);
    _exit(rc);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "uroced: %s\n", e.what());
    return 1;
  }
}
