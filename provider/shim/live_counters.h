// Live device counters for programs that are not the engine: the shim asks the running uroce processes, the
// way `uroce stats` finds them (provider/control.h: <runtime dir>/ctl/<pid>-<ibdev>.sock), for their
// counters under the standard names of transport/counters.h (summed per device) and for their QPs. Used by
// the sysfs redirect (hw_counters/ and counters/ files) and the RDMA netlink answers (netlink.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "transport/counters.h"

namespace uroce::shim {

// Sums into out[] (kStdCounters order, zeroed first) the counters of every live process that has `dev`
// open. Returns how many processes answered (0: no process runs, every value 0). Each request is bounded
// by a one-second timeout, so a stuck process delays the caller at most that long.
int live_counters(const char* dev, uint64_t out[kStdCounterCount]);

// One QP of a running process, as {"cmd":"qps"} reports it (provider/control.h): IB type and state numbers.
struct LiveQp {
  uint32_t pid, qpn, type, state, dest_qpn, sq_psn, rq_psn;
};

// The QPs of every live process that has `dev` open, at most `max`; returns how many were stored.
int live_qps(const char* dev, LiveQp* out, int max);

// The index in kStdCounters of the counter called name[0..len) with that kind, or -1.
int std_counter_index(const char* name, size_t len, StdCounterKind kind);

// When `path` (already redirected into the tree) is a hw_counters/ or counters/ file of a device in the
// uroce tree and `flags` open it for reading only: stores in *fd a new descriptor (a memfd, O_CLOEXEC when
// flags asks for it) that reads the live value as sysfs prints it ("N\n"), and returns true. Returns
// false for every other path (open it as usual); *fd = -1 with errno set when making the file failed.
bool open_counter_file(const char* path, int flags, int* fd);

}  // namespace uroce::shim
