#include "tests/tools/process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace uroce::test {

ProcResult run_process(const std::vector<std::string>& argv, const ProcEnv& env) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork");
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    for (const auto& name : env.unset) unsetenv(name.c_str());
    for (const auto& [name, value] : env.set) setenv(name.c_str(), value.c_str(), 1);
    if (env.uid != static_cast<uid_t>(-1) && (setgid(env.uid) != 0 || setuid(env.uid) != 0)) _exit(125);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);

  ProcResult r;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  // Bounded: a child that neither exits nor closes its output in time is killed and reported, so a
  // hang fails the test that ran it instead of blocking until ctest's TIMEOUT kills the whole binary.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(env.timeout_s);
  bool timed_out = false;
  while (open_fds > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      kill(pid, SIGKILL);
      for (auto& p : fds)
        if (p.fd >= 0) close(p.fd);
      break;
    }
    if (poll(fds, 2, static_cast<int>(left.count())) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (timed_out)
    r.err += "\n[run_process: " + argv[0] + " killed after " + std::to_string(env.timeout_s) + " s]\n";
  return r;
}

TempDir::TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp") + "/uroce-test.XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const std::filesystem::path& p, const std::string& content) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << content;
}

}  // namespace uroce::test
