// uroce capture: makes one running uroce device write a pcap of every frame it sends and receives
// (provider/capture.h), until a frame count, a duration or Ctrl-C. The file is created here, with the
// rights of the user running the command, and its descriptor is passed to the engine.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "tools/observe/ctl_client.h"
#include "tools/observe/observe_args.h"
#include "tools/uroce/cli.h"
#include "tools/uroce/commands.h"

namespace uroce::tools {

using json = nlohmann::ordered_json;

namespace {

std::atomic<bool> g_interrupted{false};

void on_signal(int) { g_interrupted = true; }

// Records in a pcap file written by the engine (host byte order, as it wrote them); -1 if unreadable.
long count_records(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return -1;
  long n = 0;
  uint32_t rec[4];
  if (std::fseek(f, 24, SEEK_SET) == 0)
    while (std::fread(rec, sizeof(rec), 1, f) == 1 && std::fseek(f, rec[2], SEEK_CUR) == 0) ++n;
  std::fclose(f);
  return n;
}

Endpoint pick_endpoint(const CaptureArgs& a) {
  const auto dir = control_dir();
  const auto found = find_endpoints(dir, a.pid, a.dev);
  if (found.empty())
    throw std::runtime_error(std::string("no running uroce process") +
                             (a.pid || !a.dev.empty() ? " matches" : "") + " (sockets in " + dir.string() +
                             ")");
  if (found.size() > 1) {
    std::string list;
    for (const auto& e : found) list += "\n  " + describe(e);
    throw UsageError("several uroce devices are open; choose one with --pid (and --dev):" + list);
  }
  return found[0];
}

// Creates the capture file for the engine with this user's rights: a new file, mode 0600, never through a
// symbolic link. An existing file is an error unless --force, which replaces a regular file only.
// *created says whether the file is new (removed again if the capture cannot start).
int create_capture_file(const std::string& path, bool force, bool* created) {
  *created = false;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) {
    *created = true;
    return fd;
  }
  if (errno != EEXIST) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  struct stat st {};
  const bool seen = lstat(path.c_str(), &st) == 0;
  if (seen && S_ISLNK(st.st_mode))
    throw std::runtime_error(path + " is a symbolic link; uroce capture never writes through one" +
                             std::string(force ? " (not even with --force)" : "") +
                             ": remove it or choose another name");
  if (!force)
    throw std::runtime_error(path +
                             " already exists; uroce capture does not overwrite files (--force replaces a "
                             "regular file)");
  if (seen && !S_ISREG(st.st_mode))
    throw std::runtime_error(path + " is not a regular file; --force replaces regular files only");
  // O_NONBLOCK: a FIFO that replaced the file since lstat must not hang us; O_NOFOLLOW: nor a link.
  fd = ::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error(path + " is not a regular file; --force replaces regular files only");
  }
  if (fcntl(fd, F_SETFL, 0) != 0 || ftruncate(fd, 0) != 0) {
    const int e = errno;
    ::close(fd);
    throw std::runtime_error("cannot truncate " + path + ": " + std::strerror(e));
  }
  return fd;
}

}  // namespace

int cmd_capture(const std::vector<std::string>& args) {
  const CaptureArgs a = parse_capture_args(args);
  const Endpoint ep = pick_endpoint(a);
  // The engine opens the file: give it a name that does not depend on our working directory.
  const std::string path = std::filesystem::absolute(a.file).lexically_normal().string();

  struct sigaction sa {};
  sa.sa_handler = on_signal;  // no SA_RESTART: poll() returns early
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  ControlClient c(ep);
  json start = {{"cmd", "capture_start"}, {"path", path}, {"count", a.count}};
  if (a.snaplen) start["snaplen"] = a.snaplen;
  bool created = false;
  const int file_fd = create_capture_file(path, a.force, &created);
  json r;
  try {
    r = c.request(start, file_fd);
  } catch (...) {
    ::close(file_fd);
    if (created) unlink(path.c_str());
    throw;
  }
  ::close(file_fd);  // the engine has its own copy of the descriptor now
  if (!r.value("ok", false)) {
    if (created) unlink(path.c_str());
    std::fprintf(stderr, "uroce capture: %s: %s\n", describe(ep).c_str(), r.value("error", "?").c_str());
    return 1;
  }
  std::fprintf(stderr, "uroce capture: %s -> %s (snaplen %u)%s\n", describe(ep).c_str(), path.c_str(),
               r.value("snaplen", 0u),
               a.count        ? ""
               : a.duration_s ? ""
                              : ", Ctrl-C to stop");

  // The program may exit (or close the device) at any time; the engine completes the file then.
  auto ended_with_process = [&] {
    std::fprintf(stderr, "uroce capture: %s exited; the capture ended with it\n", describe(ep).c_str());
    std::printf("%ld frames written to %s\n", count_records(path), path.c_str());
    return 0;
  };
  json done;
  try {
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      if (g_interrupted) break;
      if (a.duration_s &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >= a.duration_s)
        break;
      pollfd p{c.fd(), POLLIN, 0};
      if (poll(&p, 1, 100) > 0) return ended_with_process();  // the engine never speaks unasked
      const json st = c.request({{"cmd", "capture_status"}});
      if (!st.value("active", false)) break;  // the count was reached
    }
    done = c.request({{"cmd", "capture_stop"}});
  } catch (const ControlClosed&) {
    return ended_with_process();
  }
  if (!done.value("ok", false)) {
    std::fprintf(stderr, "uroce capture: %s\n", done.value("error", "?").c_str());
    return 1;
  }
  const uint64_t frames = done.value("frames", uint64_t{0}), dropped = done.value("dropped", uint64_t{0});
  std::printf("%lu frames written to %s\n", static_cast<unsigned long>(frames), path.c_str());
  if (dropped)
    std::printf("%lu frames were not captured (the capture ring was full; try a smaller --snaplen)\n",
                static_cast<unsigned long>(dropped));
  return 0;
}

}  // namespace uroce::tools
