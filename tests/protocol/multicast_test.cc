// UD multicast at the transport: attach and detach with Soft-RoCE's errors and limits (rxe_mcast.c), a
// datagram to the multicast QPN delivered to every attached QP of the device, each with its own Q_Key check
// and receive WQE (rxe_recv.c), frames for groups nobody joined dropped and counted, and a send to a group
// going out to the group's Ethernet address and looping back to the device's own members.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>

#include "tests/support/capture_port.h"
#include "transport/wire/address.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::pattern;
using test::ProtoEnv;
using test::ProtoOptions;

constexpr size_t kRecvBytes = 1024;  // each QP's receive buffer: its index times this, into the env's memory

const Gid kGroup = ipv4_mapped(0xEF010203);  // 239.1.2.3
const Gid kOtherGroup = ipv4_mapped(0xEF010204);
const Gid kGroup6 = {0xFF, 0x0E, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xAB, 0xCD, 0x12, 0x34};  // ff0e::abcd:1234

ProtoOptions ud_options() {
  ProtoOptions o;
  o.type = QpType::kUd;
  o.mem_bytes = 1 << 17;
  return o;
}

class Multicast : public ::testing::Test {
 protected:
  Multicast() : env(ud_options()) {}

  // Another UD QP of the device in RTS, on the env's CQ, with Q_Key `qkey` (default: the env's), optionally
  // created with IBV_QP_CREATE_BLOCK_SELF_MCAST_LB.
  Qp* add_ud(uint32_t qkey = 0, bool block_self_mcast_lb = false) {
    QpInitAttr init;
    init.type = QpType::kUd;
    init.block_self_mcast_lb = block_self_mcast_lb;
    init.send_cq = init.recv_cq = env.cq;
    init.cap = QpCap{16, 16, 1, 1, 0};
    Qp* q = nullptr;
    EXPECT_EQ(env.dev->create_qp(env.pd, init, &q), 0);
    if (!q) return nullptr;
    const uint32_t saved = env.opt.qkey;
    if (qkey) env.opt.qkey = qkey;
    EXPECT_EQ(env.connect(q), 0);
    env.opt.qkey = saved;
    return q;
  }

  // Posts a receive of kRecvBytes into slot `slot` of the memory, with wr_id = slot.
  void post_recv(Qp* q, size_t slot) {
    const Sge s = env.sge(slot * kRecvBytes, kRecvBytes);
    ASSERT_EQ(q->post_recv(RecvWr{slot, &s, 1}), 0);
  }

  // A UD SEND from the fake peer to `group` (destination QP `dqpn`), addressed as a switch delivers it: to
  // the group's Ethernet address.
  PacketHeaders to_group(const Gid& group, uint32_t dqpn = params::kMcastQpn) {
    PacketHeaders h = env.peer_headers(op::kUdSendOnly, 0);
    h.eth.dst = multicast_mac(group);
    h.ip.dst = group;
    h.bth.dqpn = dqpn;
    return h;
  }

  // A signaled UD SEND of `s` to the multicast QPN of kGroup (address vector av_, hop limit 1), as mckey
  // posts it.
  SendWr to_group_wr(const Sge* s, uint64_t wr_id) {
    av_.dgid = kGroup;
    av_.hop_limit = 1;
    SendWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = s;
    wr.num_sge = 1;
    wr.send_flags = kSendSignaled;
    wr.ah = &av_;
    wr.remote_qpn = params::kMcastQpn;
    wr.remote_qkey = env.opt.qkey;
    return wr;
  }

  uint64_t count(Counter c) const { return env.dev->counters()[c]; }

  ProtoEnv env;
  AddressVector av_;
};

