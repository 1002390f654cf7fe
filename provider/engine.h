// The engine behind one uroce device in this process: a transport Device on a packet port, the lock that
// serialises it, and the progress thread that serves it when the application is not calling in. Every
// ibv_context opened on the device shares it, as contexts share one RNIC: QP numbers are unique device-wide,
// and a QP may talk to another context's QP (or its own device) through the device's internal loopback.
//
// Progress is adaptive (DESIGN.md): every verb that holds the lock runs a progress pass inline, so a polling
// application drives its own traffic with no thread hand-off. The progress thread covers one-sided targets
// and timers: it runs a pass when woken (frames arrived, a deadline passed), spins briefly while there is
// work, then sleeps on its eventfd until the next deadline. An idle context costs no CPU.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "provider/control.h"
#include "transport/device.h"

namespace uroce::glue {
class DpdkPort;
}

namespace uroce::provider {

struct EngineConfig {
  DeviceConfig device;
  // UROCE_PORT: "loopback" (in-process only) or a DPDK port spec (pmd_glue/dpdk_spec.h), e.g.
  // memif:socket=/run/x.sock,role=client
  std::string port = "loopback";
};

// Reads UROCE_* settings and the device's GID from the fake sysfs tree of `ibdev`. Returns "" or an error
// message naming the bad setting.
std::string load_engine_config(const std::string& ibdev, EngineConfig* cfg);

class Engine {
 public:
  explicit Engine(const EngineConfig& cfg);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The lock every verb holds while it touches the device.
  std::mutex& mu() { return mu_; }
  Device& dev() { return *dev_; }
  // One progress pass; the caller holds mu(). Wakes the progress thread if work is left for it.
  void progress_locked();
  // Writes the device counters, drop reasons and port statistics on one line (UROCE_STATS_ON_EXIT=1).
  void print_stats(FILE* out);

  // Makes the progress thread look again (frames arrived, work was posted for a one-sided target).
  void wake();

  // The engine of `ibdev` in this process, created on first use; the last release destroys it.
  static std::shared_ptr<Engine> acquire(const std::string& ibdev, std::string* err);

  // Where an object's async events go: the ibv_* object libibverbs reports, and the write end of its
  // context's async pipe. Events are written as libibverbs reads them (struct ib_uverbs_async_event_desc).
  struct EventSink {
    void* element;
    int fd;
  };
  std::unordered_map<uint32_t, EventSink> qp_events, srq_events, cq_events;

 private:
  void run();
  void deliver_async_events();
  void start_control(const EngineConfig& cfg);

  std::mutex mu_;
  std::unique_ptr<PacketIo> port_;
  glue::DpdkPort* dpdk_ = nullptr;  // port_ when it is a DPDK port
  SteadyClock clock_;
  std::unique_ptr<Device> dev_;
  int wake_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> sleeping_until_{0};  // written under mu_: when the progress thread will look again
  std::thread thread_;
  std::unique_ptr<CaptureTap> tap_;           // between dev_ and port_: `uroce capture` (capture.h)
  std::unique_ptr<ControlEndpoint> control_;  // `uroce stats` / `uroce capture` socket (control.h)
};

}  // namespace uroce::provider
