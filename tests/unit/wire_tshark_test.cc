// An independent decoder for the builder: every opcode, in every frame shape, written to a pcap and read back
// by tshark's InfiniBand (RRoCE, UDP 4791) dissector, which must find the header fields we wrote and raise no
// malformed-packet or expert warning. Skipped when tshark is not installed.
#include <gtest/gtest.h>
#include <stdlib.h>  // mkdtemp

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/support/frames.h"
#include "tests/support/pcap_io.h"
#include "transport/wire/packet.h"

namespace uroce::wire {
namespace {

// RC SEND_ONLY/LAST payloads under 16 bytes make tshark 4.0's RPC-over-RDMA heuristic read the message type
// at offset 12 before its length check, which marks the frame malformed. 18 bytes avoids that; pad is 2.
constexpr size_t kPayloadLen = 18;

// Zero UDP checksums over IPv6 are what RoCEv2 senders (rxe, NICs) put; without the first option tshark
// calls them illegal (RFC 6935/6936 allow them for tunnels). The second makes tshark verify IPv4 checksums.
constexpr const char* kTsharkOpts = "-n -o udp.ignore_ipv6_zero_checksum:TRUE -o ip.check_checksum:TRUE";

// The fields read back, in output order.
constexpr const char* kFields =
    "frame.number vlan.id ip.checksum.status infiniband.bth.opcode infiniband.bth.destqp infiniband.bth.psn "
    "infiniband.bth.p_key infiniband.bth.padcnt infiniband.bth.se infiniband.bth.m infiniband.bth.a "
    "infiniband.reserved infiniband.deth infiniband.reth infiniband.atomiceth infiniband.aeth "
    "infiniband.atomicacketh infiniband.immdt infiniband.ieth infiniband.deth.q_key infiniband.deth.srcqp "
    "infiniband.reth.va infiniband.reth.r_key infiniband.reth.dmalen infiniband.atomiceth.swapdt "
    "infiniband.atomiceth.cmpdt infiniband.aeth.syndrome infiniband.aeth.msn "
    "infiniband.atomicacketh.origremdt infiniband.invariant.crc infiniband.vendor data.data";

// Extension headers as tshark names them (the AtomicETH reuses the RETH's va and r_key fields).
const std::pair<uint32_t, const char*> kExtHeaders[] = {{kHasDeth, "infiniband.deth"},
                                                        {kHasReth, "infiniband.reth"},
                                                        {kHasAtomicEth, "infiniband.atomiceth"},
                                                        {kHasAeth, "infiniband.aeth"},
                                                        {kHasAtomicAckEth, "infiniband.atomicacketh"},
                                                        {kHasImmDt, "infiniband.immdt"},
                                                        {kHasIeth, "infiniband.ieth"}};

using Row = std::map<std::string, std::string>;

struct Case {
  PacketHeaders h;
  std::vector<uint8_t> payload;
  std::vector<uint8_t> frame;
};

// Every opcode in the four shapes; QPN, PSN and one field of each extension header differ per frame, so a
// mix-up between frames or headers shows.
std::vector<Case> make_cases() {
  std::vector<Case> cases;
  uint32_t n = 0;
  for (bool ipv6 : {false, true}) {
    for (bool vlan : {false, true}) {
      for (uint8_t o : test::all_opcodes()) {
        // A manufacturer-specific opcode: tshark shows its bytes after the BTH as opaque data, not as an
        // AETH and payload (transport_test checks the SR NAK's fields).
        if (o == op::kUroceSrNak) continue;
        Case c{test::sample_headers(o, ipv6, vlan), test::sample_payload(o, kPayloadLen), {}};
        ++n;
        c.h.bth.dqpn = 0x010000 + n;
        if (!op_has(o, kIsCnp)) c.h.bth.psn = 0xA00000 + n;  // a CNP's PSN is 0 (A17.9.3)
        c.h.reth.rkey = 0x12340000 + n;
        c.h.aeth.msn = 0x000300 + n;
        c.h.atomic.rkey = 0x0BAD0000 + n;
        c.h.atomic.swap_add += n;
        c.h.atomic_ack_orig += n;
        c.h.imm_be = 0xEFBE0000 + n;
        c.h.ieth_rkey = 0x00C00000 + n;
        c.h.deth.src_qp = 0x000200 + n;
        c.frame = test::make_frame(c.h, c.payload);
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

std::string hex(const uint8_t* p, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += {kDigits[p[i] >> 4], kDigits[p[i] & 0xF]};
  return s;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  for (size_t pos = 0, end;; pos = end + 1) {
    end = s.find(sep, pos);
    parts.push_back(s.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    if (end == std::string::npos) return parts;
  }
}

// tshark lists every occurrence of a field, comma-separated; most of the checks read the first.
std::string first(const Row& r, const char* field) { return r.at(field).substr(0, r.at(field).find(',')); }
std::string last(const Row& r, const char* field) {
  const std::string& s = r.at(field);
  return s.substr(s.rfind(',') == std::string::npos ? 0 : s.rfind(',') + 1);
}

// A numeric field as a decimal string, whatever base tshark printed it in; "<absent>" when missing.
std::string num(const Row& r, const char* field) {
  const std::string s = first(r, field);
  if (s.empty()) return "<absent>";
  if (s == "True" || s == "False") return s == "True" ? "1" : "0";  // newer tshark prints booleans so
  return std::to_string(std::strtoull(s.c_str(), nullptr, 0));
}
std::string dec(uint64_t v) { return std::to_string(v); }

// Runs a shell command; returns its stdout lines and sets `status` to its exit status.
std::vector<std::string> run(const std::string& cmd, int* status) {
  *status = -1;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return {};
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  *status = pclose(p);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out.empty() ? std::vector<std::string>{} : split(out, '\n');
}

void expect_fields(const Case& c, const Row& r) {
  const uint8_t o = c.h.bth.opcode;
  const OpInfo& op = op_info(o);
  const auto& f = c.frame;
  EXPECT_EQ(num(r, "vlan.id"), c.h.eth.vlan ? dec(c.h.eth.vid) : "<absent>");
  EXPECT_EQ(num(r, "ip.checksum.status"), c.h.ip.ipv6 ? "<absent>" : "1");  // 1: good
  EXPECT_EQ(num(r, "infiniband.bth.opcode"), dec(o));
  EXPECT_EQ(num(r, "infiniband.bth.destqp"), dec(c.h.bth.dqpn));
  EXPECT_EQ(num(r, "infiniband.bth.psn"), dec(c.h.bth.psn));
  EXPECT_EQ(num(r, "infiniband.bth.p_key"), dec(c.h.bth.pkey));
  EXPECT_EQ(num(r, "infiniband.bth.padcnt"), dec(-c.payload.size() & 3));
  EXPECT_EQ(num(r, "infiniband.bth.se"), dec(c.h.bth.se));
  EXPECT_EQ(num(r, "infiniband.bth.m"), dec(c.h.bth.migreq));
  EXPECT_EQ(num(r, "infiniband.bth.a"), dec(c.h.bth.ackreq));
  EXPECT_EQ(first(r, "infiniband.reserved"), hex(&c.h.bth.resv8a, 1));  // BTH byte 4: FECN/BECN
  const std::string icrc = hex(f.data() + f.size() - kIcrcLen, kIcrcLen);
  if (op.mask & kIsCnp) {  // unknown to tshark: the 16 reserved bytes and the ICRC end up as vendor data
    EXPECT_EQ(last(r, "infiniband.vendor"), std::string(32, '0') + icrc);
    return;
  }
  if (o == op::kRcAtomicWrite && r.at("infiniband.reth").empty()) {
    // tshark 4.0 predates ATOMIC WRITE (IBA 1.5): it decodes the BTH and shows the RETH, the 8 bytes and the
    // ICRC as unknown data. A tshark that knows the opcode gets the full checks below.
    const size_t bth = f.size() - kIcrcLen - c.payload.size() - sizeof(Reth) - sizeof(Bth);
    EXPECT_EQ(last(r, "infiniband.vendor"), hex(f.data() + bth + sizeof(Bth), f.size() - bth - sizeof(Bth)));
    return;
  }
  if ((op.mask & kXrc) && !r.at("infiniband.vendor").empty()) {
    // tshark 4.0 names the XRC opcodes but decodes none of their headers: after the BTH it shows the
    // XRCETH, the other headers, the payload and the ICRC as unknown data.
    const size_t bth = f.size() - kIcrcLen - c.payload.size() - (-c.payload.size() & 3) - op.hdr_len;
    EXPECT_EQ(last(r, "infiniband.vendor"), hex(f.data() + bth + sizeof(Bth), f.size() - bth - sizeof(Bth)));
    return;
  }
  for (const auto& [bit, field] : kExtHeaders) EXPECT_EQ(r.at(field).empty(), !(op.mask & bit)) << field;
  if (op.mask & kHasDeth) {
    EXPECT_EQ(num(r, "infiniband.deth.q_key"), dec(c.h.deth.qkey));
    EXPECT_EQ(num(r, "infiniband.deth.srcqp"), dec(c.h.deth.src_qp));
  }
  if (op.mask & kHasReth) {
    EXPECT_EQ(num(r, "infiniband.reth.va"), dec(c.h.reth.va));
    EXPECT_EQ(num(r, "infiniband.reth.r_key"), dec(c.h.reth.rkey));
    EXPECT_EQ(num(r, "infiniband.reth.dmalen"), dec(c.h.reth.dma_len));
  }
  if (op.mask & kHasAtomicEth) {
    EXPECT_EQ(num(r, "infiniband.reth.va"), dec(c.h.atomic.va));
    EXPECT_EQ(num(r, "infiniband.reth.r_key"), dec(c.h.atomic.rkey));
    EXPECT_EQ(num(r, "infiniband.atomiceth.swapdt"), dec(c.h.atomic.swap_add));
    EXPECT_EQ(num(r, "infiniband.atomiceth.cmpdt"), dec(c.h.atomic.compare));
  }
  if (op.mask & kHasAeth) {
    EXPECT_EQ(num(r, "infiniband.aeth.syndrome"), dec(c.h.aeth.syndrome));
    EXPECT_EQ(num(r, "infiniband.aeth.msn"), dec(c.h.aeth.msn));
  }
  if (op.mask & kHasAtomicAckEth) {
    EXPECT_EQ(num(r, "infiniband.atomicacketh.origremdt"), dec(c.h.atomic_ack_orig));
  }
  if (op.mask & kHasImmDt) {
    uint8_t imm[4];
    std::memcpy(imm, &c.h.imm_be, 4);  // wire order
    EXPECT_EQ(first(r, "infiniband.immdt"), hex(imm, 4));
  }
  if (op.mask & kHasIeth) {
    const uint8_t rkey[4] = {static_cast<uint8_t>(c.h.ieth_rkey >> 24),
                             static_cast<uint8_t>(c.h.ieth_rkey >> 16),
                             static_cast<uint8_t>(c.h.ieth_rkey >> 8), static_cast<uint8_t>(c.h.ieth_rkey)};
    EXPECT_EQ(first(r, "infiniband.ieth"), hex(rkey, 4));
  }
  // tshark shows the ICRC as a big-endian number read from the last 4 bytes; the pad counts as data.
  EXPECT_EQ(num(r, "infiniband.invariant.crc"), dec(std::strtoull(icrc.c_str(), nullptr, 16)));
  std::vector<uint8_t> padded = c.payload;
  padded.resize(c.payload.size() + (-c.payload.size() & 3), 0);
  EXPECT_EQ(first(r, "data.data"), hex(padded.data(), padded.size()));
}

TEST(TsharkDecode, EveryOpcodeInEveryShapeDecodesWithTheFieldsWeWrote) {
  if (std::system("command -v tshark >/dev/null 2>&1") != 0) GTEST_SKIP() << "tshark is not on PATH";
  std::string tmpl = ::testing::TempDir() + "uroce_tshark_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr) << std::strerror(errno);
  const std::string dir = tmpl, pcap = dir + "/frames.pcap", err = dir + "/tshark.err";

  const std::vector<Case> cases = make_cases();
  std::vector<std::vector<uint8_t>> frames;
  for (const Case& c : cases) frames.push_back(c.frame);
  test::write_pcap(pcap, frames);

  // An empty configuration directory keeps the user's Wireshark preferences out of the result.
  const std::string tshark =
      "WIRESHARK_CONFIG_DIR='" + dir + "' tshark " + kTsharkOpts + " -r '" + pcap + "'";
  const std::vector<std::string> names = split(kFields, ' ');
  std::string fields;
  for (const std::string& f : names) fields += " -e " + f;
  int status = 0;
  const auto rows =
      run(tshark + " -T fields -E separator=/t -E occurrence=a -E aggregator=," + fields + " 2>'" + err + "'",
          &status);
  ASSERT_EQ(status, 0) << "tshark failed; see " << err;
  ASSERT_EQ(rows.size(), cases.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::vector<std::string> values = split(rows[i], '\t');
    ASSERT_EQ(values.size(), names.size()) << "line " << i + 1 << ": " << rows[i];
    Row r;
    for (size_t k = 0; k < names.size(); ++k) r[names[k]] = values[k];
    const Case& c = cases[i];
    SCOPED_TRACE(testing::Message() << "frame " << i + 1 << " " << op_name(c.h.bth.opcode)
                                    << (c.h.ip.ipv6 ? " IPv6" : " IPv4") << (c.h.eth.vlan ? " VLAN" : ""));
    ASSERT_EQ(num(r, "frame.number"), dec(i + 1));
    expect_fields(c, r);
  }

  const auto bad = run(tshark + " -Y '_ws.malformed || _ws.expert.severity >= warning'" +
                           " -T fields -e frame.number -e _ws.expert.message 2>'" + err + "'",
                       &status);
  ASSERT_EQ(status, 0) << "tshark failed; see " << err;
  for (const std::string& line : bad) ADD_FAILURE() << "tshark expert warning or error: " << line;
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

TEST(TsharkDecode, CnpBytesAreAsA17Requires) {
  for (bool ipv6 : {false, true}) {
    for (bool vlan : {false, true}) {
      const auto f = test::make_frame(test::sample_headers(op::kCnp, ipv6, vlan), {});
      const size_t bth = sizeof(EthHdr) + (vlan ? sizeof(VlanTag) : 0) +
                         (ipv6 ? sizeof(Ipv6Hdr) : sizeof(Ipv4Hdr)) + sizeof(UdpHdr);
      ASSERT_EQ(f.size(), bth + sizeof(Bth) + sizeof(CnpBody) + kIcrcLen) << ipv6 << vlan;
      if (!ipv6 && !vlan) {
        EXPECT_EQ(f.size(), 14u + 20 + 8 + 12 + 16 + 4);
      }
      EXPECT_EQ(f[bth], 0x81);
      EXPECT_EQ(f[bth + 2] << 8 | f[bth + 3], 0xFFFF);                  // P_Key
      EXPECT_EQ(f[bth + 4], 0x40);                                      // BECN
      EXPECT_EQ(f[bth + 9] << 16 | f[bth + 10] << 8 | f[bth + 11], 0);  // PSN
      for (size_t i = 0; i < sizeof(CnpBody); ++i) EXPECT_EQ(f[bth + sizeof(Bth) + i], 0) << i;
      const uint8_t* ip = f.data() + bth - sizeof(UdpHdr) - (ipv6 ? sizeof(Ipv6Hdr) : sizeof(Ipv4Hdr));
      EXPECT_EQ(icrc_load(f.data() + f.size() - kIcrcLen),
                icrc_roce_v2_contiguous(ip, f.data() + f.size() - kIcrcLen));
    }
  }
}

}  // namespace
}  // namespace uroce::wire
