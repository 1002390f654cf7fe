// Decisions of the progress thread (engine.h) that depend on nothing but what it measured, kept apart so
// that they can be tested without a device.
#pragma once

#include <cstdint>

namespace uroce::provider {

// Whether the progress thread, idle after a pass, keeps spinning rather than going to sleep. It spins for
// spin_ns after its last work and after the application's last verb call (data for an application that
// spins on memory comes within microseconds of its last post), unless the application thread last entered
// a verb on the CPU this thread runs on: that thread then most likely waits for this one to leave the CPU
// (both pinned to it, or more runnable threads than cores), and whatever it does next, poll its CQ or read
// the memory a WRITE just filled, it needs the CPU for. The thread sleeps at once then, woken by the next
// frame as after any spin. app_cpu < 0: not known yet.
inline bool keep_spinning(uint64_t since_work_ns, uint64_t since_app_ns, uint64_t spin_ns, int app_cpu,
                          int this_cpu) {
  if (since_work_ns >= spin_ns && since_app_ns >= spin_ns) return false;
  return app_cpu < 0 || app_cpu != this_cpu;
}

}  // namespace uroce::provider
