// The progress thread's sleep (provider/sleeper.h): what wakes it and what it reports.
#include "provider/sleeper.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <valgrind/valgrind.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>

namespace uroce::provider {
namespace {

struct Fds {
  Fds() {
    bell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    EXPECT_GE(bell, 0);
    EXPECT_EQ(pipe(rx), 0);
  }
  ~Fds() {
    close(bell);
    close(rx[0]);
    close(rx[1]);
  }
  void ring() const {
    const uint64_t one = 1;
    ASSERT_EQ(write(bell, &one, sizeof(one)), static_cast<ssize_t>(sizeof(one)));
  }
  int bell;
  int rx[2];
};

TEST(Sleeper, UsesIoUringWhereTheKernelAllowsIt) {
  Fds f;
  Sleeper s(f.bell);
  std::printf("sleeper uses %s\n", s.uses_io_uring() ? "io_uring" : "ppoll (fallback)");
  // The Sleeper itself picks ppoll under Valgrind, which does not model io_uring. Elsewhere the kernel of
  // the build and CI hosts has io_uring; only a seccomp profile forbidding it would legitimately need the
  // fallback, and such an environment says so with UROCE_EXPECT_PPOLL=1.
  const char* expect_ppoll = std::getenv("UROCE_EXPECT_PPOLL");
  if (RUNNING_ON_VALGRIND || (expect_ppoll != nullptr && std::string(expect_ppoll) == "1")) {
    EXPECT_FALSE(s.uses_io_uring());
  } else {
    EXPECT_TRUE(s.uses_io_uring()) << "io_uring_queue_init failed: the progress thread fell back to ppoll";
  }
}

TEST(Sleeper, TimeoutWithNothingPendingReportsNothing) {
  Fds f;
  Sleeper s(f.bell);
  EXPECT_EQ(s.wait(1'000'000, -1), 0u);
  EXPECT_EQ(s.wait(1'000, f.rx[0]), 0u);
}

TEST(Sleeper, DoorbellWakesAndIsDrained) {
  Fds f;
  Sleeper s(f.bell);
  f.ring();
  EXPECT_EQ(s.wait(Sleeper::kForever, -1), unsigned{Sleeper::kDoorbell});
  uint64_t v;
  EXPECT_EQ(read(f.bell, &v, sizeof(v)), -1);  // drained by the Sleeper
  EXPECT_EQ(errno, EAGAIN);
  // The poll it re-arms sees the next ring too, also one rung from another thread while it sleeps.
  std::thread t([&] { f.ring(); });
  EXPECT_EQ(s.wait(Sleeper::kForever, -1), unsigned{Sleeper::kDoorbell});
  t.join();
  EXPECT_EQ(s.wait(1'000, -1), 0u);
}

TEST(Sleeper, RxFdWakesWithoutBeingRead) {
  Fds f;
  Sleeper s(f.bell);
  ASSERT_EQ(write(f.rx[1], "x", 1), 1);
  EXPECT_EQ(s.wait(Sleeper::kForever, f.rx[0]), unsigned{Sleeper::kRx});
  char c;
  EXPECT_EQ(read(f.rx[0], &c, 1), 1);  // still there: the Sleeper only polls it
  // Without the rx fd the same data would not wake it.
  ASSERT_EQ(write(f.rx[1], "y", 1), 1);
  EXPECT_EQ(s.wait(1'000, -1), 0u);
  EXPECT_EQ(s.wait(Sleeper::kForever, f.rx[0]), unsigned{Sleeper::kRx});
}

TEST(Sleeper, BothAtOnceAreBothReported) {
  Fds f;
  Sleeper s(f.bell);
  f.ring();
  ASSERT_EQ(write(f.rx[1], "x", 1), 1);
  unsigned fired = 0;
  for (int i = 0; i < 2 && fired != (Sleeper::kDoorbell | Sleeper::kRx); ++i)
    fired |= s.wait(Sleeper::kForever, f.rx[0]);
  EXPECT_EQ(fired, unsigned{Sleeper::kDoorbell | Sleeper::kRx});
}

}  // namespace
}  // namespace uroce::provider
