// The congestion-control plug-in interface (DESIGN.md). One Algorithm object per flow (a QP's send side) is
// told about events and publishes its decision in two fields the transport's pacer reads on every
// transmit: a rate and a window. Adding an algorithm is one file plus one registration line (registry.cc).
//
// cc/ is pure C++: no DPDK, no libibverbs, and it does not depend on transport/.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace uroce::cc {

constexpr uint64_t kNoTimer = UINT64_MAX;

// In-band network telemetry (HPCC): what one switch egress port stamps on a data packet as it leaves.
// The responder echoes a data packet's stack in its ACK; the requester hands it to on_telemetry().
struct IntHop {
  uint64_t ts_ns = 0;          // when the packet left this egress port
  uint64_t tx_bytes = 0;       // bytes this port has sent since it started (wraps never in practice)
  uint32_t qlen_bytes = 0;     // bytes queued at this port when the packet left
  uint64_t line_rate_bps = 0;  // the port's line rate
};
constexpr int kMaxIntHops = 5;
struct IntStack {
  uint8_t hops = 0;
  IntHop hop[kMaxIntHops];
};

// Named parameters, as the NIC knobs are named (rpg_time_reset, rpg_ai_rate, ...). Unset keys take the
// algorithm's defaults.
using Params = std::map<std::string, double>;

class Algorithm {
 public:
  virtual ~Algorithm() = default;

  // Reaction-point events.
  virtual void on_cnp(uint64_t /*now_ns*/) {}
  // An ACK (or READ response / ATOMIC ACK) acknowledged `bytes`; rtt_ns is 0 when there is no sample.
  virtual void on_ack(uint64_t /*now_ns*/, uint64_t /*bytes*/, uint64_t /*rtt_ns*/) {}
  virtual void on_nak(uint64_t /*now_ns*/) {}
  // The local ACK timeout fired and the requester re-sends from the oldest unacknowledged packet.
  virtual void on_timeout(uint64_t /*now_ns*/) {}
  // The ACK about to reach on_ack carried an ECN echo (BTH BECN): a request packet it acknowledges arrived
  // CE-marked at the responder. Called just before that ACK's on_ack; never for a peer that sets no BECN.
  virtual void on_ecn_echo(uint64_t /*now_ns*/) {}
  // The INT stack an ACK echoed, called just before that ACK's on_ack.
  virtual void on_telemetry(uint64_t /*now_ns*/, const IntStack& /*stack*/) {}
  virtual void on_tx(uint64_t /*now_ns*/, uint32_t /*bytes*/) {}
  // Called once now_ns >= next_timer_ns().
  virtual void on_timer(uint64_t /*now_ns*/) {}
  virtual uint64_t next_timer_ns() const { return kNoTimer; }

  // Decisions, read by the pacer on every transmit. 0 means unlimited.
  uint64_t rate_bps = 0;
  uint64_t window_bytes = 0;
  // Data packets carry ECT(0) so switches can mark CE instead of dropping.
  bool ecn_capable = false;

  // Counters every algorithm keeps.
  uint64_t cnp_handled = 0;
  uint64_t rate_changes = 0;
};

// Builds a flow's algorithm for a link of `line_rate_bps`. Throws std::invalid_argument naming the bad
// key for an unknown parameter or bad value.
using Factory = std::unique_ptr<Algorithm> (*)(const Params& params, uint64_t line_rate_bps);

// The algorithm named `name`, or throws std::invalid_argument listing the known names.
std::unique_ptr<Algorithm> make(const std::string& name, const Params& params, uint64_t line_rate_bps);
std::vector<std::string> algorithm_names();

// Parses "key=value,key=value" (UROCE_CC_PARAMS; spaces around items are ignored, an empty text gives no
// parameters). Throws std::invalid_argument naming the item that is not key=number or a repeated key.
Params parse_params(const std::string& text);

}  // namespace uroce::cc