TEST(MulticastAddress, GroupsAndTheirEthernetAddresses) {
  EXPECT_TRUE(is_multicast_gid(kGroup));
  EXPECT_TRUE(is_multicast_gid(ipv4_mapped(0xE0000001)));   // 224.0.0.1
  EXPECT_FALSE(is_multicast_gid(ipv4_mapped(0xF0000001)));  // 240.0.0.1: class E
  EXPECT_FALSE(is_multicast_gid(ipv4_mapped(0x0A000001)));
  EXPECT_TRUE(is_multicast_gid(kGroup6));
  Gid compat{};  // ::224.1.2.3, not IPv4-mapped: not an IPv4 group
  compat[12] = 0xE0;
  EXPECT_FALSE(is_multicast_gid(compat));
  // RFC 1112: the low 23 bits of the group (239.129.2.3 and 239.1.2.3 share 01:00:5e:01:02:03).
  EXPECT_EQ(multicast_mac(ipv4_mapped(0xEF810203)), (MacAddr{0x01, 0x00, 0x5E, 0x01, 0x02, 0x03}));
  EXPECT_EQ(multicast_mac(kGroup), (MacAddr{0x01, 0x00, 0x5E, 0x01, 0x02, 0x03}));
  // RFC 2464: the low 32 bits of the group.
  EXPECT_EQ(multicast_mac(kGroup6), (MacAddr{0x33, 0x33, 0xAB, 0xCD, 0x12, 0x34}));
}

TEST_F(Multicast, AttachAndDetachRejectWhatRxeRejects) {
  Device& dev = *env.dev;
  EXPECT_EQ(dev.attach_mcast(env.qp, ProtoEnv::peer_gid()), EINVAL) << "a unicast GID";
  EXPECT_EQ(dev.attach_mcast(env.qp, ipv4_mapped(0xF0000001)), EINVAL) << "240.0.0.1 is no group";
  ASSERT_EQ(dev.attach_mcast(env.qp, kGroup), 0);
  EXPECT_EQ(dev.attach_mcast(env.qp, kGroup), 0) << "attaching again is a no-op";
  EXPECT_EQ(dev.mcast_members(kGroup).size(), 1u);
  EXPECT_EQ(dev.attach_mcast(env.qp, kGroup6), 0);

  ProtoOptions rc;
  rc.type = QpType::kRc;
  ProtoEnv rc_env(rc);
  EXPECT_EQ(rc_env.dev->attach_mcast(rc_env.qp, kGroup), EINVAL) << "UD QPs only";
  EXPECT_EQ(rc_env.dev->detach_mcast(rc_env.qp, kGroup), EINVAL);
  QpInitAttr gsi;
  gsi.type = QpType::kUd;
  gsi.send_cq = gsi.recv_cq = env.cq;
  gsi.cap = QpCap{4, 4, 1, 1, 0};
  Qp* qp1 = nullptr;
  ASSERT_EQ(dev.create_gsi_qp(env.pd, gsi, &qp1), 0);
  EXPECT_EQ(dev.attach_mcast(qp1, kGroup), EINVAL) << "QP1 is not a verbs consumer's UD QP";

  Qp* other = add_ud();
  EXPECT_EQ(dev.detach_mcast(other, kGroup), EINVAL) << "a group this QP is not attached to";
  EXPECT_EQ(dev.detach_mcast(env.qp, kOtherGroup), EINVAL) << "a group nobody is attached to";
  EXPECT_EQ(dev.detach_mcast(env.qp, ProtoEnv::peer_gid()), EINVAL);
  EXPECT_EQ(dev.detach_mcast(env.qp, kGroup), 0);
  EXPECT_EQ(dev.detach_mcast(env.qp, kGroup), EINVAL) << "detached already";
  EXPECT_TRUE(dev.mcast_members(kGroup).empty());
  EXPECT_EQ(dev.detach_mcast(env.qp, kGroup6), 0);
}

