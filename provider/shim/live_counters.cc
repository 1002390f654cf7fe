// Asks the running uroce processes for their counters and QPs (live_counters.h). No libstdc++: fixed buffers,
// the runtime directory found with runtime/runtime_dir_rule.h, and scanners for the flat
// "name":number pairs of the {"cmd":"hw_counters"} and {"cmd":"qps"} replies.
#define _GNU_SOURCE 1
#include "provider/shim/live_counters.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "provider/shim/sysfs_env.h"
#include "runtime/runtime_dir_rule.h"

namespace uroce::shim {
namespace {

// <runtime dir>/ctl of this user, by rule 1 of runtime/runtime_dir.h (the first candidate that is a real
// directory of ours with mode 0700). A reader never creates it: with none usable no process can be serving.
bool ctl_dir(char* buf, size_t size) {
  char parent[PATH_MAX];
  if (!runtime::runtime_parent(parent, sizeof parent)) return false;
  for (int i = 0; i <= runtime::kFallbacks; ++i) {
    char cand[PATH_MAX];
    struct stat st {};
    if (!runtime::runtime_candidate(parent, i, cand, sizeof cand)) return false;
    if (lstat(cand, &st) != 0 || !runtime::usable_candidate(st)) continue;
    return snprintf(buf, size, "%s/ctl", cand) < static_cast<int>(size);
  }
  return false;
}

// "<pid>-<dev>.sock" -> pid, else 0.
pid_t socket_pid(const char* name, const char* dev) {
  pid_t pid = 0;
  const char* p = name;
  for (; *p >= '0' && *p <= '9'; ++p) pid = pid * 10 + (*p - '0');
  if (p == name || *p != '-') return 0;
  const size_t dl = std::strlen(dev);
  if (std::strncmp(p + 1, dev, dl) != 0 || std::strcmp(p + 1 + dl, ".sock") != 0) return 0;
  return pid;
}

// Adds the "name":number pairs of one reply line to out[]. Unknown names, strings and other values are
// skipped; the reply's names are unique (transport/counters.h).
void add_reply(const char* s, uint64_t* out) {
  while ((s = std::strchr(s, '"')) != nullptr) {
    const char* key = s + 1;
    const char* end = std::strchr(key, '"');
    if (end == nullptr) return;
    s = end + 1;
    if (*s != ':') continue;  // a string value: its closing quote starts the next scan
    ++s;
    if (*s < '0' || *s > '9') continue;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; ++s) v = v * 10 + static_cast<uint64_t>(*s - '0');
    const size_t len = static_cast<size_t>(end - key);
    int i = std_counter_index(key, len, StdCounterKind::kHw);
    if (i < 0) i = std_counter_index(key, len, StdCounterKind::kPma);
    if (i >= 0) out[i] += v;
  }
}

// One request line `req` to the endpoint at sock_path; its reply line, NUL-terminated, in buf. False when the
// process does not answer as expected (or the reply does not fit).
bool request(const char* sock_path, const char* req, char* buf, size_t size) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (std::strlen(sock_path) >= sizeof addr.sun_path) return false;
  std::strcpy(addr.sun_path, sock_path);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const timeval tv{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  const size_t req_len = std::strlen(req);
  size_t got = 0;
  bool ok = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 &&
            send(fd, req, req_len, MSG_NOSIGNAL) == static_cast<ssize_t>(req_len);
  buf[0] = '\0';
  while (ok) {
    const ssize_t n = recv(fd, buf + got, size - 1 - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    got += static_cast<size_t>(n);
    buf[got] = '\0';
    if (std::memchr(buf, '\n', got) != nullptr) break;
    if (got == size - 1) ok = false;
  }
  close(fd);
  return ok && std::strstr(buf, "\"ok\":true") != nullptr;
}

// Calls fn(ctx, path) for the control socket of every live process that has `dev` open.
template <typename Fn>
void for_each_endpoint(const char* dev, Fn fn) {
  char dir[PATH_MAX];
  if (!ctl_dir(dir, sizeof dir)) return;
  DIR* d = opendir(dir);
  if (d == nullptr) return;
  while (const dirent* e = readdir(d)) {
    const pid_t pid = socket_pid(e->d_name, dev);
    if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM)) continue;  // a dead process's socket
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= static_cast<int>(sizeof path)) continue;
    fn(pid, path);
  }
  closedir(d);
}

