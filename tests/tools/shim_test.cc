// liburoce-preload.so, loaded the way `uroce run` loads it (LD_PRELOAD; main() re-executes this test
// with it): /sys/class/infiniband redirection through every interposed call, the completion channel's
// pipe and record format, the live hw_counters/ and counters/ files, RDMA netlink (refused to libnl, emulated
// for everyone else), and that ordinary programs run unharmed under it.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <linux/netlink.h>
#include <poll.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

#include "provider/shim/uroce_shim.h"
#include "tests/tools/process.h"

extern "C" {
extern int uroce_fake_verbs_calls;
extern ibv_comp_channel uroce_fake_verbs_channel;
int __open_2(const char* path, int flags);
int __xstat(int ver, const char* path, struct stat* buf);
}

namespace uroce::test {
namespace {
namespace fs = std::filesystem;

uroce_comp_channel_notify_fn notify_fn() {
  return reinterpret_cast<uroce_comp_channel_notify_fn>(
      dlsym(RTLD_DEFAULT, UROCE_COMP_CHANNEL_NOTIFY_SYMBOL));
}

class ShimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (notify_fn() == nullptr) GTEST_SKIP() << "liburoce-preload.so is not built or not preloaded";
  }
};

// ---- /sys/class/infiniband redirection ----

class SysfsRedirect : public ShimTest {
 protected:
  void SetUp() override {
    ShimTest::SetUp();
    if (IsSkipped()) return;
    write_text(tree() / "class/infiniband/uroce0/ports/1/gid_attrs/types/0", "RoCE v2\n");
    write_text(tree() / "class/infiniband_verbs/abi_version", "6\n");
    write_text(tree() / "class/infiniband_x/attr", "x\n");
    fs::create_symlink("../../devices/virtual/uroce0", tree() / "class/infiniband/uroce0/device");
    setenv("SYSFS_PATH", (tree().string() + "//").c_str(), 1);  // trailing slashes are ignored
  }
  void TearDown() override { unsetenv("SYSFS_PATH"); }

  fs::path tree() const { return tmp_.path() / "sysfs"; }
  static std::string read_fd(int fd) {
    char buf[64] = {};
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }
  static std::string read_stream(FILE* f) {
    if (f == nullptr) return "";
    char buf[64] = {};
    const char* got = fgets(buf, sizeof buf, f);
    fclose(f);
    return got != nullptr ? buf : "";
  }
  ino_t inode(const fs::path& p) const {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? st.st_ino : 0;
  }

  static constexpr const char* kType0 = "/sys/class/infiniband/uroce0/ports/1/gid_attrs/types/0";
  TempDir tmp_;
};

TEST_F(SysfsRedirect, OpenFamily) {
  EXPECT_EQ(read_fd(open(kType0, O_RDONLY)), "RoCE v2\n");
  EXPECT_EQ(read_fd(open64(kType0, O_RDONLY | O_CLOEXEC)), "RoCE v2\n");
  EXPECT_EQ(read_fd(__open_2(kType0, O_RDONLY)), "RoCE v2\n");
  EXPECT_EQ(read_fd(openat(AT_FDCWD, kType0, O_RDONLY)), "RoCE v2\n");
  const int dirfd = ::open("/", O_RDONLY | O_DIRECTORY);
  EXPECT_EQ(read_fd(openat64(dirfd, kType0, O_RDONLY)), "RoCE v2\n");  // absolute: dirfd is ignored
  close(dirfd);
  EXPECT_EQ(read_stream(fopen(kType0, "r")), "RoCE v2\n");
  EXPECT_EQ(read_stream(fopen64(kType0, "re")), "RoCE v2\n");
  std::ifstream in(kType0);  // what NCCL does
  std::string word;
  in >> word;
  EXPECT_EQ(word, "RoCE");
  EXPECT_EQ(read_fd(open("/sys/class/infiniband_verbs/abi_version", O_RDONLY)), "6\n");
}

