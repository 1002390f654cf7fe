// An independent decoder for the CM agent's MADs: a whole exchange (REQ, REP, RTU, DREQ, DREP and a REJ)
// between two CmAgents, framed as GSI datagrams by gsi_headers, written to a pcap and read back by tshark's
// InfiniBand CM dissector, which must name each message, find the fields we set and raise no
// malformed-packet warning. Skipped when tshark is not installed.
#include <gtest/gtest.h>
#include <stdlib.h>  // mkdtemp

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/pcap_io.h"
#include "tests/unit/cm_state_sim.h"

namespace uroce::cm {
namespace {

using test::BackToBack;
using test::kMs;

std::vector<std::string> run(const std::string& cmd) {
  std::vector<std::string> lines;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return lines;
  char buf[8192];
  while (std::fgets(buf, sizeof(buf), p)) {
    std::string s(buf);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    lines.push_back(s);
  }
  pclose(p);
  return lines;
}

std::vector<std::string> split_tabs(const std::string& s) {
  std::vector<std::string> parts;
  size_t pos = 0;
  for (size_t end; (end = s.find('\t', pos)) != std::string::npos; pos = end + 1)
    parts.push_back(s.substr(pos, end - pos));
  parts.push_back(s.substr(pos));
  return parts;
}

uint64_t num(const std::string& s) { return std::strtoull(s.c_str(), nullptr, 0); }

TEST(CmTshark, AgentExchangeDecodesAsCmMessages) {
  if (std::system("command -v tshark >/dev/null 2>&1") != 0) GTEST_SKIP() << "tshark not installed";
  BackToBack n;
  CmId l, ia, ib, ia2;
  ASSERT_EQ(n.b.listen({kServiceIdPsTcp | 7471, {}, true}, &l), 0);
  ASSERT_EQ(n.a.connect(n.params(kServiceIdPsTcp | 7471), &ia), 0);
  n.run_for(2 * kMs);
  ib = n.ev_b.at(0).ev.id;
  AcceptParams ap;
  ap.qpn = 0x22;
  ap.starting_psn = 0x8c84dd;
  ASSERT_EQ(n.b.accept(ib, ap), 0);
  n.run_for(2 * kMs);
  ASSERT_EQ(n.a.accept(ia, {}), 0);
  n.run_for(2 * kMs);
  ASSERT_EQ(n.a.disconnect(ia), 0);
  n.run_for(2 * kMs);
  ASSERT_EQ(n.b.disconnect(ib), 0);
  n.run_for(2 * kMs);
  ConnectParams other = n.params(kServiceIdPsTcp | 7472);  // no listener: REJ 8
  other.qpn = 0x12;  // (the same QPN while b is in timewait would be a stale connection: REJ 10)
  ASSERT_EQ(n.a.connect(other, &ia2), 0);
  n.run_for(30 * kMs);  // the REJ waits out the grace for a listener
  ASSERT_EQ(n.sent.size(), 7u);

  std::vector<std::vector<uint8_t>> frames;
  uint32_t psn[2] = {0x41, 0x37};
  for (const auto& s : n.sent) {
    wire::PacketHeaders h =
        gsi_headers(s.from_a ? n.ga : n.gb, s.from_a ? n.gb : n.ga, 55410, psn[s.from_a]++);
    h.eth.src = {0x02, 0, 0, 0, 0, static_cast<uint8_t>(s.from_a ? 1 : 2)};
    h.eth.dst = {0x02, 0, 0, 0, 0, static_cast<uint8_t>(s.from_a ? 2 : 1)};
    const MadBytes mad = encode_mad(s.mad);
    std::vector<uint8_t> f(wire::headers_len(h) + kMadLen + wire::trailer_len(kMadLen));
    f.resize(wire::build_frame(h, wire::ConstBytes(mad.data(), mad.size()), f.data()));
    frames.push_back(std::move(f));
  }
  char dir_template[] = "/tmp/uroce_cm_tshark_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string pcap = dir + "/cm.pcap";
  ::uroce::test::write_pcap(pcap, frames);
  const auto rows =
      run("tshark -n -r " + pcap +
          " -T fields -E separator=/t -e frame.number -e _ws.col.Info -e _ws.malformed"
          " -e infiniband.cm.req.serviceid -e infiniband.cm.req.localqpn -e infiniband.cm.req.startpsn"
          " -e infiniband.cm.req.pppmtu -e infiniband.cm.req.ip_cm.sport -e infiniband.cm.req.ip_cm.sip4"
          " -e infiniband.cm.rep.localqpn -e infiniband.cm.rep.startpsn -e infiniband.cm.rej.reason"
          " -e infiniband.deth.q_key -e infiniband.bth.destqp 2>/dev/null");
  std::filesystem::remove_all(dir);
  ASSERT_EQ(rows.size(), 7u);
  const char* kNames[] = {"ConnectRequest",  "ConnectReply",   "ReadyToUse",   "DisconnectRequest",
                          "DisconnectReply", "ConnectRequest", "ConnectReject"};
  for (size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(rows[i]);
    const auto c = split_tabs(rows[i]);
    ASSERT_EQ(c.size(), 14u);
    EXPECT_NE(c[1].find(std::string("CM: ") + kNames[i]), std::string::npos);
    EXPECT_EQ(c[2], "");  // not malformed
    EXPECT_EQ(num(c[12]), kGsiQkey);
    EXPECT_EQ(num(c[13]), kGsiQpn);
  }
  const auto req = split_tabs(rows[0]);
  EXPECT_EQ(num(req[3]), kServiceIdPsTcp | 7471);
  EXPECT_EQ(num(req[4]), 0x11u);
  EXPECT_EQ(num(req[5]), 0xe1a47du);
  EXPECT_EQ(num(req[6]), 3u);
  EXPECT_EQ(num(req[7]), 0x93d7u);
  EXPECT_EQ(req[8], "192.168.0.1");
  const auto rep = split_tabs(rows[1]);
  EXPECT_EQ(num(rep[9]), 0x22u);
  EXPECT_EQ(num(rep[10]), 0x8c84ddu);
  EXPECT_EQ(num(split_tabs(rows[6])[11]), 8u);
}

}  // namespace
}  // namespace uroce::cm
