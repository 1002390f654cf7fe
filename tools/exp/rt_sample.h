// Sampling a real-time experiment while it runs: the engines' per-QP and device counters through their
// control sockets (their `rates` request, through the client of `uroce stats`, tools/observe/ctl_client.h)
// uroced's port counters through its control socket (the `stats` request of runtime/uroced_client.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace uroce::tools {
class ControlClient;
}

namespace uroce::exp::rt {

struct QpSample {
  uint32_t qpn = 0, dest_qpn = 0;
  uint64_t rx_bytes = 0, tx_bytes = 0, cc_rate_bps = 0;
};

struct EngineSample {
  double t_s = 0;        // runner's monotonic clock when the reply arrived
  uint64_t time_ns = 0;  // the engine's clock when it copied the counters
  std::vector<QpSample> qps;
  std::map<std::string, uint64_t> device;  // device counters by name (transport/counters.h)
};

// One process's uroce device, asked for its counters on one connection that stays open.
class EngineProbe {
 public:
  explicit EngineProbe(pid_t pid);
  ~EngineProbe();
  EngineProbe(EngineProbe&&) noexcept;
  EngineProbe& operator=(EngineProbe&&) noexcept;

  pid_t pid() const { return pid_; }
  bool connected() const { return client_ != nullptr; }
  // Connects when the process's control socket exists. False when it has no socket (yet) or has gone.
  bool sample(EngineSample* out);
  const EngineSample* last() const { return have_last_ ? &last_ : nullptr; }

 private:
  pid_t pid_;
  std::unique_ptr<tools::ControlClient> client_;
  bool gone_ = false, have_last_ = false;
  EngineSample last_;
};

// One port of uroced at one moment: its counters by name (`uroced --stats`, docs/uroced.md).
struct PortSample {
  pid_t pid = 0;  // the leaseholder
  std::map<std::string, std::string> kv;
  uint64_t num(const std::string& key) const;
};

struct SwitchSample {
  double t_s = 0;
  std::vector<PortSample> ports;
  const PortSample* port_of(pid_t pid) const;
};

// Asks uroced (of the runtime directory in XDG_RUNTIME_DIR) for its port counters. False with *err when it
// does not answer.
bool sample_switch(SwitchSample* out, std::string* err);

}  // namespace uroce::exp::rt
