// The control endpoint of an engine: a unix socket through which `uroce stats` reads the device's counters
// and `uroce capture` records its frames (capture.h).
//
// Where: <runtime dir>/ctl/<pid>-<ibdev>.sock, both directories 0700 and owned by the user; the runtime
// directory (runtime/runtime_dir.h) is ${XDG_RUNTIME_DIR:-/tmp}/uroce-<uid> or its fallback, the same base
// `uroce run` keeps its sysfs trees in. The socket is removed when the engine closes
// and, for a process that exits with the device still open, by an exit handler; one left by a killed
// process is recognised by its dead pid and removed by the tool. UROCE_CONTROL=0 turns the endpoint off.
//
// Protocol (docs/observability.md): the client sends one JSON object per line, the endpoint answers each
// with one JSON object on one line, always with "ok" (and "error" when false):
//   {"cmd":"stats"}                                           -> device, port and per-QP counters
//   {"cmd":"rates"}                                           -> pid, dev, time_ns, device{}, qps[{qpn,
//                                                                dest_qpn, tx_bytes, rx_bytes, cc_rate_bps}]
//                                                                (a sampler's light request)
//   {"cmd":"hw_counters"}                                     -> dev, port, hw_counters{}, counters{}:
//                                                                the device counters under mlx5/rxe and IB
//                                                                PMA names only (the shim's sysfs/netlink)
//   {"cmd":"qps"}                                             -> dev, qps[{qpn, qp_type, qp_state, dest_qpn,
//                                                                sq_psn, rq_psn}] (IB numbers; RES_QP_GET)
//   {"cmd":"capture_start","path":ABS,"snaplen":N,"count":N}  -> {"ok":true,"snaplen":N}
//   {"cmd":"capture_status"}                                  -> active, frames, dropped, limit_reached
//   {"cmd":"capture_stop"}                                    -> frames, dropped, path (of the last capture)
// A capture belongs to the connection that started it and ends when that connection closes.
//
// Threading. The endpoint runs its own thread, which blocks in poll() on the listening socket and its
// clients and takes the engine lock only to copy counters (microseconds) or to arm and disarm the capture
// tap. Serving it from the progress loop instead would add a system call to passes that the application
// thread often runs inline, and would leave requests waiting up to the progress thread's longest nap
// (20 ms). An idle endpoint costs no CPU; while a capture runs the thread wakes every millisecond to drain
// the ring into the file.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "provider/capture.h"
#include "provider/device_lock.h"
#include "transport/device.h"

namespace uroce::provider {

// What the endpoint reads and controls. Everything but the names is used only with *mu held.
struct ControlSource {
  std::string ibdev;
  std::string port;  // the UROCE_PORT spec, for display
  DeviceLock* mu = nullptr;
  const Device* dev = nullptr;
  CaptureTap* tap = nullptr;                    // null: no capture
  std::function<std::vector<uint32_t>()> qpns;  // the QPs to list
  // Counters of the port below the device ("name", value); may be empty.
  std::function<std::vector<std::pair<std::string, uint64_t>>()> port_stats;
  // Counters of the connection manager on the engine ("name", value); may be empty.
  std::function<std::vector<std::pair<std::string, uint64_t>>()> cm_stats;
};

// <runtime dir>/ctl (runtime/runtime_dir.h), created 0700 when missing. Returns "" with *err set when no
// runtime directory is usable, or ctl cannot be made or is not a private directory of this user.
std::string control_dir(std::string* err);

// The reply to {"cmd":"stats"}: one line of JSON (no newline). Takes *src.mu while it copies the counters.
std::string stats_json(const ControlSource& src);

class ControlEndpoint {
 public:
  // Creates the socket in `dir` (control_dir() when empty) and starts serving. Returns nullptr with *err set
  // when the socket cannot be made, or with *err empty when UROCE_CONTROL=0.
  static std::unique_ptr<ControlEndpoint> start(ControlSource src, std::string* err, std::string dir = "");
  // Ends a running capture (the file is completed), stops the thread and removes the socket.
  ~ControlEndpoint();
  ControlEndpoint(const ControlEndpoint&) = delete;
  ControlEndpoint& operator=(const ControlEndpoint&) = delete;

  const std::string& path() const { return path_; }

  struct Impl;

 private:
  explicit ControlEndpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::string path_;
};

}  // namespace uroce::provider
