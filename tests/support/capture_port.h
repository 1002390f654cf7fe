// Protocol-test harness (STYLE.md item 12, eRPC protocol_tests): a PacketIo that records every frame the
// engine transmits and feeds it frames the test builds, and a fixture with one QP connected to a fake
// remote. The test plays the remote by hand: it builds requests and responses with wire::build_frame,
// injects them, runs Device::progress() in virtual time and asserts on the frames and completions.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "transport/clock.h"
#include "transport/device.h"
#include "transport/packet_io.h"
#include "transport/wire/packet.h"

namespace uroce::test {

// A frame the device transmitted, copied out of its buffer and decoded.
struct Emitted {
  uint64_t time_ns = 0;  // the clock when the device handed it to tx_burst
  std::vector<uint8_t> bytes;
  wire::RxDrop verdict = wire::RxDrop::kNone;  // what parse_frame says of it (kNone: well formed)
  wire::PacketHeaders h;                       // every header field (valid when verdict is kNone)
  std::vector<uint8_t> payload;                // without pad
  cc::IntStack telemetry;                      // what the device put in the buffer's INT side band

  uint8_t opcode() const { return h.bth.opcode; }
  uint32_t psn() const { return h.bth.psn; }
  wire::AethKind aeth_kind() const { return static_cast<wire::AethKind>((h.aeth.syndrome >> 5) & 3); }
  uint8_t aeth_value() const { return h.aeth.syndrome & 0x1F; }
  uint32_t msn() const { return h.aeth.msn; }
  bool has(uint32_t op_mask_bits) const { return wire::op_has(opcode(), op_mask_bits); }
};

// A PacketIo over a fixed pool of buffers. Ownership follows packet_io.h: tx_burst takes every frame
// offered (copies it into sent() and returns the buffer to the pool at once), rx_burst hands out buffers
// holding the injected frames, which the device gives back through free_burst. Like the simulator, it models
// the INT side band: every buffer has telemetry storage, empty when allocated, holding on rx what inject()
// was given.
class CapturePort final : public PacketIo {
 public:
  explicit CapturePort(const Clock* clock, uint32_t pool_frames = 256, uint16_t frame_cap = 4352);
  CapturePort(const CapturePort&) = delete;
  CapturePort& operator=(const CapturePort&) = delete;

  uint16_t alloc_burst(PktBuf** bufs, uint16_t n) override;
  uint16_t tx_burst(PktBuf** bufs, uint16_t n) override;
  uint16_t rx_burst(PktBuf** bufs, uint16_t n) override;
  void free_burst(PktBuf** bufs, uint16_t n) override;
  uint16_t max_frame() const override { return frame_cap_; }

  // Queues a frame (and the INT stack switches stamped on it) for a later rx_burst, which copies it into a
  // pool buffer.
  void inject(std::vector<uint8_t> frame, const cc::IntStack& telemetry = {}) {
    rx_.push_back(std::move(frame));
    rx_int_.push_back(telemetry);
  }
  size_t rx_pending() const { return rx_.size(); }

  // The frames transmitted since the last clear()/take(), in order.
  const std::vector<Emitted>& sent() const { return sent_; }
  std::vector<Emitted> take() { return std::exchange(sent_, {}); }
  void clear() { sent_.clear(); }

  // While set, tx_burst takes nothing (a full transmit ring): frames stay with the device.
  bool refuse_tx = false;
  // While cleared, tx_burst takes frames without recording them (a wire nobody watches; benchmarks).
  bool keep_sent = true;

  // Buffers in the pool, i.e. not held by the device: equals pool_size() when nothing leaked.
  uint32_t free_buffers() const { return static_cast<uint32_t>(free_.size()); }
  uint32_t pool_size() const { return static_cast<uint32_t>(bufs_.size()); }