TEST_F(Multicast, QpsPerGroupAreLimited) {
  Device& dev = *env.dev;
  std::vector<Qp*> qps{env.qp};
  while (qps.size() <= params::kMaxMcastQpAttach) qps.push_back(add_ud());
  for (size_t i = 0; i < params::kMaxMcastQpAttach; ++i) ASSERT_EQ(dev.attach_mcast(qps[i], kGroup), 0) << i;
  Qp* last = qps.back();
  EXPECT_EQ(dev.attach_mcast(last, kGroup), ENOMEM);
  EXPECT_EQ(dev.attach_mcast(last, kOtherGroup), 0) << "another group has room";
  EXPECT_EQ(dev.attach_mcast(qps[0], kGroup), 0) << "a member attaching again is no new attachment";
  ASSERT_EQ(dev.detach_mcast(qps[3], kGroup), 0);
  EXPECT_EQ(dev.attach_mcast(last, kGroup), 0) << "a detach made room";
  EXPECT_EQ(dev.mcast_members(kGroup).size(), params::kMaxMcastQpAttach);
}

TEST_F(Multicast, GroupsPerDeviceAreLimited) {
  Device& dev = *env.dev;
  const auto group = [](uint32_t i) { return ipv4_mapped(0xE8000000 | i); };  // 232.x.y.z
  for (uint32_t i = 0; i < params::kMaxMcastGrp; ++i) ASSERT_EQ(dev.attach_mcast(env.qp, group(i)), 0) << i;
  Qp* other = add_ud();
  EXPECT_EQ(dev.attach_mcast(other, group(params::kMaxMcastGrp)), ENOMEM) << "a group beyond the limit";
  EXPECT_EQ(dev.attach_mcast(other, group(7)), 0) << "joining an existing group makes none";
  ASSERT_EQ(dev.detach_mcast(env.qp, group(5)), 0);
  EXPECT_EQ(dev.attach_mcast(other, group(params::kMaxMcastGrp)), 0) << "the last member's detach freed one";
  // Destroying the QP that holds nearly every group frees them all.
  EXPECT_EQ(dev.destroy_qp(other), 0);
  EXPECT_EQ(dev.destroy_qp(env.qp), 0);
  env.qp = nullptr;
  Qp* fresh = add_ud();
  for (uint32_t i = 0; i < params::kMaxMcastGrp; ++i)
    ASSERT_EQ(dev.attach_mcast(fresh, group(params::kMaxMcastGrp + i)), 0) << i;
}

TEST_F(Multicast, EveryAttachedQpGetsItsOwnCopy) {
  Qp* a = add_ud();
  Qp* b = add_ud();
  ASSERT_EQ(env.dev->attach_mcast(a, kGroup), 0);
  ASSERT_EQ(env.dev->attach_mcast(b, kGroup), 0);
  post_recv(env.qp, 0);  // not attached: must not see the datagram
  post_recv(a, 1);
  post_recv(b, 2);
  const std::vector<uint8_t> data = pattern(300, 7);
  env.inject(to_group(kGroup), data);
  EXPECT_TRUE(env.run().empty()) << "UD answers nothing";
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].qp_num, a->qpn());
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[1].qp_num, b->qpn());
  EXPECT_EQ(wc[1].wr_id, 2u);
  for (const Wc& w : wc) {
    EXPECT_EQ(w.status, WcStatus::kSuccess);
    EXPECT_EQ(w.byte_len, 40u + 300u);
    EXPECT_EQ(w.src_qp, env.opt.peer_qpn);
    EXPECT_EQ(w.wc_flags, uint32_t{kWcGrh});
    const size_t off = w.wr_id * kRecvBytes;
    EXPECT_EQ(env.bytes(off + 40, 300), data);
    // The GRH area holds the IPv4 header: its destination is the group.
    EXPECT_EQ(env.bytes(off + 20 + 16, 4), (std::vector<uint8_t>{239, 1, 2, 3}));
  }
  EXPECT_EQ(count(Counter::kMcastRxPackets), 1u);
  EXPECT_EQ(count(Counter::kDropDstMac), 0u);
  // The unattached QP still has its WQE: a unicast datagram takes it.
  env.inject(env.peer_headers(op::kUdSendOnly, 1), pattern(8, 1));
  env.run();
  const std::vector<Wc> uni = env.poll();
  ASSERT_EQ(uni.size(), 1u);
  EXPECT_EQ(uni[0].qp_num, env.qp->qpn());
  EXPECT_EQ(uni[0].wr_id, 0u);
}

