// How the kernel schedules the threads that move packets (UROCE_ENGINE_SCHED): the engine's progress thread
// and DPDK's interrupt thread, which memif ports wait for every IntrGate::kPeriod (intr_gate.h). On two
// cores an ib_write_lat pair runs two perftest threads spinning on memory; a thread that wakes for a frame
// (or the interrupt thread, woken to run its pass, during which no memif burst may run) should get a core
// at once, not at the end of a spinner's time slice (docs/latency.md):
//   slice  SCHED_OTHER with a short custom slice (sched_setattr sched_runtime = kThreadSliceNs, the kernel's
//          minimum). On EEVDF kernels (Linux >= 6.12) a waking task with a shorter slice than the running
//          one preempts it (PREEMPT_SHORT). Unprivileged. Older kernels accept the call and ignore the slice.
//   boost  slice, and nice kBoostNice: a thread with ten times the weight of a spinning application thread
//          is eligible when it wakes, so it preempts at once instead of at the next tick, which a thread
//          that has just spun often has to wait for (up to 4 ms at HZ=250). Needs CAP_SYS_NICE or an
//          RLIMIT_NICE that allows it; refused, the thread gets slice.
//   none   the thread keeps the scheduling of the thread that created it.
// SCHED_FIFO is not offered: tried on this 2-core machine, FIFO progress threads next to spinning perftest
// processes made ib_write_lat runs hang (docs/latency.md).
#pragma once

#include <cstdint>

namespace uroce::glue {

enum class ThreadSched { kNone, kSlice, kBoost };

const char* thread_sched_name(ThreadSched s);
// UROCE_ENGINE_SCHED, already checked against runtime/env_vars.h (unset or unknown: kSlice).
ThreadSched thread_sched_from_env();

// The custom slice asked for under kSlice and kBoost, ns: the kernel's minimum.
constexpr uint64_t kThreadSliceNs = 100'000;
// The nice value asked for under kBoost (a thread already nicer than this keeps its own).
constexpr int kBoostNice = -10;

// Applies `want` to the calling thread. Returns what holds afterwards: kNone when the kernel refuses
// sched_setattr (a seccomp profile, a kernel before 3.14), kSlice for a kBoost the kernel refused the nice
// value of. Never throws.
ThreadSched apply_thread_sched(ThreadSched want);

// What the calling thread has now, read back from the kernel: kSlice for SCHED_OTHER with a slice of
// kThreadSliceNs (Linux >= 6.12 reports a SCHED_OTHER thread's slice in sched_runtime), kBoost for that
// and a nice value of kBoostNice or lower, kNone otherwise.
ThreadSched current_thread_sched();

}  // namespace uroce::glue
