// Redirects reads of the real /sys/class/infiniband[/...] and /sys/class/infiniband_verbs[/...] to
// $SYSFS_PATH/class/... . NCCL and UCX read GID types, ndevs and port attributes there directly instead of
// through libibverbs. Only absolute paths with exactly those prefixes change; libibverbs itself builds
// its paths from $SYSFS_PATH (or opens relative to a directory fd), so it never matches.
//
// The device node libibverbs stats and opens, /dev/infiniband/uroce_verbsN, is answered by /dev/full,
// the device it stands for (runtime/dev_node.h): so under `uroce run` nobody has to make the node, which
// needs root (`uroce setup`).
//
// Interposed: the calls that take a path, as glibc 2.36 exports them (including the pre-2.33 __xstat
// family and the _FORTIFY_SOURCE entry points that binaries built against older or hardened headers use).
#undef _FORTIFY_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "provider/shim/live_counters.h"
#include "provider/shim/next.h"
#include "provider/shim/sysfs_env.h"
#include "provider/shim/ucma.h"
#include "runtime/dev_node.h"

namespace uroce::shim {
namespace {

constexpr char kClassPrefix[] = "/sys/class/infiniband";
constexpr size_t kClassPrefixLen = sizeof kClassPrefix - 1;
constexpr size_t kSysLen = 4;  // "/sys", replaced by the tree root

bool under_ib_class(const char* p) {
  if (p == nullptr || std::strncmp(p, kClassPrefix, kClassPrefixLen) != 0) return false;
  const char* rest = p + kClassPrefixLen;
  if (std::strncmp(rest, "_verbs", 6) == 0) rest += 6;
  return *rest == '\0' || *rest == '/';
}

// The path to use instead of `path`: itself, or the rewritten one in buf_. ok() is false when the
// rewritten path does not fit PATH_MAX (the caller fails with ENAMETOOLONG).
class Redirect {
 public:
  explicit Redirect(const char* path) : path_(path) {
    size_t root_len = 0;
    if (path != nullptr && runtime::is_uverbs_node(path)) {
      if (sysfs_root(&root_len) != nullptr) path_ = runtime::kStandInNode;
      return;
    }
    const char* root = under_ib_class(path) ? sysfs_root(&root_len) : nullptr;
    if (root == nullptr) return;
    const size_t tail_len = std::strlen(path + kSysLen);
    if (root_len + tail_len + 1 > sizeof buf_) {
      ok_ = false;
      return;
    }
    std::memcpy(buf_, root, root_len);
    std::memcpy(buf_ + root_len, path + kSysLen, tail_len + 1);
    path_ = buf_;
  }
  bool ok() const { return ok_; }
  const char* path() const { return path_; }
  bool redirected() const { return path_ == buf_; }

