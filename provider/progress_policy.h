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

// Of the time from an application thread's last verb call (last_ns) to its next (now_ns), the part it was
// away by its own doing: less the progress thread's turn on its CPU [held_from_ns, held_until_ns) where the
// two overlap. A thread that polls without pause but shares its CPU with the progress thread (both pinned
// there) is kept off it while the progress thread runs, and that is no sign that it stopped polling.
// held_until_ns < held_from_ns: the turn has not ended (as far as the caller has seen).
inline uint64_t away_ns(uint64_t last_ns, uint64_t now_ns, uint64_t held_from_ns, uint64_t held_until_ns) {
  if (held_until_ns < held_from_ns) held_until_ns = now_ns;
  const uint64_t from = held_from_ns > last_ns ? held_from_ns : last_ns;
  const uint64_t until = held_until_ns < now_ns ? held_until_ns : now_ns;
  return now_ns - last_ns - (until > from ? until - from : 0);
}

// How long the application had not called a verb (its last call at app_ns) as the progress thread judges
// it at now_ns. On the application's CPU (holding) it is judged at the start of the thread's turn there: the
// time since then is the thread's own, and a polling application calls again as soon as it runs.
inline uint64_t app_quiet_ns(uint64_t now_ns, uint64_t app_ns, bool holding, uint64_t turn_start_ns) {
  const uint64_t at = holding ? turn_start_ns : now_ns;
  return at > app_ns ? at - app_ns : 0;
}

}  // namespace uroce::provider
