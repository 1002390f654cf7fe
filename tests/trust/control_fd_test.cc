// The engine's control endpoint (provider/control.h) in one process, under the sanitizers too: a capture
// file passed as a descriptor (SCM_RIGHTS) is written through that descriptor only; a descriptor that is not
// a regular file open for writing is refused; descriptors that came with other requests are closed; asked
// without a descriptor, the engine creates the path new (0600) and refuses an existing file or a link; a
// connection from another uid is refused (needs root to switch uids in a child).
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "provider/capture.h"
#include "provider/control.h"
#include "tools/observe/ctl_client.h"

namespace uroce {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using provider::CaptureTap;
using provider::ControlEndpoint;
using provider::ControlSource;

// A port that never carries a frame: captures stay empty, which is all these tests need.
class IdlePort final : public PacketIo {
 public:
  uint16_t alloc_burst(PktBuf**, uint16_t) override { return 0; }
  uint16_t tx_burst(PktBuf**, uint16_t) override { return 0; }
  uint16_t rx_burst(PktBuf**, uint16_t) override { return 0; }
  void free_burst(PktBuf**, uint16_t) override {}
  uint16_t max_frame() const override { return 512; }
};

size_t open_fd_count() {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) n += e.path().empty() ? 0 : 1;
  return n;
}

uint32_t magic_of(const fs::path& p) {
  uint32_t m = 0;
  std::ifstream(p, std::ios::binary).read(reinterpret_cast<char*>(&m), sizeof m);
  return m;
}

class ControlFd : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/uroce-trust-fd-XXXXXX";
    dir_ = mkdtemp(tmpl);
    ControlSource src;
    src.ibdev = "uroce2";
    src.port = "idle";
    src.mu = &mu_;
    src.tap = &tap_;
    std::string err;
    ep_ = ControlEndpoint::start(src, &err, dir_.string());
    ASSERT_TRUE(ep_) << err;
    target_.pid = getpid();
    target_.dev = "uroce2";
    target_.socket = ep_->path();
  }
  void TearDown() override {
    ep_.reset();
    fs::remove_all(dir_);
  }

  json start(tools::ControlClient& c, const fs::path& path, int fd) {
    return c.request({{"cmd", "capture_start"}, {"path", path.string()}}, fd);
  }

  fs::path dir_;
  IdlePort port_;
  CaptureTap tap_{&port_};
  provider::DeviceLock mu_;
  std::unique_ptr<ControlEndpoint> ep_;
  tools::Endpoint target_;
};

TEST_F(ControlFd, APassedDescriptorIsTheFileAndThePathOnlyItsName) {
  const fs::path real = dir_ / "real.pcap";
  const int fd = open(real.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  tools::ControlClient c(target_);
  // A name in a directory that does not exist: the engine must not try to open it.
  json r = start(c, "/nonexistent-uroce-dir/f.pcap", fd);
  close(fd);
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  r = c.request({{"cmd", "capture_stop"}});
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  EXPECT_EQ(fs::file_size(real), 24u);  // the pcap file header, written through the descriptor
  EXPECT_EQ(magic_of(real), 0xa1b23c4du);
}

TEST_F(ControlFd, ADescriptorThatIsNotAWritableRegularFileIsRefused) {
  const fs::path f = dir_ / "ro.pcap";
  std::ofstream(f) << "keep";
  tools::ControlClient c(target_);
  const int ro = open(f.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(ro, 0);
  json r = start(c, f, ro);
  close(ro);
  EXPECT_FALSE(r.value("ok", true)) << r.dump();
  EXPECT_NE(r.value("error", "").find("not a regular file open for writing"), std::string::npos) << r.dump();
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  r = start(c, f, p[1]);
  close(p[0]);
  close(p[1]);
  EXPECT_FALSE(r.value("ok", true)) << r.dump();
  std::string s;
  std::ifstream(f) >> s;
  EXPECT_EQ(s, "keep");
}

TEST_F(ControlFd, DescriptorsThatCameWithOtherRequestsAreClosed) {
  tools::ControlClient c(target_);
  ASSERT_TRUE(c.request({{"cmd", "capture_status"}}).value("ok", false));
  const size_t before = open_fd_count();
  for (int i = 0; i < 20; ++i) {
    const int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(c.request({{"cmd", "capture_status"}}, fd).value("ok", false));
    close(fd);
  }
  // The engine runs in this process: a descriptor it kept would show here.
  EXPECT_EQ(open_fd_count(), before);
}

TEST_F(ControlFd, WithoutADescriptorTheEngineCreatesANewFileOnly) {
  tools::ControlClient c(target_);
  const fs::path fresh = dir_ / "fresh.pcap";
  ASSERT_TRUE(start(c, fresh, -1).value("ok", false));
  ASSERT_TRUE(c.request({{"cmd", "capture_stop"}}).value("ok", false));
  EXPECT_EQ(fs::status(fresh).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  // Existing file, symbolic link to a file, dangling link: refused, nothing written anywhere.
  std::ofstream(dir_ / "victim") << "victim";
  fs::create_symlink(dir_ / "victim", dir_ / "link.pcap");
  fs::create_symlink(dir_ / "made-by-link", dir_ / "dangling.pcap");
  for (const char* name : {"fresh.pcap", "link.pcap", "dangling.pcap"}) {
    const json r = start(c, dir_ / name, -1);
    EXPECT_FALSE(r.value("ok", true)) << name << ": " << r.dump();
  }
  EXPECT_EQ(fs::file_size(dir_ / "victim"), 6u);
  EXPECT_FALSE(fs::exists(dir_ / "made-by-link"));
}

TEST_F(ControlFd, AnotherUidIsRefusedWithOneLine) {
  if (geteuid() != 0) GTEST_SKIP() << "switching to another uid needs root";
  // The socket reachable by anyone, as if its directory had been opened up.
  chmod(dir_.c_str(), 0755);
  chmod(ep_->path().c_str(), 0666);
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  const std::string sock = ep_->path();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // only system calls from here: the parent has threads
    close(out[0]);
    if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
        setresuid(65534, 65534, 65534) != 0)
      _exit(2);
    const int s = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, sock.c_str(), sock.size() + 1);
    if (connect(s, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) _exit(3);
    const char req[] = "{\"cmd\":\"stats\"}\n";
    // The engine may refuse and close before this is written: no SIGPIPE for that.
    (void)!send(s, req, sizeof req - 1, MSG_NOSIGNAL);
    char buf[512];
    ssize_t n;
    while ((n = read(s, buf, sizeof buf)) > 0) (void)!write(out[1], buf, static_cast<size_t>(n));
    _exit(0);
  }
  close(out[1]);
  std::string got;
  char buf[512];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  // One line, and the connection closed (the child's read loop ended).
  EXPECT_EQ(got,
            "{\"ok\":false,\"error\":\"refused: uid 65534 is neither uid 0 (the owner of this process) nor "
            "root\"}\n");
  // Root (this process) is served.
  tools::ControlClient c(target_);
  EXPECT_TRUE(c.request({{"cmd", "capture_status"}}).value("ok", false));
}

}  // namespace
}  // namespace uroce