// A uroce process's control endpoint as the shim finds it
// (<XDG_RUNTIME_DIR>/uroce-<uid>/ctl/<pid>-uroce0.sock, pid = this process): answers `count` connections with
// `reply`.
class FakeEndpoint {
 public:
  FakeEndpoint(const fs::path& xdg, std::string reply, int count) {
    const fs::path base = xdg / ("uroce-" + std::to_string(getuid()));
    fs::create_directories(base / "ctl");
    chmod(base.c_str(), 0700);
    path_ = base / "ctl" / (std::to_string(getpid()) + "-uroce0.sock");
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path_.c_str());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(fd_, 4), 0);
    thread_ = std::thread([this, reply, count] {
      for (int i = 0; i < count; ++i) {
        const int c = accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        char buf[256];
        (void)!::recv(c, buf, sizeof buf, 0);
        const std::string line = reply + "\n";
        (void)!::send(c, line.data(), line.size(), MSG_NOSIGNAL);
        close(c);
      }
    });
  }
  ~FakeEndpoint() {
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
    fs::remove(path_);
  }

 private:
  fs::path path_;
  int fd_ = -1;
  std::thread thread_;
};

TEST_F(SysfsRedirect, CounterFilesReadTheLiveValues) {
  const fs::path port = tree() / "class/infiniband/uroce0/ports/1";
  write_text(port / "hw_counters/np_cnp_sent", "0\n");
  write_text(port / "counters/port_xmit_data", "0\n");
  TempDir xdg;
  setenv("XDG_RUNTIME_DIR", xdg.path().c_str(), 1);
  constexpr const char* kCnp = "/sys/class/infiniband/uroce0/ports/1/hw_counters/np_cnp_sent";
  constexpr const char* kData = "/sys/class/infiniband/uroce0/ports/1/counters/port_xmit_data";
  EXPECT_EQ(read_fd(open(kCnp, O_RDONLY)), "0\n");  // no process runs
  {
    FakeEndpoint ep(xdg.path(),
                    R"({"ok":true,"dev":"uroce0","port":1,"hw_counters":{"np_cnp_sent":41,"sent_pkts":9},)"
                    R"("counters":{"port_xmit_data":1234}})",
                    4);
    EXPECT_EQ(read_fd(open(kCnp, O_RDONLY)), "41\n");
    EXPECT_EQ(read_fd(openat(AT_FDCWD, kData, O_RDONLY | O_CLOEXEC)), "1234\n");
    EXPECT_EQ(read_stream(fopen(kCnp, "re")), "41\n");
    // The tree's own path, and a name that is no counter, read the file itself.
    EXPECT_EQ(read_fd(open((port / "hw_counters/np_cnp_sent").c_str(), O_RDONLY)), "0\n");
    EXPECT_EQ(read_fd(open(kType0, O_RDONLY)), "RoCE v2\n");
    EXPECT_EQ(read_fd(open(kCnp, O_RDONLY)), "41\n");
  }
  unsetenv("XDG_RUNTIME_DIR");
}

TEST_F(SysfsRedirect, StatAccessLinksAndRealpath) {
  const fs::path real = tree() / "class/infiniband/uroce0/ports/1/gid_attrs/types/0";
  const ino_t ino = inode(real);
  ASSERT_NE(ino, 0u);
  struct stat st {};
  struct stat64 st64 {};
  struct statx stx {};
  EXPECT_EQ(::stat(kType0, &st), 0);
  EXPECT_EQ(st.st_ino, ino);
  EXPECT_EQ(lstat(kType0, &st), 0);
  EXPECT_EQ(st.st_ino, ino);
  EXPECT_EQ(stat64(kType0, &st64), 0);
  EXPECT_EQ(st64.st_ino, ino);
  EXPECT_EQ(fstatat(AT_FDCWD, kType0, &st, 0), 0);
  EXPECT_EQ(st.st_ino, ino);
  EXPECT_EQ(__xstat(1, kType0, &st), 0);  // _STAT_VER on x86_64
  EXPECT_EQ(st.st_ino, ino);
  EXPECT_EQ(statx(AT_FDCWD, kType0, 0, STATX_INO, &stx), 0);
  EXPECT_EQ(stx.stx_ino, ino);
  EXPECT_EQ(access(kType0, R_OK), 0);
  EXPECT_EQ(faccessat(AT_FDCWD, kType0, R_OK, 0), 0);
  EXPECT_TRUE(fs::is_directory("/sys/class/infiniband/uroce0"));

  char buf[PATH_MAX] = {};
  const ssize_t n = readlink("/sys/class/infiniband/uroce0/device", buf, sizeof buf - 1);
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), "../../devices/virtual/uroce0");
  char* resolved = realpath("/sys/class/infiniband/uroce0/ports", nullptr);
  ASSERT_NE(resolved, nullptr);
  EXPECT_EQ(std::string(resolved), fs::canonical(tree() / "class/infiniband/uroce0/ports").string());
  free(resolved);
}

