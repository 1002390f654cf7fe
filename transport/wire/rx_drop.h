// Why a received frame was dropped: one enum, one name table, one counter array (rxe_hw_counters style).
// The datapath bumps a counter and never logs per packet.
#pragma once

#include <array>
#include <cstdint>

namespace uroce::wire {

#define UROCE_RX_DROP_REASONS(X)                        \
  X(kNone, "ok")                                        \
  X(kTruncEth, "truncated_eth")                         \
  X(kTruncVlan, "truncated_vlan")                       \
  X(kEtherType, "not_ip_ethertype")                     \
  X(kTruncIp, "truncated_ip")                           \
  X(kIpVersion, "ip_version_mismatch")                  \
  X(kIpv4Options, "ipv4_options")                       \
  X(kIpv4Checksum, "ipv4_bad_checksum")                 \
  X(kIpv4Fragment, "ipv4_fragment")                     \
  X(kIpLength, "ip_length_mismatch")                    \
  X(kNotUdp, "not_udp")                                 \
  X(kTruncUdp, "truncated_udp")                         \
  X(kUdpLength, "udp_length_mismatch")                  \
  X(kUdpPort, "udp_port_not_4791")                      \
  X(kTruncBth, "truncated_bth")                         \
  X(kBthVersion, "bth_version")                         \
  X(kOpcode, "unknown_opcode")                          \
  X(kTruncExtHdr, "truncated_ext_header")               \
  X(kTruncTail, "truncated_payload_or_icrc")            \
  X(kPadCount, "bad_pad_count")                         \
  X(kPayloadNotAllowed, "payload_on_no_payload_opcode") \
  X(kIcrc, "bad_icrc")

enum class RxDrop : uint8_t {
#define X(name, str) name,
  UROCE_RX_DROP_REASONS(X)
#undef X
      kCount
};

constexpr const char* rx_drop_name(RxDrop r) {
  constexpr const char* kNames[] = {
#define X(name, str) str,
      UROCE_RX_DROP_REASONS(X)
#undef X
  };
  return kNames[static_cast<uint8_t>(r)];
}

// Per-port drop counters, indexed by reason. Single writer (the engine thread); readers take a snapshot.
struct RxDropCounters {
  std::array<uint64_t, static_cast<size_t>(RxDrop::kCount)> n{};
  void bump(RxDrop r) { ++n[static_cast<size_t>(r)]; }
  uint64_t operator[](RxDrop r) const { return n[static_cast<size_t>(r)]; }
};

}  // namespace uroce::wire
