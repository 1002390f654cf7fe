// The switch model's knobs and the frame-level operations it needs: traffic classification (priority, ECN
// capability, RoCE data packet), RED-style ECN marking, CE marking with the IPv4 checksum fixed, and the
// 802.1Qbb PFC frame (build and parse). See docs/fabric.md for the model as a whole.
//
// Priority: the VLAN PCP when the frame is 802.1Q-tagged, else DSCP >> 3 (DSCP 26 -> priority 3, the
// lossless RoCE class of the usual deployments; DSCP 48, which CNPs carry, -> priority 6).
#pragma once

#include <cstdint>

#include "transport/packet_io.h"

namespace uroce::fabric {

constexpr int kPriorities = 8;

enum class FlowControl : uint8_t {
  kNone,    // lossy: tail drop when the shared buffer or a queue's threshold is exceeded
  kPfc,     // 802.1Qbb pause frames per priority on the lossless priorities
  kCredit,  // InfiniBand-style link credits per VL (= priority) in 64-byte blocks
};
const char* flow_control_name(FlowControl fc);

// RED-style marking on an egress queue's instantaneous depth q (bytes, this priority's queue, measured
// as the frame leaves: what stays behind it): P(mark) = 0 for q <= kmin, pmax * (q - kmin) / (kmax - kmin)
// for kmin < q <= kmax, 1 above kmax (the DCQCN paper's profile).
struct EcnConfig {
  bool enabled = false;
  uint32_t kmin_bytes = 100 * 1024;
  uint32_t kmax_bytes = 400 * 1024;
  double pmax = 0.2;
};
double red_mark_probability(const EcnConfig& ecn, uint64_t qlen_bytes);

struct FabricConfig {
  bool enabled = false;  // false: the ideal switch of sim_switch.h (FIFO per egress, link queue limit)
  // Shared buffer: every frame held by the switch counts against buffer_bytes. Lossy priorities are also
  // limited per egress queue by a dynamic threshold, queue < dt_alpha * (buffer_bytes - used) (Choudhury &
  // Hahne), and by port_limit_bytes when that is non-zero.
  uint64_t buffer_bytes = 4 << 20;
  double dt_alpha = 1.0;
  uint64_t port_limit_bytes = 0;
  EcnConfig ecn;
  FlowControl flow_control = FlowControl::kNone;
  uint8_t lossless_mask = 1u << 3;  // priorities PFC / credits protect; the others are lossy
  // PFC, per (ingress port, priority): XOFF when the bytes it holds reach xoff, XON when they fall below
  // xon; headroom absorbs what is in flight after XOFF (beyond xoff + headroom the frame is dropped and
  // counted as drop_headroom).
  uint32_t pfc_xoff_bytes = 96 * 1024;
  uint32_t pfc_xon_bytes = 64 * 1024;
  uint32_t pfc_headroom_bytes = 64 * 1024;
  uint16_t pfc_quanta = 0xFFFF;  // pause time sent with XOFF, in 512-bit times; refreshed at half of it
  // PFC watchdog (0: off): a priority of a port paused by the device beyond it without a break for this long
  // is in a storm: the switch resumes it and ignores that device's PFC frames for it until they stop for as
  // long (or an XON comes), so the paused queue drains to the device and the pause spreads no further.
  uint64_t pfc_watchdog_ns = 0;
  // Credits: the receive buffer each port advertises per VL (lossless priority), in bytes.
  uint32_t credit_bytes = 128 * 1024;
  bool int_enabled = false;  // stamp an IntHop on RoCE request packets at egress
  uint64_t ecmp_salt = 0;    // mixed into the ECMP hash; equal on all switches by default (polarization)
};

constexpr uint32_t kCreditBlock = 64;
inline uint32_t credit_blocks(uint32_t bytes) { return (bytes + kCreditBlock - 1) / kCreditBlock; }

// What the switch needs to know about a frame, read from its bytes.
struct FrameClass {
  bool ip = false;  // IPv4 or IPv6
  bool ipv4 = false;
  uint16_t l3_offset = 0;  // where the IP header starts
  uint8_t prio = 0;
  uint8_t ecn = 0;            // low 2 bits of TOS / traffic class
  bool roce = false;          // UDP to port 4791
  bool roce_request = false;  // RoCE packet of a request opcode (carries data toward a responder)
  uint16_t bth_offset = 0;    // RoCE with a whole BTH: where it starts (0 otherwise)
  uint64_t flow_hash = 0;     // of source/destination IP, UDP ports (0 for non-IP)
};
FrameClass classify(const uint8_t* frame, uint16_t len, uint64_t salt);
// classify(...).prio alone, cheaply (per frame on a host's transmit path).
uint8_t frame_prio(const uint8_t* frame, uint16_t len);

// CE marking, shared by the simulated switch and uroced. The RoCEv2 ICRC masks TOS / traffic class
// (A17.4.3), so it stays valid.
enum class EcnResult : uint8_t {
  kNotIp,      // no IPv4/IPv6 header (possibly after one 802.1Q tag): nothing to mark
  kNotEct,     // ECN field 00
  kMarked,     // ECT(0)/ECT(1) turned into CE; an IPv4 header checksum updated (RFC 1624, options fine)
  kAlreadyCe,  // CE already
};
// The IP header at `ip`, `avail` bytes of it present.
EcnResult mark_ce_ip(uint8_t* ip, size_t avail);
// An Ethernet frame of `len` bytes, with or without one 802.1Q tag.
EcnResult mark_ce_frame(uint8_t* frame, uint32_t len);
// A frame classify() described: true when it was ECT and is CE now (frame untouched otherwise).
bool mark_ce(uint8_t* frame, const FrameClass& c);

// 802.1Qbb priority-based flow control frame: dst 01:80:C2:00:00:01, MAC control ethertype 0x8808,
// opcode 0x0101, class-enable vector (bit i: priority i), eight 16-bit pause times in quanta of 512 bit
// times, padded to the 60-byte minimum (the simulator carries no FCS). Quanta 0 is XON.
constexpr uint16_t kEtherTypeMacControl = 0x8808;
constexpr uint16_t kPfcOpcode = 0x0101;
constexpr uint16_t kPfcFrameLen = 60;
struct PfcFrame {
  uint8_t enable = 0;
  uint16_t quanta[kPriorities] = {};
};
uint16_t build_pfc(uint8_t* out, uint64_t src_mac, const PfcFrame& p);
bool parse_pfc(const uint8_t* frame, uint16_t len, PfcFrame* out);
// Link credit update, the real-time form of InfiniBand's flow control packet (IBA 7.9.4), which each end of
// a credit-controlled link sends the other: never forwarded (link-local destination 01:80:C2:00:00:01, IEEE
// local experimental ether type 0x88B5, then the subtype "FC"). For each VL in `vl_mask`, in 64-byte blocks
// modulo 2^32 counted since the link came up: FCTBS, the total the sender of the update has transmitted on
// that VL (the receiver of the update sets what it has received to it: what was lost is not waited for),
// and FCCL, the credit limit it grants: the total the other end may have transmitted (blocks received plus
// buffer free). The other end may send while its own FCTBS stays within FCCL. Absolute counts: a lost or
// repeated update only delays credit.
constexpr uint16_t kEtherTypeLocalExperimental = 0x88B5;
constexpr uint16_t kCreditSubtype = 0x4643;  // "FC"
constexpr uint16_t kCreditFrameLen = 18 + 8 * kPriorities;
struct CreditFrame {
  uint8_t vl_mask = 0;
  uint32_t fctbs[kPriorities] = {};
  uint32_t fccl[kPriorities] = {};
};
// The credit a sender has on a VL: limit - sent, as a signed difference of the modulo-2^32 counts (0 when
// it has sent up to or past the limit).
inline uint32_t credit_left(uint32_t fccl, uint32_t fctbs) {
  const auto d = static_cast<int32_t>(fccl - fctbs);
  return d > 0 ? static_cast<uint32_t>(d) : 0;
}
uint16_t build_credit(uint8_t* out, uint64_t src_mac, const CreditFrame& c);
// The frame is a credit update by its ether type and subtype (parse_credit() then checks its length).
inline bool is_credit_frame(const uint8_t* f, uint16_t len) {
  return len >= 16 && (f[12] << 8 | f[13]) == kEtherTypeLocalExperimental &&
         (f[14] << 8 | f[15]) == kCreditSubtype;
}
bool parse_credit(const uint8_t* frame, uint16_t len, CreditFrame* out);

// The line rate of a real-time port between a process and uroced (memif has none of its own): what both
// ends count PFC pause quanta at, so an XOFF pauses the process as long as uroced expects.
constexpr uint64_t kRealTimeLineRateBps = 100'000'000'000;
inline uint64_t pfc_quanta_ns(uint16_t quanta, uint64_t rate_bps) {
  return rate_bps == 0 ? 0 : uint64_t{quanta} * 512 * 1'000'000'000 / rate_bps;
}

}  // namespace uroce::fabric