TEST_F(SysfsRedirect, DirectoryListings) {
  auto list = [](const char* path) {
    std::set<std::string> names;
    DIR* d = opendir(path);
    if (d == nullptr) return names;
    while (const dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.insert(e->d_name);
    }
    closedir(d);
    return names;
  };
  EXPECT_EQ(list("/sys/class/infiniband"), std::set<std::string>{"uroce0"});
  EXPECT_EQ(list("/sys/class/infiniband/"), std::set<std::string>{"uroce0"});
  EXPECT_EQ(list("/sys/class/infiniband_verbs"), std::set<std::string>{"abi_version"});
}

TEST_F(SysfsRedirect, OnlyTheTwoClassesAndOnlyWithAnotherTree) {
  errno = 0;
  EXPECT_EQ(open("/sys/class/infiniband_x/attr", O_RDONLY), -1) << "infiniband_x is not redirected";
  EXPECT_EQ(errno, ENOENT);
  EXPECT_EQ(open("sys/class/infiniband/uroce0/node_type", O_RDONLY), -1) << "relative paths are not";
  struct stat st {};
  EXPECT_EQ(::stat("/sys/class", &st), 0) << "the rest of /sys is the real one";
  const std::string direct = (tree() / "class/infiniband_verbs/abi_version").string();
  EXPECT_EQ(read_fd(open(direct.c_str(), O_RDONLY)), "6\n") << "libibverbs' own $SYSFS_PATH paths";

  for (const char* off : {"", "/sys", "/sys/", "relative/dir"}) {
    setenv("SYSFS_PATH", off, 1);
    EXPECT_NE(inode(kType0), inode(tree() / "class/infiniband/uroce0/ports/1/gid_attrs/types/0")) << off;
  }
  unsetenv("SYSFS_PATH");
  EXPECT_EQ(open(kType0, O_RDONLY), -1);
}

TEST_F(SysfsRedirect, TooLongAndNullPaths) {
  setenv("SYSFS_PATH", ("/" + std::string(PATH_MAX - 30, 'a')).c_str(), 1);
  errno = 0;
  EXPECT_EQ(open(("/sys/class/infiniband/" + std::string(40, 'b')).c_str(), O_RDONLY), -1);
  EXPECT_EQ(errno, ENAMETOOLONG);
#if !defined(__SANITIZE_ADDRESS__)  // UBSan (built with ASan here) rejects the deliberate null argument
  const char* volatile null_path = nullptr;
  struct stat st {};
  errno = 0;
  EXPECT_EQ(::stat(null_path, &st), -1);
  EXPECT_EQ(errno, EFAULT);
#endif
}

// ---- completion channels ----

class CompChannel : public ShimTest {
 protected:
  void SetUp() override {
    ShimTest::SetUp();
    if (IsSkipped()) return;
    std::snprintf(uroce_dev_.name, sizeof uroce_dev_.name, "uroce0");
    std::snprintf(other_dev_.name, sizeof other_dev_.name, "mlx5_0");
    uroce_ctx_.device = &uroce_dev_;
    other_ctx_.device = &other_dev_;
    pthread_mutex_init(&uroce_ctx_.mutex, nullptr);
    pthread_mutex_init(&other_ctx_.mutex, nullptr);
  }
  ibv_device uroce_dev_{}, other_dev_{};
  ibv_context uroce_ctx_{}, other_ctx_{};
};