TEST_F(Multicast, AQkeyMismatchDropsOnlyThatMembersCopy) {
  Qp* a = add_ud();
  Qp* b = add_ud(env.opt.qkey + 1);
  ASSERT_EQ(env.dev->attach_mcast(a, kGroup), 0);
  ASSERT_EQ(env.dev->attach_mcast(b, kGroup), 0);
  post_recv(a, 1);
  post_recv(b, 2);
  env.inject(to_group(kGroup), pattern(64, 3));
  env.run();
  std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].qp_num, a->qpn());
  EXPECT_EQ(count(Counter::kDropQkey), 1u);
  // b kept its receive WQE and takes a datagram on its own Q_Key.
  PacketHeaders h = to_group(kGroup);
  h.deth.qkey = env.opt.qkey + 1;
  env.inject(h, pattern(64, 4));
  env.run();
  wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].qp_num, b->qpn());
  EXPECT_EQ(wc[0].wr_id, 2u);
  EXPECT_EQ(count(Counter::kDropQkey), 2u) << "and a dropped it";
}

TEST_F(Multicast, FramesForNoGroupOfOursAreDroppedAndCounted) {
  ASSERT_EQ(env.dev->attach_mcast(env.qp, kGroup), 0);
  post_recv(env.qp, 0);
  env.inject(to_group(kOtherGroup), pattern(16, 1));
  env.run();
  EXPECT_TRUE(env.poll().empty());
  EXPECT_EQ(count(Counter::kDropMcastNoGroup), 1u);
  // The multicast QPN to one of our unicast GIDs names no group either.
  PacketHeaders h = env.peer_headers(op::kUdSendOnly, 0);
  h.bth.dqpn = params::kMcastQpn;
  env.inject(h, pattern(16, 1));
  // A joined group's address with a QPN other than the multicast one is no datagram for the group (and the
  // group is not one of the device's GIDs).
  env.inject(to_group(kGroup, env.qp->qpn()), pattern(16, 1));
  env.run();
  EXPECT_TRUE(env.poll().empty());
  EXPECT_EQ(count(Counter::kDropMcastNoGroup), 2u);
  EXPECT_EQ(count(Counter::kDropDstGid), 1u);
  EXPECT_EQ(count(Counter::kMcastRxPackets), 0u);
  // Only UD SENDs go to groups.
  PacketHeaders uc = to_group(kGroup);
  uc.bth.opcode = op::kUcSendOnly;
  env.inject(uc, pattern(16, 1));
  env.run();
  EXPECT_TRUE(env.poll().empty());
  EXPECT_EQ(count(Counter::kDropWrongQpType), 1u);
}

TEST_F(Multicast, ACongestionMarkedDatagramToAGroupGetsNoCnp) {
  Qp* a = add_ud();
  Qp* b = add_ud();
  ASSERT_EQ(env.dev->attach_mcast(a, kGroup), 0);
  ASSERT_EQ(env.dev->attach_mcast(b, kGroup), 0);
  post_recv(a, 1);
  post_recv(b, 2);
  PacketHeaders h = to_group(kGroup);
  h.ip.tclass = static_cast<uint8_t>(Ecn::kCe);
  env.inject(h, pattern(16, 1));
  EXPECT_TRUE(env.run().empty()) << "a CNP would carry the group's address as its source";
  EXPECT_EQ(env.poll().size(), 2u);
  EXPECT_EQ(count(Counter::kEcnMarked), 2u);
  EXPECT_EQ(count(Counter::kCnpSent), 0u);
}