 private:
  const char* path_;
  bool ok_ = true;
  char buf_[PATH_MAX];
};

template <typename T>
T too_long(T result) {
  errno = ENAMETOOLONG;
  return result;
}

bool needs_mode(int flags) { return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE; }

constinit NextSym s_open{"open"}, s_open64{"open64"}, s_open_2{"__open_2"}, s_open64_2{"__open64_2"};
constinit NextSym s_openat{"openat"}, s_openat64{"openat64"}, s_openat_2{"__openat_2"},
    s_openat64_2{"__openat64_2"};
constinit NextSym s_fopen{"fopen"}, s_fopen64{"fopen64"}, s_opendir{"opendir"};
constinit NextSym s_stat{"stat"}, s_lstat{"lstat"}, s_stat64{"stat64"}, s_lstat64{"lstat64"};
constinit NextSym s_fstatat{"fstatat"}, s_fstatat64{"fstatat64"}, s_statx{"statx"};
constinit NextSym s_xstat{"__xstat"}, s_lxstat{"__lxstat"}, s_xstat64{"__xstat64"}, s_lxstat64{"__lxstat64"};
constinit NextSym s_fxstatat{"__fxstatat"}, s_fxstatat64{"__fxstatat64"};
constinit NextSym s_access{"access"}, s_faccessat{"faccessat"};
constinit NextSym s_readlink{"readlink"}, s_readlinkat{"readlinkat"};
constinit NextSym s_realpath{"realpath"}, s_realpath_chk{"__realpath_chk"};

NextSym* const kAll[] = {&s_open,      &s_open64,    &s_open_2,     &s_open64_2,   &s_openat,
                         &s_openat64,  &s_openat_2,  &s_openat64_2, &s_fopen,      &s_fopen64,
                         &s_opendir,   &s_stat,      &s_lstat,      &s_stat64,     &s_lstat64,
                         &s_fstatat,   &s_fstatat64, &s_statx,      &s_xstat,      &s_lxstat,
                         &s_xstat64,   &s_lxstat64,  &s_fxstatat,   &s_fxstatat64, &s_access,
                         &s_faccessat, &s_readlink,  &s_readlinkat, &s_realpath,   &s_realpath_chk};

// Resolve everything before main() so that no interposer calls dlsym while, say, a malloc
// implementation initialises itself by reading a file. Calls made even earlier resolve lazily.
__attribute__((constructor)) void resolve_all() {
  for (NextSym* s : kAll) next<void>(*s);
}

}  // namespace
}  // namespace uroce::shim

using uroce::shim::needs_mode;
using uroce::shim::next;
using uroce::shim::Redirect;
using uroce::shim::too_long;
namespace s = uroce::shim;

// __xstat and friends are no longer declared by glibc 2.33+ headers but still exported for old binaries.
extern "C" {
int __xstat(int ver, const char* path, struct stat* buf);
int __lxstat(int ver, const char* path, struct stat* buf);
int __xstat64(int ver, const char* path, struct stat64* buf);
int __lxstat64(int ver, const char* path, struct stat64* buf);
int __fxstatat(int ver, int dirfd, const char* path, struct stat* buf, int flags);
int __fxstatat64(int ver, int dirfd, const char* path, struct stat64* buf, int flags);
int __open_2(const char* path, int flags);
int __open64_2(const char* path, int flags);
int __openat_2(int dirfd, const char* path, int flags);
int __openat64_2(int dirfd, const char* path, int flags);
char* __realpath_chk(const char* path, char* resolved, size_t resolved_len);
}

#define UROCE_MODE_ARG(last)   \
  mode_t mode = 0;             \
  if (needs_mode(last)) {      \
    va_list ap;                \
    va_start(ap, last);        \
    mode = va_arg(ap, mode_t); \
    va_end(ap);                \
  }

// The RDMA CM device is the shim's own (ucma_channel.cc): open() of it returns an event channel.
#define UROCE_UCMA_OPEN(flags) \
  if (int fd = -1; uroce::shim::ucma::open_cdev(path, flags, &fd)) return fd

// Body of an interposer: redirects `path` into r, then calls the next definition of `fn` with the
// arguments given (which use r.path()); `err` is the failure value.
#define UROCE_FORWARD(sym, fn, err, ...) \
  Redirect r(path);                      \
  if (!r.ok()) return too_long(err);     \
  auto* real = next<decltype(fn)>(sym);  \
  if (real == nullptr) {                 \
    errno = ENOSYS;                      \
    return err;                          \
  }                                      \
  return real(__VA_ARGS__)

// An open() interposer: UROCE_FORWARD, except that a hw_counters/ or counters/ file opened for reading as
// /sys/class/infiniband/... gets a file with the live value (live_counters.h). Opened by its path in the
// tree it reads the placeholder "0", which is what `uroce run` compares when it checks an existing tree.
#define UROCE_FORWARD_OPEN(sym, fn, flags, ...)                                                     \
  Redirect r(path);                                                                                 \
  if (!r.ok()) return too_long(-1);                                                                 \
  if (int cfd; r.redirected() && uroce::shim::open_counter_file(r.path(), flags, &cfd)) return cfd; \
  auto* real = next<decltype(fn)>(sym);                                                             \
  if (real == nullptr) {                                                                            \
    errno = ENOSYS;                                                                                 \
    return -1;                                                                                      \
  }                                                                                                 \
  return real(__VA_ARGS__)

