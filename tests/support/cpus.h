// The CPUs this process may run on, and pinning the calling thread to one: for tests and benchmarks that
// place threads on the same or on different CPUs.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <vector>

namespace uroce::test {

inline std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// True if the calling thread now runs only on `cpu`.
inline bool pin_this_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

}  // namespace uroce::test