// The number after "key": inside [s, end), or 0.
uint32_t field(const char* s, const char* end, const char* key) {
  char pat[32];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const size_t n = std::strlen(pat);
  for (const char* p = s; p + n <= end; ++p) {
    if (std::memcmp(p, pat, n) != 0) continue;
    uint64_t v = 0;
    for (p += n; p < end && *p >= '0' && *p <= '9'; ++p) v = v * 10 + static_cast<uint64_t>(*p - '0');
    return static_cast<uint32_t>(v);
  }
  return 0;
}

}  // namespace

int live_qps(const char* dev, LiveQp* out, int max) {
  int n = 0;
  for_each_endpoint(dev, [&](pid_t pid, const char* path) {
    static constexpr size_t kBuf = 64 * 1024;
    char* buf = static_cast<char*>(malloc(kBuf));
    if (buf == nullptr) return;
    if (request(path, "{\"cmd\":\"qps\"}\n", buf, kBuf)) {
      const char* p = std::strstr(buf, "\"qps\":[");
      // Each QP is one flat object: {"qpn":N,"qp_type":N,...}.
      while (p != nullptr && n < max && (p = std::strchr(p, '{')) != nullptr) {
        const char* end = std::strchr(p, '}');
        if (end == nullptr) break;
        out[n++] = LiveQp{static_cast<uint32_t>(pid), field(p, end, "qpn"),      field(p, end, "qp_type"),
                          field(p, end, "qp_state"),  field(p, end, "dest_qpn"), field(p, end, "sq_psn"),
                          field(p, end, "rq_psn")};
        p = end;
      }
    }
    free(buf);
  });
  return n;
}

int std_counter_index(const char* name, size_t len, StdCounterKind kind) {
  for (size_t i = 0; i < kStdCounterCount; ++i) {
    const StdCounter& c = kStdCounters[i];
    if (c.kind == kind && std::strlen(c.name) == len && std::memcmp(c.name, name, len) == 0)
      return static_cast<int>(i);
  }
  return -1;
}

int live_counters(const char* dev, uint64_t out[kStdCounterCount]) {
  for (size_t i = 0; i < kStdCounterCount; ++i) out[i] = 0;
  int answered = 0;
  for_each_endpoint(dev, [&](pid_t, const char* path) {
    char buf[8192];
    if (!request(path, "{\"cmd\":\"hw_counters\"}\n", buf, sizeof buf)) return;
    add_reply(buf, out);
    ++answered;
  });
  return answered;
}

bool open_counter_file(const char* path, int flags, int* fd) {
  size_t root_len = 0;
  const char* root = sysfs_root(&root_len);
  if (root == nullptr || path == nullptr || std::strncmp(path, root, root_len) != 0) return false;
  static constexpr char kClass[] = "/class/infiniband/";
  const char* p = path + root_len;
  if (std::strncmp(p, kClass, sizeof kClass - 1) != 0) return false;
  p += sizeof kClass - 1;
  // <dev>/ports/<n>/{hw_counters,counters}/<name>
  const char* slash = std::strchr(p, '/');
  if (slash == nullptr || slash == p || static_cast<size_t>(slash - p) >= 64) return false;
  char dev[64];
  std::memcpy(dev, p, static_cast<size_t>(slash - p));
  dev[slash - p] = '\0';
  p = slash + 1;
  if (std::strncmp(p, "ports/", 6) != 0) return false;
  p += 6;
  if (*p < '0' || *p > '9') return false;
  while (*p >= '0' && *p <= '9') ++p;
  StdCounterKind kind;
  if (std::strncmp(p, "/hw_counters/", 13) == 0) {
    kind = StdCounterKind::kHw;
    p += 13;
  } else if (std::strncmp(p, "/counters/", 10) == 0) {
    kind = StdCounterKind::kPma;
    p += 10;
  } else {
    return false;
  }
  const int idx = std_counter_index(p, std::strlen(p), kind);
  if (idx < 0 || (flags & O_ACCMODE) != O_RDONLY || (flags & (O_DIRECTORY | O_CREAT)) != 0) return false;
  uint64_t v[kStdCounterCount];
  live_counters(dev, v);
  char text[32];
  const int len = snprintf(text, sizeof text, "%llu\n", static_cast<unsigned long long>(v[idx]));
  *fd = memfd_create("uroce-counter", (flags & O_CLOEXEC) != 0 ? MFD_CLOEXEC : 0);
  if (*fd < 0) return true;
  if (write(*fd, text, static_cast<size_t>(len)) != len || lseek(*fd, 0, SEEK_SET) != 0) {
    const int err = errno;
    close(*fd);
    *fd = -1;
    errno = err != 0 ? err : EIO;
  }
  return true;
}

}  // namespace uroce::shim
