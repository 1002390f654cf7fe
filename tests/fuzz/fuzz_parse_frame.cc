// libFuzzer target for the receive parser. Properties checked on every input:
//  - parse_frame never reads outside the frame (the input is copied into a heap buffer of exactly its size,
//    so ASan sees any over-read), also after a checksum-only rejection is resealed and parsed again;
//  - an accepted frame's offsets are consistent, and every header the opcode has, the payload, ecn(),
//    decode_headers and write_recv_grh read only bytes inside the frame;
//  - an accepted frame rebuilds byte for byte from decode_headers + build_frame: the invariant the golden
//    tests rely on (up to the two canonical forms packet.h documents). A mismatch prints the frames and
//    aborts.
//
// Seeds: make_seeds (one frame per opcode x IPv4/IPv6 x VLAN). Run it all with scripts/fuzz.sh.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/support/frames.h"
#include "transport/wire/packet.h"

namespace {

using namespace uroce::wire;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_parse_frame: %s\n", what);
  std::abort();
}

void check(bool ok, const char* what) {
  if (!ok) fail(what);
}

// Reads every byte of [p, p + n) so that ASan checks it lies inside the frame.
volatile uint8_t g_sink;
void touch(const void* p, size_t n) {
  uint8_t x = 0;
  for (size_t i = 0; i < n; ++i) x = static_cast<uint8_t>(x ^ static_cast<const uint8_t*>(p)[i]);
  g_sink = x;
}
template <typename H>
void touch(const H& h) {
  touch(&h, sizeof(H));
}

void dump(const char* name, const uint8_t* p, size_t n) {
  std::fprintf(stderr, "%s (%zu bytes):", name, n);
  for (size_t i = 0; i < n; ++i) std::fprintf(stderr, "%s%02x", i % 32 ? " " : "\n  ", p[i]);
  std::fprintf(stderr, "\n");
}

void check_offsets(const ParsedPacket& pkt, size_t len) {
  check(pkt.frame_len <= len, "frame_len beyond the input");
  check(pkt.l3_off < pkt.l4_off && pkt.l4_off < pkt.bth_off, "header offsets out of order");
  check(pkt.bth_off + pkt.op().hdr_len == pkt.payload_off, "payload does not follow the extension headers");
  check(pkt.payload_off + pkt.payload_len + pkt.pad + kIcrcLen == pkt.frame_len,
        "payload, pad and ICRC do not end the IP datagram");
  check((pkt.payload_len + pkt.pad) % 4 == 0 && pkt.pad < 4, "pad count inconsistent");
  check(pkt.op().mask & kOpValid, "accepted an invalid opcode");
}

void touch_accessors(const ParsedPacket& pkt) {
  const uint32_t mask = pkt.op().mask;
  touch(pkt.bth());
  if (mask & kHasReth) touch(pkt.reth());
  if (mask & kHasAeth) touch(pkt.aeth());
  if (mask & kHasAtomicEth) touch(pkt.atomic_eth());
  if (mask & kHasAtomicAckEth) touch(pkt.atomic_ack_eth());
  if (mask & kHasImmDt) touch(pkt.immdt());
  if (mask & kHasIeth) touch(pkt.ieth());
  if (mask & kHasDeth) touch(pkt.deth());
  touch(pkt.payload(), pkt.payload_len);
  check(static_cast<uint8_t>(pkt.ecn()) < 4, "ECN codepoint out of range");
}

void check_recv_grh(const ParsedPacket& pkt) {
  uint8_t grh[sizeof(Grh)];
  write_recv_grh(pkt, grh);
  const uint8_t* ip = pkt.frame + pkt.l3_off;
  if (pkt.ipv6) {
    check(std::memcmp(grh, ip, sizeof(Grh)) == 0, "GRH is not the IPv6 header");
  } else {
    const uint8_t zero[sizeof(Grh) - sizeof(Ipv4Hdr)] = {};
    check(std::memcmp(grh, zero, sizeof(zero)) == 0, "GRH of an IPv4 frame does not start with zeros");
    check(std::memcmp(grh + sizeof(zero), ip, sizeof(Ipv4Hdr)) == 0, "GRH does not end with the IPv4 header");
  }
}

// The accepted frame as build_frame writes it. PacketHeaders carries every header bit, so the only
// differences allowed are the two packet.h documents: pad bytes are built as zeros, and an IPv4 checksum
// stored as 0xFFFF (the other one's-complement zero) is built as 0x0000.
std::vector<uint8_t> canonical(const ParsedPacket& pkt) {
  std::vector<uint8_t> f(pkt.frame, pkt.frame + pkt.frame_len);
  if (!pkt.ipv6) {
    auto& csum = reinterpret_cast<Ipv4Hdr*>(f.data() + pkt.l3_off)->csum;
    if (csum.get() == 0xFFFF) csum.set(0);  // outside the ICRC (masked), so no reseal needed
  }
  uint8_t* pad = f.data() + pkt.payload_off + pkt.payload_len;
  if (pkt.pad != 0 && std::any_of(pad, pad + pkt.pad, [](uint8_t b) { return b != 0; })) {
    std::memset(pad, 0, pkt.pad);
    uint8_t* icrc = f.data() + pkt.frame_len - kIcrcLen;
    icrc_store(icrc, icrc_roce_v2_contiguous(f.data() + pkt.l3_off, icrc));
  }
  return f;
}

void check_rebuild(const ParsedPacket& pkt) {
  const PacketHeaders h = decode_headers(pkt);
  check(h.bth.opcode == pkt.opcode && h.ip.ipv6 == pkt.ipv6, "decode_headers disagrees with parse_frame");
  std::vector<uint8_t> out(headers_len(h) + pkt.payload_len + trailer_len(pkt.payload_len));
  out.resize(build_frame(h, ConstBytes(pkt.payload(), pkt.payload_len), out.data()));
  const std::vector<uint8_t> expected = canonical(pkt);
  if (out == expected) return;
  size_t first = 0;
  while (first < out.size() && first < expected.size() && out[first] == expected[first]) ++first;
  std::fprintf(stderr, "fuzz_parse_frame: %s frame does not rebuild; first difference at byte %zu\n",
               op_name(pkt.opcode), first);
  dump("accepted", pkt.frame, pkt.frame_len);
  dump("expected", expected.data(), expected.size());
  dump("rebuilt", out.data(), out.size());
  fail("rebuild mismatch");
}

// Parses `frame` (heap-allocated, exactly its size, so ASan sees any over-read) and checks what it accepts.
RxDrop parse_and_check(const std::vector<uint8_t>& frame) {
  ParsedPacket pkt;
  const RxDrop r = parse_frame(frame.data(), frame.size(), &pkt);
  check(r < RxDrop::kCount, "drop reason out of range");
  if (r != RxDrop::kNone) return r;
  check(pkt.frame == frame.data(), "parsed packet does not point at the frame");
  check_offsets(pkt, frame.size());
  touch_accessors(pkt);
  check_recv_grh(pkt);
  check_rebuild(pkt);
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> frame(data, data + size);
  const RxDrop r = parse_and_check(frame);
  // A frame rejected only for its IPv4 checksum or ICRC is tried again with both recomputed, so that mutated
  // header fields also reach the checks behind the ICRC (BTH version, opcode, pad count, payload rules) and
  // the rebuild check, instead of depending on the fuzzer solving a CRC.
  if (r == RxDrop::kIcrc || r == RxDrop::kIpv4Checksum) {
    uroce::test::reseal(frame);
    parse_and_check(frame);
  }
  return 0;
}
