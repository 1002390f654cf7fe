// EAL start-up: the argv we give it, that it never changes an application thread's cpu affinity, that a
// second ensure() is free, and what a forked child gets.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include "pmd_glue/dpdk_eal.h"

namespace uroce::glue {
namespace {

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

cpu_set_t affinity_of(pthread_t t) {
  cpu_set_t s;
  CPU_ZERO(&s);
  pthread_getaffinity_np(t, sizeof(s), &s);
  return s;
}

TEST(EalArgs, DefaultsAreNoHugepagesAndAnUnpinnedLcore) {
  EalConfig cfg;
  cfg.cpus = "0-1";
  cfg.pid = 4242;
  const std::vector<std::string> want = {
      "uroce",          "--no-huge", "-m",      "128",           "--no-shconf", "--no-pci",
      "--no-telemetry", "--lcores",  "0@(0-1)", "--file-prefix", "uroce-4242",  "--log-level=notice"};
  EXPECT_EQ(Eal::build_args(cfg), want);
}

// A bad value of a variable EAL's start-up reads is refused naming it, never replaced by a default.
TEST(EalArgs, ABadVariableIsRefusedNamingIt) {
  for (const auto& [name, bad] : {std::pair{"UROCE_DPDK_MEM_MB", "abc"}, std::pair{"UROCE_DPDK_MEM_MB", "8"},
                                  std::pair{"UROCE_HUGEPAGES", "yes"}, std::pair{"UROCE_DPDK_LOG", "loud"}}) {
    ASSERT_EQ(setenv(name, bad, 1), 0);
    std::string err;
    (void)Eal::default_config(&err);
    unsetenv(name);
    EXPECT_TRUE(err.starts_with(std::string(name) + "=" + bad + ": expected")) << err;
  }
  ASSERT_EQ(setenv("UROCE_DPDK_MEM_MB", "256", 1), 0);
  std::string err;
  EXPECT_EQ(Eal::default_config(&err).mem_mb, 256u);
  unsetenv("UROCE_DPDK_MEM_MB");
  EXPECT_EQ(err, "");
}

TEST(EalArgs, HugepagesUseInMemory) {
  EalConfig cfg;
  cfg.cpus = "1";
  cfg.hugepages = true;
  cfg.extra = {"--vdev=net_null0"};
  const auto a = Eal::build_args(cfg);
  EXPECT_TRUE(has(a, "--in-memory"));
  EXPECT_FALSE(has(a, "--no-huge"));  // EAL refuses --in-memory with --no-huge
  EXPECT_TRUE(has(a, "0@(1)"));
  EXPECT_EQ(a.back(), "--vdev=net_null0");
}

TEST(EalArgs, CpuListFollowsTheCallingThread) {
  const cpu_set_t all = affinity_of(pthread_self());
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE && first < 0; ++c)
    if (CPU_ISSET(c, &all)) first = c;
  ASSERT_GE(first, 0);
  std::string list;
  std::thread t([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    sched_setaffinity(0, sizeof(one), &one);
    list = Eal::cpu_list_of_current_thread();
  });
  t.join();
  EXPECT_EQ(list, std::to_string(first));
}

TEST(Eal, InitKeepsThreadAffinityAndIsIdempotent) {
  // A thread that exists before init, parked until the end.
  std::atomic<bool> done{false};
  std::thread other([&] {
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  const cpu_set_t before = affinity_of(pthread_self());
  const cpu_set_t other_before = affinity_of(other.native_handle());

  std::string err;
  ASSERT_TRUE(Eal::ensure(&err)) << err;
  const double first = Eal::init_seconds();
  EXPECT_TRUE(Eal::initialised());

  cpu_set_t after = affinity_of(pthread_self());
  cpu_set_t other_after = affinity_of(other.native_handle());
  EXPECT_TRUE(CPU_EQUAL(&before, &after))
      << CPU_COUNT(&before) << " cpus before, " << CPU_COUNT(&after) << " after";
  EXPECT_TRUE(CPU_EQUAL(&other_before, &other_after));

  ASSERT_TRUE(Eal::ensure(&err)) << err;  // second call: no second rte_eal_init
  EXPECT_EQ(Eal::init_seconds(), first);
  after = affinity_of(pthread_self());
  EXPECT_TRUE(CPU_EQUAL(&before, &after));

  std::string argv;
  for (const auto& a : Eal::args()) argv += " " + a;
  std::printf("EAL init took %.3f s:%s\n", first, argv.c_str());
  RecordProperty("eal_init_ms", static_cast<int>(first * 1000));
  done = true;
  other.join();
}

// In a fresh process whose thread may run on one cpu only: EAL must not widen or move it.
TEST(Eal, NarrowAffinityIsLeftAlone) {
  const cpu_set_t all = affinity_of(pthread_self());
  int last = -1;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &all)) last = c;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(last, &one);
    sched_setaffinity(0, sizeof(one), &one);
    execl(GLUE_PEER, "glue_peer", "affinity", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "glue_peer affinity (pinned to cpu " << last << ") reported a change";
}

TEST(Eal, UsesAnEalTheApplicationStarted) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(GLUE_PEER, "glue_peer", "preinit", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(Eal, ForkedChildIsToldToExec) {
  std::string err;
  ASSERT_TRUE(Eal::ensure(&err)) << err;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::string child_err;
    const bool ok = Eal::ensure(&child_err);
    _exit(!ok && child_err.find("exec") != std::string::npos && !Eal::initialised() ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(Eal::initialised());  // the parent is unaffected
}

}  // namespace
}  // namespace uroce::glue