TEST_F(Multicast, DetachStopsDelivery) {
  Qp* a = add_ud();
  Qp* b = add_ud();
  ASSERT_EQ(env.dev->attach_mcast(a, kGroup), 0);
  ASSERT_EQ(env.dev->attach_mcast(b, kGroup), 0);
  post_recv(a, 1);
  post_recv(a, 3);
  post_recv(b, 2);
  post_recv(b, 4);
  ASSERT_EQ(env.dev->detach_mcast(a, kGroup), 0);
  env.inject(to_group(kGroup), pattern(16, 1));
  env.run();
  std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].qp_num, b->qpn());
  ASSERT_EQ(env.dev->detach_mcast(b, kGroup), 0);
  env.inject(to_group(kGroup), pattern(16, 2));
  env.run();
  EXPECT_TRUE(env.poll().empty());
  EXPECT_EQ(count(Counter::kDropMcastNoGroup), 1u) << "the group went with its last member";
}

TEST_F(Multicast, ADestroyedQpLeavesItsGroups) {
  Qp* a = add_ud();
  Qp* b = add_ud();
  ASSERT_EQ(env.dev->attach_mcast(a, kGroup), 0);
  ASSERT_EQ(env.dev->attach_mcast(a, kOtherGroup), 0);
  ASSERT_EQ(env.dev->attach_mcast(b, kOtherGroup), 0);
  post_recv(a, 1);
  post_recv(b, 2);
  ASSERT_EQ(env.dev->destroy_qp(a), 0);
  EXPECT_TRUE(env.dev->mcast_members(kGroup).empty());
  ASSERT_EQ(env.dev->mcast_members(kOtherGroup).size(), 1u);
  EXPECT_EQ(env.dev->mcast_members(kOtherGroup)[0], b);
  env.inject(to_group(kGroup), pattern(16, 1));
  env.inject(to_group(kOtherGroup), pattern(16, 2));
  env.run();
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].qp_num, b->qpn());
  EXPECT_EQ(count(Counter::kDropMcastNoGroup), 1u);
}

TEST_F(Multicast, ASendToAGroupGoesOutAndLoopsBackToLocalMembers) {
  Qp* a = add_ud();
  Qp* b = add_ud();
  ASSERT_EQ(env.dev->attach_mcast(a, kGroup), 0);
  ASSERT_EQ(env.dev->attach_mcast(b, kGroup), 0);
  post_recv(env.qp, 0);  // the sender is not attached: it gets no copy
  post_recv(a, 1);
  post_recv(b, 2);
  env.fill(8 * kRecvBytes, 200, 9);
  const Sge s = env.sge(8 * kRecvBytes, 200);
  const SendWr wr = to_group_wr(&s, 77);
  ASSERT_EQ(env.qp->post_send(wr), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u) << "one frame on the port; the local copies never reach it";
  EXPECT_EQ(f[0].verdict, RxDrop::kNone);
  EXPECT_EQ(f[0].h.eth.dst, (MacAddr{0x01, 0x00, 0x5E, 0x01, 0x02, 0x03}));
  EXPECT_EQ(f[0].h.eth.src, wire::mac_for_gid(ProtoEnv::local_gid()));
  EXPECT_EQ(f[0].h.ip.dst, kGroup);
  EXPECT_EQ(f[0].h.ip.src, ProtoEnv::local_gid());
  EXPECT_EQ(f[0].h.ip.ttl, 1);
  EXPECT_EQ(f[0].h.bth.dqpn, params::kMcastQpn);
  EXPECT_EQ(f[0].h.deth.src_qp, env.qp->qpn());
  EXPECT_EQ(f[0].payload, env.bytes(8 * kRecvBytes, 200));
  const std::vector<Wc> wc = env.poll();
  ASSERT_EQ(wc.size(), 3u);
  size_t recvs = 0;
  for (const Wc& w : wc) {
    if (w.opcode == WcOpcode::kSend) {
      EXPECT_EQ(w.wr_id, 77u);
      EXPECT_EQ(w.qp_num, env.qp->qpn());
      continue;
    }
    ++recvs;
    EXPECT_TRUE(w.qp_num == a->qpn() || w.qp_num == b->qpn()) << w.qp_num;
    EXPECT_EQ(w.src_qp, env.qp->qpn());
    EXPECT_EQ(w.byte_len, 240u);
    EXPECT_EQ(env.bytes(w.wr_id * kRecvBytes + 40, 200), env.bytes(8 * kRecvBytes, 200));
  }
  EXPECT_EQ(recvs, 2u);
  EXPECT_EQ(count(Counter::kMcastTxPackets), 1u);
  EXPECT_EQ(count(Counter::kMcastRxPackets), 1u);
  EXPECT_EQ(env.port.free_buffers(), env.port.pool_size()) << "the loopback copy went back to the pool";

  // A sender attached to its group gets its own copy too, as on Soft-RoCE (mckey's default loopback).
  ASSERT_EQ(env.dev->attach_mcast(env.qp, kGroup), 0);
  post_recv(a, 3);
  post_recv(b, 4);
  ASSERT_EQ(env.qp->post_send(wr), 0);
  ASSERT_EQ(env.run().size(), 1u);
  size_t own = 0, total = 0;
  for (const Wc& w : env.poll()) {
    if (w.opcode != WcOpcode::kRecv) continue;
    ++total;
    own += w.qp_num == env.qp->qpn();
  }
  EXPECT_EQ(total, 3u);
  EXPECT_EQ(own, 1u);
}