TEST_F(CompChannel, UroceChannelIsABlockingCloexecPipe) {
  ibv_comp_channel* ch = ibv_create_comp_channel(&uroce_ctx_);
  ASSERT_NE(ch, nullptr);
  EXPECT_EQ(ch->context, &uroce_ctx_);
  EXPECT_EQ(ch->refcnt, 0);
  struct stat st {};
  ASSERT_EQ(fstat(ch->fd, &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_NE(fcntl(ch->fd, F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_EQ(fcntl(ch->fd, F_GETFL) & O_NONBLOCK, 0);
  EXPECT_EQ(fcntl(ch->fd, F_GETFL) & O_ACCMODE, O_RDONLY);
  EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
}

TEST_F(CompChannel, NotifyWritesTheRecordIbvGetCqEventReads) {
  ibv_comp_channel* ch = ibv_create_comp_channel(&uroce_ctx_);
  ASSERT_NE(ch, nullptr);
  pollfd pfd{ch->fd, POLLIN, 0};
  EXPECT_EQ(poll(&pfd, 1, 0), 0);

  ibv_cq cq_a{}, cq_b{};
  EXPECT_EQ(notify_fn()(ch, &cq_a), 0);
  EXPECT_EQ(notify_fn()(ch, &cq_b), 0);
  EXPECT_EQ(poll(&pfd, 1, 0), 1);
  ib_uverbs_comp_event_desc ev[2] = {};
  ASSERT_EQ(read(ch->fd, ev, sizeof ev), 16);
  EXPECT_EQ(ev[0].cq_handle, reinterpret_cast<uintptr_t>(&cq_a));
  EXPECT_EQ(ev[1].cq_handle, reinterpret_cast<uintptr_t>(&cq_b));
  EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
}

TEST_F(CompChannel, NotifyNeverBlocksAndKeepsErrno) {
  ibv_comp_channel* ch = ibv_create_comp_channel(&uroce_ctx_);
  ASSERT_NE(ch, nullptr);
  ibv_cq cq{};
  int queued = 0;
  int ret = 0;
  errno = EDOM;
  while (queued < 1 << 20 && (ret = notify_fn()(ch, &cq)) == 0) ++queued;
  EXPECT_EQ(ret, -EAGAIN);
  EXPECT_EQ(errno, EDOM);
  EXPECT_GE(queued, 512);
  // Every queued event is there, intact; once the reader drains them the provider can notify again.
  int drained = 0;
  ib_uverbs_comp_event_desc ev{};
  pollfd pfd{ch->fd, POLLIN, 0};
  while (poll(&pfd, 1, 0) == 1 && read(ch->fd, &ev, sizeof ev) == static_cast<ssize_t>(sizeof ev)) {
    EXPECT_EQ(ev.cq_handle, reinterpret_cast<uintptr_t>(&cq));
    ++drained;
  }
  EXPECT_EQ(drained, queued);
  EXPECT_EQ(notify_fn()(ch, &cq), 0);
  EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
}

TEST_F(CompChannel, DestroyIsBusyWhileACqUsesTheChannel) {
  ibv_comp_channel* ch = ibv_create_comp_channel(&uroce_ctx_);
  ASSERT_NE(ch, nullptr);
  const int fd = ch->fd;
  ch->refcnt = 1;  // what libibverbs' ibv_create_cq does under context->mutex
  EXPECT_EQ(ibv_destroy_comp_channel(ch), EBUSY);
  EXPECT_NE(fcntl(fd, F_GETFD), -1) << "a busy channel stays open";
  ch->refcnt = 0;
  EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
  EXPECT_EQ(fcntl(fd, F_GETFD), -1);
}

TEST_F(CompChannel, OtherDevicesGoToLibibverbs) {
  const int calls = uroce_fake_verbs_calls;
  ibv_comp_channel* ch = ibv_create_comp_channel(&other_ctx_);
  EXPECT_EQ(ch, &uroce_fake_verbs_channel);
  EXPECT_EQ(ibv_destroy_comp_channel(ch), 4242);
  EXPECT_EQ(uroce_fake_verbs_calls, calls + 2);

  ibv_cq cq{};
  EXPECT_EQ(notify_fn()(ch, &cq), -EINVAL);
  EXPECT_EQ(notify_fn()(nullptr, &cq), -EINVAL);
}

// ---- RDMA netlink ----

TEST_F(ShimTest, NetlinkRdmaWhileATreeIsActive) {
  TempDir tree, xdg;
  write_text(tree.path() / "class/infiniband/uroce0/node_guid", "0000:7fff:fe01:0001\n");
  write_text(tree.path() / "class/infiniband/uroce0/ports/1/state", "4: ACTIVE\n");
  write_text(tree.path() / "class/infiniband/uroce0/ports/1/phys_state", "5: LinkUp\n");
  setenv("SYSFS_PATH", tree.path().c_str(), 1);
  setenv("XDG_RUNTIME_DIR", xdg.path().c_str(), 1);

  // rdma-core's callers go through libnl-3: refused, so libibverbs and librdmacm read the tree.
  void* nl = dlopen("libnl-3.so.200", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(nl, nullptr) << dlerror();
  auto nl_alloc = reinterpret_cast<void* (*)()>(dlsym(nl, "nl_socket_alloc"));
  auto nl_connect = reinterpret_cast<int (*)(void*, int)>(dlsym(nl, "nl_connect"));
  auto nl_free = reinterpret_cast<void (*)(void*)>(dlsym(nl, "nl_socket_free"));
  ASSERT_TRUE(nl_alloc && nl_connect && nl_free);
  void* sk = nl_alloc();
  EXPECT_LT(nl_connect(sk, NETLINK_RDMA), 0);
  nl_free(sk);

  // Everyone else (iproute2's rdma, through libmnl) gets answers: the device dump.
  const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
  ASSERT_GE(fd, 0);
  sockaddr_nl me{};
  me.nl_family = AF_NETLINK;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me), 0);
  socklen_t len = sizeof me;
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len), 0);
  EXPECT_EQ(len, sizeof me);
  EXPECT_EQ(me.nl_family, AF_NETLINK);
  const uint16_t type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET);
  nlmsghdr req{NLMSG_HDRLEN, type, NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP, 77, 0};
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  EXPECT_EQ(sendto(fd, &req, sizeof req, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel),
            static_cast<ssize_t>(sizeof req));
  std::string name;
  uint32_t ports = 0;
  bool done = false;
  for (int dgram = 0; dgram < 4 && !done; ++dgram) {
    alignas(nlmsghdr) char buf[8192];
    sockaddr_nl from{};
    iovec iov{buf, sizeof buf};
    msghdr msg{};
    msg.msg_name = &from;
    msg.msg_namelen = sizeof from;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    const ssize_t n = recvmsg(fd, &msg, 0);
    ASSERT_GT(n, 0);
    EXPECT_EQ(msg.msg_namelen, sizeof(sockaddr_nl));
    EXPECT_EQ(from.nl_family, AF_NETLINK);
    int left = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      EXPECT_EQ(h->nlmsg_seq, 77u);
      EXPECT_EQ(h->nlmsg_pid, me.nl_pid);
      if (h->nlmsg_type == NLMSG_DONE) {
        done = true;
        break;
      }
      ASSERT_EQ(h->nlmsg_type, type);
      EXPECT_TRUE(h->nlmsg_flags & NLM_F_MULTI);
      int alen = static_cast<int>(NLMSG_PAYLOAD(h, 0));
      for (auto* a = reinterpret_cast<nlattr*>(NLMSG_DATA(h)); alen >= NLA_HDRLEN && a->nla_len <= alen;
           alen -= NLA_ALIGN(a->nla_len),
                 a = reinterpret_cast<nlattr*>(reinterpret_cast<char*>(a) + NLA_ALIGN(a->nla_len))) {
        const char* data = reinterpret_cast<char*>(a) + NLA_HDRLEN;
        if (a->nla_type == RDMA_NLDEV_ATTR_DEV_NAME) name = data;
        if (a->nla_type == RDMA_NLDEV_ATTR_PORT_INDEX) std::memcpy(&ports, data, 4);
      }
    }
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(name, "uroce0");
  EXPECT_EQ(ports, 1u);
  close(fd);
  for (const auto& [domain, type, proto] :
       {std::tuple{AF_NETLINK, SOCK_RAW, NETLINK_ROUTE}, std::tuple{AF_INET, SOCK_DGRAM, 0},
        std::tuple{AF_UNIX, SOCK_STREAM, 0}}) {
    const int other = socket(domain, type, proto);
    EXPECT_GE(other, 0) << domain;
    close(other);
  }
  unsetenv("XDG_RUNTIME_DIR");
  unsetenv("SYSFS_PATH");
  // Now the kernel decides: the shimmed socket() answers exactly as the raw system call does. On a host
  // without RDMA netlink both fail with EPROTONOSUPPORT, which the shim's own refusal also returns, so a
  // SOCK_STREAM request (the kernel refuses it with ESOCKTNOSUPPORT, the shim's refusal would not) shows
  // that the call reached the kernel.
  for (const int type : {SOCK_RAW, SOCK_STREAM}) {
    errno = 0;
    const int raw = static_cast<int>(syscall(SYS_socket, AF_NETLINK, type, NETLINK_RDMA));
    const int raw_errno = raw < 0 ? errno : 0;
    if (raw >= 0) close(raw);
    errno = 0;
    const int fd = socket(AF_NETLINK, type, NETLINK_RDMA);
    const int fd_errno = fd < 0 ? errno : 0;
    if (fd >= 0) close(fd);
    EXPECT_EQ(fd >= 0, raw >= 0) << "type " << type << ": socket() " << fd << ", raw syscall " << raw;
    EXPECT_EQ(fd_errno, raw_errno) << "type " << type << ": socket() errno " << fd_errno
                                   << ", raw syscall errno " << raw_errno;
  }
}