// fopen() of a counter file: the open flags its mode means, when it only reads.
inline bool fopen_reads_only(const char* mode, int* flags) {
  if (mode == nullptr || mode[0] != 'r' || std::strpbrk(mode, "+wax") != nullptr) return false;
  *flags = O_RDONLY | (std::strchr(mode, 'e') != nullptr ? O_CLOEXEC : 0);
  return true;
}

#define UROCE_COUNTER_FOPEN()                                                     \
  if (int fl, cfd; fopen_reads_only(mode, &fl)) {                                 \
    Redirect rc(path);                                                            \
    if (rc.redirected() && uroce::shim::open_counter_file(rc.path(), fl, &cfd)) { \
      if (cfd < 0) return nullptr;                                                \
      FILE* f = fdopen(cfd, mode);                                                \
      if (f == nullptr) close(cfd);                                               \
      return f;                                                                   \
    }                                                                             \
  }

extern "C" {

UROCE_EXPORT int open(const char* path, int flags, ...) {
  UROCE_MODE_ARG(flags);
  UROCE_UCMA_OPEN(flags);
  UROCE_FORWARD_OPEN(s::s_open, open, flags, r.path(), flags, mode);
}
UROCE_EXPORT int open64(const char* path, int flags, ...) {
  UROCE_MODE_ARG(flags);
  UROCE_UCMA_OPEN(flags);
  UROCE_FORWARD_OPEN(s::s_open64, open64, flags, r.path(), flags, mode);
}
UROCE_EXPORT int __open_2(const char* path, int flags) {
  UROCE_UCMA_OPEN(flags);
  UROCE_FORWARD_OPEN(s::s_open_2, __open_2, flags, r.path(), flags);
}
UROCE_EXPORT int __open64_2(const char* path, int flags) {
  UROCE_UCMA_OPEN(flags);
  UROCE_FORWARD_OPEN(s::s_open64_2, __open64_2, flags, r.path(), flags);
}
UROCE_EXPORT int openat(int dirfd, const char* path, int flags, ...) {
  UROCE_MODE_ARG(flags);
  UROCE_UCMA_OPEN(flags);
  UROCE_FORWARD_OPEN(s::s_openat, openat, flags, dirfd, r.path(), flags, mode);
}
UROCE_EXPORT int openat64(int dirfd, const char* path, int flags, ...) {
  UROCE_MODE_ARG(flags);
  UROCE_UCMA_OPEN(flags);
  UROCE_FORWARD_OPEN(s::s_openat64, openat64, flags, dirfd, r.path(), flags, mode);
}
UROCE_EXPORT int __openat_2(int dirfd, const char* path, int flags) {
  UROCE_UCMA_OPEN(flags);
  UROCE_FORWARD_OPEN(s::s_openat_2, __openat_2, flags, dirfd, r.path(), flags);
}
UROCE_EXPORT int __openat64_2(int dirfd, const char* path, int flags) {
  UROCE_UCMA_OPEN(flags);
  UROCE_FORWARD_OPEN(s::s_openat64_2, __openat64_2, flags, dirfd, r.path(), flags);
}
UROCE_EXPORT FILE* fopen(const char* path, const char* mode) {
  UROCE_COUNTER_FOPEN();
  UROCE_FORWARD(s::s_fopen, fopen, nullptr, r.path(), mode);
}
UROCE_EXPORT FILE* fopen64(const char* path, const char* mode) {
  UROCE_COUNTER_FOPEN();
  UROCE_FORWARD(s::s_fopen64, fopen64, nullptr, r.path(), mode);
}
UROCE_EXPORT DIR* opendir(const char* path) { UROCE_FORWARD(s::s_opendir, opendir, nullptr, r.path()); }

UROCE_EXPORT int stat(const char* path, struct stat* buf) noexcept {
  UROCE_FORWARD(s::s_stat, stat, -1, r.path(), buf);
}
UROCE_EXPORT int lstat(const char* path, struct stat* buf) noexcept {
  UROCE_FORWARD(s::s_lstat, lstat, -1, r.path(), buf);
}
UROCE_EXPORT int stat64(const char* path, struct stat64* buf) noexcept {
  UROCE_FORWARD(s::s_stat64, stat64, -1, r.path(), buf);
}
UROCE_EXPORT int lstat64(const char* path, struct stat64* buf) noexcept {
  UROCE_FORWARD(s::s_lstat64, lstat64, -1, r.path(), buf);
}
UROCE_EXPORT int fstatat(int dirfd, const char* path, struct stat* buf, int flags) noexcept {
  UROCE_FORWARD(s::s_fstatat, fstatat, -1, dirfd, r.path(), buf, flags);
}
UROCE_EXPORT int fstatat64(int dirfd, const char* path, struct stat64* buf, int flags) noexcept {
  UROCE_FORWARD(s::s_fstatat64, fstatat64, -1, dirfd, r.path(), buf, flags);
}
UROCE_EXPORT int statx(int dirfd, const char* path, int flags, unsigned int mask,
                       struct statx* buf) noexcept {
  UROCE_FORWARD(s::s_statx, statx, -1, dirfd, r.path(), flags, mask, buf);
}
UROCE_EXPORT int __xstat(int ver, const char* path, struct stat* buf) {
  UROCE_FORWARD(s::s_xstat, __xstat, -1, ver, r.path(), buf);
}
UROCE_EXPORT int __lxstat(int ver, const char* path, struct stat* buf) {
  UROCE_FORWARD(s::s_lxstat, __lxstat, -1, ver, r.path(), buf);
}
UROCE_EXPORT int __xstat64(int ver, const char* path, struct stat64* buf) {
  UROCE_FORWARD(s::s_xstat64, __xstat64, -1, ver, r.path(), buf);
}
UROCE_EXPORT int __lxstat64(int ver, const char* path, struct stat64* buf) {
  UROCE_FORWARD(s::s_lxstat64, __lxstat64, -1, ver, r.path(), buf);
}
UROCE_EXPORT int __fxstatat(int ver, int dirfd, const char* path, struct stat* buf, int flags) {
  UROCE_FORWARD(s::s_fxstatat, __fxstatat, -1, ver, dirfd, r.path(), buf, flags);
}
UROCE_EXPORT int __fxstatat64(int ver, int dirfd, const char* path, struct stat64* buf, int flags) {
  UROCE_FORWARD(s::s_fxstatat64, __fxstatat64, -1, ver, dirfd, r.path(), buf, flags);
}

UROCE_EXPORT int access(const char* path, int how) noexcept {
  UROCE_FORWARD(s::s_access, access, -1, r.path(), how);
}
UROCE_EXPORT int faccessat(int dirfd, const char* path, int how, int flags) noexcept {
  UROCE_FORWARD(s::s_faccessat, faccessat, -1, dirfd, r.path(), how, flags);
}
UROCE_EXPORT ssize_t readlink(const char* path, char* buf, size_t len) noexcept {
  UROCE_FORWARD(s::s_readlink, readlink, -1, r.path(), buf, len);
}
UROCE_EXPORT ssize_t readlinkat(int dirfd, const char* path, char* buf, size_t len) noexcept {
  UROCE_FORWARD(s::s_readlinkat, readlinkat, -1, dirfd, r.path(), buf, len);
}
UROCE_EXPORT char* realpath(const char* path, char* resolved) noexcept {
  UROCE_FORWARD(s::s_realpath, realpath, nullptr, r.path(), resolved);
}
UROCE_EXPORT char* __realpath_chk(const char* path, char* resolved, size_t resolved_len) {
  UROCE_FORWARD(s::s_realpath_chk, __realpath_chk, nullptr, r.path(), resolved, resolved_len);
}

}  // extern "C"