// A member created to block its own multicast loopback (mckey -l) gets no copy of what it sends; the other
// local members do, and the frame goes out as before. What a peer sends to the group still reaches it.
TEST_F(Multicast, AMemberThatBlocksSelfLoopbackHearsOthersButNotItself) {
  Qp* quiet = add_ud(0, true);
  Qp* b = add_ud();
  ASSERT_EQ(env.dev->attach_mcast(quiet, kGroup), 0);
  ASSERT_EQ(env.dev->attach_mcast(b, kGroup), 0);
  post_recv(quiet, 0);
  post_recv(b, 1);
  env.fill(8 * kRecvBytes, 100, 3);
  const Sge s = env.sge(8 * kRecvBytes, 100);
  ASSERT_EQ(quiet->post_send(to_group_wr(&s, 5)), 0);
  ASSERT_EQ(env.run().size(), 1u) << "the frame still goes out to the group";
  std::vector<uint32_t> got;
  for (const Wc& w : env.poll())
    if (w.opcode == WcOpcode::kRecv) got.push_back(w.qp_num);
  EXPECT_EQ(got, std::vector<uint32_t>{b->qpn()}) << "only the other member hears it";

  // A datagram from a peer to the group reaches both members, the blocking one included (its receive from
  // the first round is still posted).
  post_recv(b, 2);
  env.inject(to_group(kGroup), pattern(64, 7));
  env.run();
  got.clear();
  for (const Wc& w : env.poll())
    if (w.opcode == WcOpcode::kRecv) got.push_back(w.qp_num);
  std::sort(got.begin(), got.end());
  std::vector<uint32_t> both{quiet->qpn(), b->qpn()};
  std::sort(both.begin(), both.end());
  EXPECT_EQ(got, both);
}

TEST_F(Multicast, AnIpv6GroupGoesToItsEthernetAddress) {
  env.dev->set_gid(1, Gid{0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
  AddressVector av;
  av.dgid = kGroup6;
  av.sgid_index = 1;
  const Sge s = env.sge(0, 32);
  SendWr wr;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.ah = &av;
  wr.remote_qpn = params::kMcastQpn;
  wr.remote_qkey = env.opt.qkey;
  ASSERT_EQ(env.qp->post_send(wr), 0);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].verdict, RxDrop::kNone);
  EXPECT_TRUE(f[0].h.ip.ipv6);
  EXPECT_EQ(f[0].h.eth.dst, (MacAddr{0x33, 0x33, 0xAB, 0xCD, 0x12, 0x34}));
  EXPECT_EQ(f[0].h.ip.dst, kGroup6);
  EXPECT_EQ(f[0].h.bth.dqpn, params::kMcastQpn);
}

}  // namespace
}  // namespace uroce