// ---- ordinary programs ----

TEST_F(ShimTest, OrdinaryProgramsRunUnharmed) {
  TempDir tmp;
  write_text(tmp.path() / "class/infiniband/uroce0/node_type", "1: CA\n");
  const std::string script =
      "grep -q liburoce-preload /proc/self/maps && echo preloaded; ls / >/dev/null && stat /sys/class "
      ">/dev/null && "
      "cat /proc/self/status >/dev/null && echo ok";
  for (const bool with_tree : {false, true}) {
    ProcEnv env;
    if (with_tree) {
      env.set = {{"SYSFS_PATH", tmp.path()}};
    } else {
      env.unset = {"SYSFS_PATH"};
    }
    const ProcResult r = run_process({"sh", "-c", script}, env);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "preloaded\nok\n") << r.err;
  }
  ProcEnv env;
  env.set = {{"SYSFS_PATH", tmp.path()}};
  const ProcResult py = run_process({"python3", "-c",
                                     "import os; print(os.listdir('/sys/class/infiniband'), "
                                     "open('/sys/class/infiniband/uroce0/node_type').read())"},
                                    env);
  if (py.status == 127) GTEST_SKIP() << "no python3";
  EXPECT_EQ(py.out, "['uroce0'] 1: CA\n\n") << py.err;
}

}  // namespace
}  // namespace uroce::test

// Re-executes itself with the shim preloaded (once), so that plain `shim_test` and ctest both test it.
int main(int argc, char** argv) {
  if (uroce::test::notify_fn() == nullptr && std::getenv("UROCE_SHIM_TEST_REEXEC") == nullptr &&
      access(UROCE_SHIM_LIB, R_OK) == 0) {
    setenv("UROCE_SHIM_TEST_REEXEC", "1", 1);
    const char* old = std::getenv("LD_PRELOAD");
    const std::string preload =
        std::string(UROCE_SHIM_LIB) + (old != nullptr && *old ? ":" + std::string(old) : "");
    setenv("LD_PRELOAD", preload.c_str(), 1);
#if defined(__SANITIZE_ADDRESS__)
    // The shim is preloaded ahead of the ASan runtime in sanitizer builds.
    const char* asan = std::getenv("ASAN_OPTIONS");
    setenv("ASAN_OPTIONS",
           ((asan != nullptr ? std::string(asan) + ":" : "") + "verify_asan_link_order=0").c_str(), 1);
#endif
    execv("/proc/self/exe", argv);
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