 private:
  const Clock* clock_;
  uint16_t frame_cap_;
  std::vector<uint8_t> storage_;
  std::vector<PktBuf> bufs_;
  std::vector<cc::IntStack> int_;  // one per buffer
  std::vector<PktBuf*> free_;
  std::deque<std::vector<uint8_t>> rx_;
  std::deque<cc::IntStack> rx_int_;
  std::vector<Emitted> sent_;
};

struct ProtoOptions {
  QpType type = QpType::kRc;
  Mtu mtu = Mtu::k1024;
  uint32_t sq_psn = 0x100;    // the first PSN our requester sends
  uint32_t rq_psn = 0x500;    // the first PSN our responder expects from the peer
  uint32_t peer_qpn = 0x5A5;  // the fake remote's QP number (UD: the source QP the peer claims)
  uint32_t qkey = 0x1234567;  // UD
  uint8_t timeout = 14;       // ~67 ms local ACK timeout
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 1;  // 10 us, what our RNR NAKs carry
  uint8_t max_rd_atomic = 4;  // our requester's READ/ATOMIC limit
  uint8_t max_dest_rd_atomic = 4;
  uint32_t access = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
  uint32_t max_wr = 64, max_sge = 4, max_inline = 64;
  size_t mem_bytes = 1 << 16;
  bool to_rts = true;       // false: the QP is left in RESET
  bool srq = false;         // receive through an SRQ of max_wr entries
  std::string cc = "none";  // the device's CC algorithm and parameters
  cc::Params cc_params;
  bool selective_repeat = false;  // the device's RC QPs use selective repeat
  uint64_t ack_hold_ns = 0;       // the device's ACK coalescing (DeviceConfig::ack_hold_ns)
};

// One device (GID ::ffff:10.0.0.1) with a ManualClock at 0, a CapturePort, a PD, one CQ for sends and
// receives, one registered buffer and one QP, by default in RTS against a fake remote at ::ffff:10.0.0.2.
class ProtoEnv {
 public:
  explicit ProtoEnv(const ProtoOptions& o = {});
  ~ProtoEnv();

  static Gid local_gid();
  static Gid peer_gid();

  // Memory: offsets into the registered buffer.
  uint8_t* at(size_t off) { return mem.data() + off; }
  uint64_t addr(size_t off) const { return reinterpret_cast<uint64_t>(mem.data() + off); }
  Sge sge(size_t off, uint32_t len) const { return Sge{addr(off), len, mr->lkey}; }
  void fill(size_t off, size_t len, uint8_t seed);  // a position-dependent pattern
  std::vector<uint8_t> bytes(size_t off, size_t len) const;
  uint64_t u64(size_t off) const;
  void set_u64(size_t off, uint64_t v);

  // Verbs shortcuts. post() sends one WR over one SGE at `off` (signaled unless flags say otherwise).
  int post_recv(size_t off, uint32_t len, uint64_t wr_id);
  int post(WrOpcode op, size_t off, uint32_t len, uint64_t wr_id, uint64_t remote_addr = 0, uint32_t rkey = 0,
           uint32_t flags = kSendSignaled);
  // Brings a QP of this device to RTS against the fake remote with the options' attributes.
  int connect(Qp* q);
  // Lifts the end-to-end credit limit with an ACK of the PSN before sq_psn (only before anything was sent).
  void unlimited_credits();
  std::vector<Wc> poll();  // every completion the CQ holds
  std::vector<AsyncEvent> events();

  // Playing the peer: headers of a frame the remote sends to our QP (Ethernet/IP addressed to this device,
  // BTH dest QP = our QPN), then injected for the next progress().
  wire::PacketHeaders peer_headers(uint8_t opcode, uint32_t psn) const;
  void inject(const wire::PacketHeaders& h, std::span<const uint8_t> payload = {},
              const cc::IntStack& telemetry = {});
  void inject_ack(uint32_t psn, wire::AethKind kind = wire::AethKind::kAck, uint8_t value = 31,
                  uint32_t msn = 0);
  void inject_read_resp(uint8_t opcode, uint32_t psn, std::span<const uint8_t> payload, uint32_t msn = 0);
  void inject_atomic_ack(uint32_t psn, uint64_t orig, uint32_t msn = 0);

  // Running the engine. run() calls progress() until a pass does nothing and returns the frames sent;
  // advance() moves the clock first; next() moves it to the device's next deadline (if any).
  std::vector<Emitted> run();
  std::vector<Emitted> advance(uint64_t ns);
  std::vector<Emitted> next();
  uint64_t now() const { return clock.now_ns(); }

  ProtoOptions opt;
  ManualClock clock;
  CapturePort port;
  std::unique_ptr<Device> dev;
  Pd* pd = nullptr;
  Cq* cq = nullptr;
  Mr* mr = nullptr;
  Srq* srq = nullptr;
  Qp* qp = nullptr;
  std::vector<uint8_t> mem;
};

// A payload of `n` bytes with a pattern that differs per `seed` and position.
std::vector<uint8_t> pattern(size_t n, uint8_t seed);

}  // namespace uroce::test
