#include "pmd_glue/thread_sched.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace uroce::glue {

namespace {

// The kernel's struct sched_attr (SCHED_ATTR_SIZE_VER1). <linux/sched/types.h> has it, but it also defines
// struct sched_param, which glibc's <sched.h> defines again.
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime, sched_deadline, sched_period;
  uint32_t sched_util_min, sched_util_max;
};
static_assert(sizeof(SchedAttr) == 56, "SCHED_ATTR_SIZE_VER1");

}  // namespace

const char* thread_sched_name(ThreadSched s) {
  switch (s) {
    case ThreadSched::kSlice:
      return "slice";
    case ThreadSched::kBoost:
      return "boost";
    case ThreadSched::kNone:
      break;
  }
  return "none";
}

ThreadSched thread_sched_from_env() {
  const std::string_view v = std::getenv("UROCE_ENGINE_SCHED") ? std::getenv("UROCE_ENGINE_SCHED") : "";
  if (v == "none") return ThreadSched::kNone;
  return v == "boost" ? ThreadSched::kBoost : ThreadSched::kSlice;
}

ThreadSched apply_thread_sched(ThreadSched want) {
  if (want == ThreadSched::kNone) return ThreadSched::kNone;
  SchedAttr a;
  std::memset(&a, 0, sizeof(a));
  a.size = sizeof(a);
  a.sched_policy = SCHED_OTHER;
  // The nice value is part of the call: the thread keeps its own (sched_setattr would otherwise set 0).
  SchedAttr cur;
  std::memset(&cur, 0, sizeof(cur));
  if (syscall(SYS_sched_getattr, 0, &cur, sizeof(cur), 0) != 0) return ThreadSched::kNone;
  // A thread started under another policy (SCHED_BATCH, SCHED_IDLE, a real-time one) keeps it.
  if (cur.sched_policy != SCHED_OTHER) return ThreadSched::kNone;
  a.sched_nice = cur.sched_nice;
  a.sched_runtime = kThreadSliceNs;
  if (want == ThreadSched::kBoost && cur.sched_nice > kBoostNice) {
    SchedAttr boosted = a;
    boosted.sched_nice = kBoostNice;
    if (syscall(SYS_sched_setattr, 0, &boosted, 0) == 0) return ThreadSched::kBoost;
    // EPERM without CAP_SYS_NICE: the slice alone.
  }
  if (syscall(SYS_sched_setattr, 0, &a, 0) != 0) return ThreadSched::kNone;
  return want == ThreadSched::kBoost && cur.sched_nice <= kBoostNice ? ThreadSched::kBoost
                                                                     : ThreadSched::kSlice;
}

ThreadSched current_thread_sched() {
  SchedAttr a;
  std::memset(&a, 0, sizeof(a));
  if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) != 0) return ThreadSched::kNone;
  if (a.sched_policy != SCHED_OTHER || a.sched_runtime != kThreadSliceNs) return ThreadSched::kNone;
  return a.sched_nice <= kBoostNice ? ThreadSched::kBoost : ThreadSched::kSlice;
}

}  // namespace uroce::glue
