// The one opcode table (IBA 9.2, table 39; CNP from A17.9.3). Code tests property masks from here; it
// does not enumerate opcodes in switch statements.
#pragma once

#include <array>
#include <cstdint>

#include "transport/wire/headers.h"

namespace uroce::wire {

namespace op {
// Wire opcodes by name. Transport bits 7..5: 000 RC, 001 UC, 011 UD, 100 CNP, 101 XRC (the RC opcodes
// plus kXrcBase, requests with an XRCETH after the BTH).
enum : uint8_t {
  kRcSendFirst = 0x00,
  kRcSendMiddle = 0x01,
  kRcSendLast = 0x02,
  kRcSendLastImm = 0x03,
  kRcSendOnly = 0x04,
  kRcSendOnlyImm = 0x05,
  kRcWriteFirst = 0x06,
  kRcWriteMiddle = 0x07,
  kRcWriteLast = 0x08,
  kRcWriteLastImm = 0x09,
  kRcWriteOnly = 0x0A,
  kRcWriteOnlyImm = 0x0B,
  kRcReadRequest = 0x0C,
  kRcReadRespFirst = 0x0D,
  kRcReadRespMiddle = 0x0E,
  kRcReadRespLast = 0x0F,
  kRcReadRespOnly = 0x10,
  kRcAck = 0x11,
  kRcAtomicAck = 0x12,
  kRcCmpSwap = 0x13,
  kRcFetchAdd = 0x14,
  kRcSendLastInv = 0x16,
  kRcSendOnlyInv = 0x17,
  kRcAtomicWrite = 0x1D,  // IBA 1.5 (the kernel's IB_OPCODE_RC_ATOMIC_WRITE)
  kUcSendFirst = 0x20,
  kUcSendMiddle = 0x21,
  kUcSendLast = 0x22,
  kUcSendLastImm = 0x23,
  kUcSendOnly = 0x24,
  kUcSendOnlyImm = 0x25,
  kUcWriteFirst = 0x26,
  kUcWriteMiddle = 0x27,
  kUcWriteLast = 0x28,
  kUcWriteLastImm = 0x29,
  kUcWriteOnly = 0x2A,
  kUcWriteOnlyImm = 0x2B,
  kUdSendOnly = 0x64,
  kUdSendOnlyImm = 0x65,
  kCnp = 0x81,
  kXrcBase = 0xA0,
  kXrcAck = kXrcBase + kRcAck,
  // uroce's selective-repeat NAK: a sequence-error NAK whose payload says which PSNs after the NAKed one the
  // responder holds (kSrNakPayloadBytes: a bitmap, bit i = PSN + i, least significant bit of byte 0 first,
  // then the highest PSN that arrived). From the manufacturer-specific range (IBA table 38: 0xC0-0xFF); sent
  // only to a requester that marks its requests with kBthResv7SelectiveRepeat, so a standard peer never sees
  // it.
  kUroceSrNak = 0xC0,
};
}  // namespace op

// Property bits of an opcode.
enum OpMask : uint32_t {
  kOpValid = 1u << 0,
  // extension headers, in wire order after the BTH
  kHasDeth = 1u << 1,
  kHasReth = 1u << 2,
  kHasAtomicEth = 1u << 3,
  kHasAeth = 1u << 4,
  kHasAtomicAckEth = 1u << 5,
  kHasImmDt = 1u << 6,
  kHasIeth = 1u << 7,
  kHasCnpBody = 1u << 8,
  // payload and direction
  kHasPayload = 1u << 9,   // may carry payload bytes (zero-length messages carry none)
  kIsRequest = 1u << 10,   // requester -> responder
  kIsResponse = 1u << 11,  // responder -> requester: ACK, READ response, ATOMIC ACK
  // operation
  kOpSend = 1u << 12,
  kOpWrite = 1u << 13,
  kOpRead = 1u << 14,
  kOpAtomic = 1u << 15,
  // position in a message
  kFirst = 1u << 16,
  kMiddle = 1u << 17,
  kLast = 1u << 18,
  kOnly = 1u << 19,
  // effects at the responder
  kConsumesRecvWqe = 1u << 20,  // SEND*, WRITE*_IMM on the packet that completes the message
  kCompletesRecv = 1u << 21,    // last/only packet of a message that generates a receive completion
  // transport service
  kRc = 1u << 22,
  kUc = 1u << 23,
  kUd = 1u << 24,
  kIsCnp = 1u << 25,
  kOpAtomicWrite = 1u << 26,  // ATOMIC WRITE: also kOpWrite (same access right, acknowledged like a WRITE)
  kXrc = 1u << 27,
  kHasXrceth = 1u << 28,  // first after the BTH
};

constexpr uint32_t kStartsMessage = kFirst | kOnly;
constexpr uint32_t kEndsMessage = kLast | kOnly;

struct OpInfo {
  const char* name;
  uint32_t mask;
  uint8_t hdr_len;  // BTH plus all extension headers, bytes
  // Offsets from the start of the BTH; 0 when the header is absent.
  uint8_t deth, reth, atomic_eth, aeth, atomic_ack_eth, immdt, ieth;
  uint8_t xrceth = 0;
};

namespace detail {

constexpr OpInfo make_op(const char* name, uint32_t mask) {
  OpInfo o{name, mask | kOpValid, sizeof(Bth), 0, 0, 0, 0, 0, 0, 0};
  auto place = [&o](uint32_t bit, uint8_t& off, uint8_t len) {
    if (o.mask & bit) {
      off = o.hdr_len;
      o.hdr_len = static_cast<uint8_t>(o.hdr_len + len);
    }
  };
  place(kHasXrceth, o.xrceth, sizeof(Xrceth));
  place(kHasDeth, o.deth, sizeof(Deth));
  place(kHasReth, o.reth, sizeof(Reth));
  place(kHasAtomicEth, o.atomic_eth, sizeof(AtomicEth));
  place(kHasAeth, o.aeth, sizeof(Aeth));
  place(kHasAtomicAckEth, o.atomic_ack_eth, sizeof(AtomicAckEth));
  place(kHasImmDt, o.immdt, sizeof(ImmDt));
  place(kHasIeth, o.ieth, sizeof(Ieth));
  if (o.mask & kHasCnpBody) o.hdr_len = static_cast<uint8_t>(o.hdr_len + sizeof(CnpBody));
  return o;
}

// SEND and WRITE opcodes are laid out identically for RC and UC (offset 0x20 apart).
template <typename Table>
constexpr void add_send_write(Table& t, uint8_t base, uint32_t svc, const char* const names[12]) {
  constexpr uint32_t kSendReq = kOpSend | kIsRequest | kHasPayload;
  constexpr uint32_t kWriteReq = kOpWrite | kIsRequest | kHasPayload;
  const uint32_t masks[12] = {
      kSendReq | kFirst,
      kSendReq | kMiddle,
      kSendReq | kLast | kConsumesRecvWqe | kCompletesRecv,
      kSendReq | kLast | kHasImmDt | kConsumesRecvWqe | kCompletesRecv,
      kSendReq | kOnly | kConsumesRecvWqe | kCompletesRecv,
      kSendReq | kOnly | kHasImmDt | kConsumesRecvWqe | kCompletesRecv,
      kWriteReq | kFirst | kHasReth,
      kWriteReq | kMiddle,
      kWriteReq | kLast,
      kWriteReq | kLast | kHasImmDt | kConsumesRecvWqe | kCompletesRecv,
      kWriteReq | kOnly | kHasReth,
      kWriteReq | kOnly | kHasReth | kHasImmDt | kConsumesRecvWqe | kCompletesRecv,
  };
  for (int i = 0; i < 12; ++i) t[base + i] = make_op(names[i], masks[i] | svc);
}

constexpr std::array<OpInfo, 256> build_table() {
  std::array<OpInfo, 256> t{};
  for (auto& e : t) e = OpInfo{"UNKNOWN", 0, 0, 0, 0, 0, 0, 0, 0, 0};

  const char* const rc[12] = {"RC_SEND_FIRST", "RC_SEND_MIDDLE",    "RC_SEND_LAST",   "RC_SEND_LAST_IMM",
                              "RC_SEND_ONLY",  "RC_SEND_ONLY_IMM",  "RC_WRITE_FIRST", "RC_WRITE_MIDDLE",
                              "RC_WRITE_LAST", "RC_WRITE_LAST_IMM", "RC_WRITE_ONLY",  "RC_WRITE_ONLY_IMM"};
  const char* const uc[12] = {"UC_SEND_FIRST", "UC_SEND_MIDDLE",    "UC_SEND_LAST",   "UC_SEND_LAST_IMM",
                              "UC_SEND_ONLY",  "UC_SEND_ONLY_IMM",  "UC_WRITE_FIRST", "UC_WRITE_MIDDLE",
                              "UC_WRITE_LAST", "UC_WRITE_LAST_IMM", "UC_WRITE_ONLY",  "UC_WRITE_ONLY_IMM"};
  add_send_write(t, op::kRcSendFirst, kRc, rc);
  add_send_write(t, op::kUcSendFirst, kUc, uc);

  constexpr uint32_t kReadResp = kOpRead | kIsResponse | kHasPayload | kRc;
  t[op::kRcReadRequest] = make_op("RC_READ_REQUEST", kOpRead | kIsRequest | kOnly | kHasReth | kRc);
  t[op::kRcReadRespFirst] = make_op("RC_READ_RESP_FIRST", kReadResp | kFirst | kHasAeth);
  t[op::kRcReadRespMiddle] = make_op("RC_READ_RESP_MIDDLE", kReadResp | kMiddle);
  t[op::kRcReadRespLast] = make_op("RC_READ_RESP_LAST", kReadResp | kLast | kHasAeth);
  t[op::kRcReadRespOnly] = make_op("RC_READ_RESP_ONLY", kReadResp | kOnly | kHasAeth);
  t[op::kRcAck] = make_op("RC_ACK", kIsResponse | kOnly | kHasAeth | kRc);
  t[op::kRcAtomicAck] =
      make_op("RC_ATOMIC_ACK", kOpAtomic | kIsResponse | kOnly | kHasAeth | kHasAtomicAckEth | kRc);
  t[op::kRcCmpSwap] = make_op("RC_CMP_SWAP", kOpAtomic | kIsRequest | kOnly | kHasAtomicEth | kRc);
  t[op::kRcFetchAdd] = make_op("RC_FETCH_ADD", kOpAtomic | kIsRequest | kOnly | kHasAtomicEth | kRc);
  constexpr uint32_t kSendInv =
      kOpSend | kIsRequest | kHasPayload | kHasIeth | kConsumesRecvWqe | kCompletesRecv | kRc;
  t[op::kRcSendLastInv] = make_op("RC_SEND_LAST_INV", kSendInv | kLast);
  t[op::kRcSendOnlyInv] = make_op("RC_SEND_ONLY_INV", kSendInv | kOnly);
  // ATOMIC WRITE: a RETH and exactly 8 payload bytes, answered with an ACK.
  t[op::kRcAtomicWrite] = make_op(
      "RC_ATOMIC_WRITE", kOpWrite | kOpAtomicWrite | kIsRequest | kHasPayload | kOnly | kHasReth | kRc);

  constexpr uint32_t kUdSend =
      kOpSend | kIsRequest | kHasPayload | kOnly | kHasDeth | kConsumesRecvWqe | kCompletesRecv | kUd;
  t[op::kUdSendOnly] = make_op("UD_SEND_ONLY", kUdSend);
  t[op::kUdSendOnlyImm] = make_op("UD_SEND_ONLY_IMM", kUdSend | kHasImmDt);

  t[op::kCnp] = make_op("CNP", kIsCnp | kHasCnpBody);

  // XRC: each RC opcode at kXrcBase + the RC one, requests carrying an XRCETH; responses as RC's.
  const char* const xrc[0x20] = {"XRC_SEND_FIRST",
                                 "XRC_SEND_MIDDLE",
                                 "XRC_SEND_LAST",
                                 "XRC_SEND_LAST_IMM",
                                 "XRC_SEND_ONLY",
                                 "XRC_SEND_ONLY_IMM",
                                 "XRC_WRITE_FIRST",
                                 "XRC_WRITE_MIDDLE",
                                 "XRC_WRITE_LAST",
                                 "XRC_WRITE_LAST_IMM",
                                 "XRC_WRITE_ONLY",
                                 "XRC_WRITE_ONLY_IMM",
                                 "XRC_READ_REQUEST",
                                 "XRC_READ_RESP_FIRST",
                                 "XRC_READ_RESP_MIDDLE",
                                 "XRC_READ_RESP_LAST",
                                 "XRC_READ_RESP_ONLY",
                                 "XRC_ACK",
                                 "XRC_ATOMIC_ACK",
                                 "XRC_CMP_SWAP",
                                 "XRC_FETCH_ADD",
                                 "UNKNOWN",
                                 "XRC_SEND_LAST_INV",
                                 "XRC_SEND_ONLY_INV",
                                 "UNKNOWN",
                                 "UNKNOWN",
                                 "UNKNOWN",
                                 "UNKNOWN",
                                 "UNKNOWN",
                                 "XRC_ATOMIC_WRITE",
                                 "UNKNOWN",
                                 "UNKNOWN"};
  for (uint32_t o = 0; o < 0x20; ++o) {
    const uint32_t m = t[o].mask;
    if (!(m & kOpValid) || !(m & kRc)) continue;
    const uint32_t xm = (m & ~(kRc | kOpValid)) | kXrc | ((m & kIsRequest) ? uint32_t{kHasXrceth} : 0u);
    t[op::kXrcBase + o] = make_op(xrc[o], xm);
  }
  // uroce's selective-repeat NAK (manufacturer-specific range).
  t[op::kUroceSrNak] = make_op("UROCE_SR_NAK", kIsResponse | kOnly | kHasAeth | kHasPayload | kRc);
  return t;
}

}  // namespace detail

inline constexpr std::array<OpInfo, 256> kOpTable = detail::build_table();

constexpr const OpInfo& op_info(uint8_t opcode) { return kOpTable[opcode]; }
constexpr bool op_has(uint8_t opcode, uint32_t bits) { return (kOpTable[opcode].mask & bits) == bits; }
constexpr const char* op_name(uint8_t opcode) { return kOpTable[opcode].name; }

static_assert(op_info(op::kRcWriteOnlyImm).hdr_len == 12 + 16 + 4);
static_assert(op_info(op::kRcWriteOnlyImm).immdt == 28);
static_assert(op_info(op::kRcAtomicAck).hdr_len == 12 + 4 + 8);
static_assert(op_info(op::kUdSendOnlyImm).immdt == 20);
static_assert(op_info(op::kRcCmpSwap).hdr_len == 40);
static_assert(op_info(op::kCnp).hdr_len == 28);
static_assert(op_info(op::kUroceSrNak).hdr_len == 12 + 4);
static_assert(op_info(op::kRcAtomicWrite).hdr_len == 12 + 16);
static_assert(op_info(op::kXrcBase + op::kRcWriteOnlyImm).hdr_len == 12 + 4 + 16 + 4);
static_assert(op_info(op::kXrcBase + op::kRcWriteOnly).reth == 16);
static_assert(op_info(op::kXrcBase + op::kRcAtomicWrite).reth == 16);
static_assert(op_info(op::kXrcAck).hdr_len == 12 + 4 && !(op_info(op::kXrcAck).mask & kHasXrceth));

}  // namespace uroce::wire
