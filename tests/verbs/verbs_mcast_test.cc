// UD multicast through the public libibverbs API, as mckey uses it under librdmacm: ibv_attach_mcast and
// ibv_detach_mcast on UD QPs, an address handle for the group's GID made by ibv_create_ah, a SEND posted to
// the multicast QPN 0xFFFFFF, and the datagram received by every QP attached to the group. The QPs live in
// three contexts of the one device, so the copies are the device's own loopback of its multicast sends.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "tests/verbs/verbs_env.h"

namespace uroce::test {
namespace {

constexpr uint32_t kQkey = 0x11112222;
constexpr uint32_t kMcastQpn = 0xFFFFFF;
constexpr size_t kGrh = 40;

// A group of the device's address family (GID 0): 239.1.2.3 as an IPv4-mapped GID, or ff0e::1:2:3.
ibv_gid group_for(ibv_context* ctx) {
  const ibv_gid own = gid0(ctx);
  static constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
  ibv_gid g{};
  if (std::memcmp(own.raw, kMappedPrefix, sizeof kMappedPrefix) == 0) {
    std::memcpy(g.raw, kMappedPrefix, sizeof kMappedPrefix);
    const uint8_t v4[4] = {239, 1, 2, 3};
    std::memcpy(g.raw + 12, v4, 4);
  } else {
    const uint8_t v6[16] = {0xFF, 0x0E, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 0, 3};
    std::memcpy(g.raw, v6, 16);
  }
  return g;
}

// Posts a receive of `len` bytes at the start of `s`'s buffer.
int post_recv_at(VerbsSide& s, uint32_t len, uint64_t wr_id) {
  ibv_sge sge{reinterpret_cast<uint64_t>(s.buf.data()), len, s.mr->lkey};
  return post_recv(s.qp, &sge, 1, wr_id);
}

TEST(VerbsMcast, DeviceReportsItsLimitsAndAttachChecksItsArguments) {
  VerbsSide ud, rc;
  make_side(&ud, IBV_QPT_UD);
  make_side(&rc, IBV_QPT_RC);
  ibv_device_attr dev{};
  ASSERT_EQ(ibv_query_device(ud.ctx, &dev), 0);
  EXPECT_EQ(dev.max_mcast_grp, 8192);
  EXPECT_EQ(dev.max_mcast_qp_attach, 56);
  EXPECT_EQ(dev.max_total_mcast_qp_attach, 0x70000);

  const ibv_gid group = group_for(ud.ctx);
  EXPECT_EQ(ibv_attach_mcast(rc.qp, &group, 0), EINVAL) << "UD QPs only";
  const ibv_gid unicast = gid0(ud.ctx);
  EXPECT_EQ(ibv_attach_mcast(ud.qp, &unicast, 0), EINVAL) << "not a multicast GID";
  EXPECT_EQ(ibv_detach_mcast(ud.qp, &group, 0), EINVAL) << "not attached";
  EXPECT_EQ(ibv_attach_mcast(ud.qp, &group, 0), 0);
  EXPECT_EQ(ibv_attach_mcast(ud.qp, &group, 0xC001), 0) << "again, with a LID RoCE ignores";
  EXPECT_EQ(ibv_detach_mcast(ud.qp, &group, 0), 0);
  EXPECT_EQ(ibv_detach_mcast(ud.qp, &group, 0), EINVAL);
  EXPECT_EQ(ibv_attach_mcast(ud.qp, &group, 0), 0) << "left attached: destroying the QP detaches it";
}

// ibv_create_qp_ex takes IBV_QP_CREATE_BLOCK_SELF_MCAST_LB (mckey -l), as a ConnectX does; any other
// creation flag asks for hardware uroce does not have and fails with EOPNOTSUPP.
TEST(VerbsMcast, CreateQpExTakesTheSelfLoopbackBlockAndNoOtherFlag) {
  VerbsSide s;
  make_side(&s, IBV_QPT_UD);
  ibv_qp_init_attr_ex a{};
  a.qp_type = IBV_QPT_UD;
  a.send_cq = a.recv_cq = s.cq;
  a.cap.max_send_wr = a.cap.max_recv_wr = 4;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  a.pd = s.pd;
  a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
  a.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
  ibv_qp* qp = ibv_create_qp_ex(s.ctx, &a);
  ASSERT_NE(qp, nullptr) << std::strerror(errno);
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  a.create_flags = IBV_QP_CREATE_SCATTER_FCS;
  errno = 0;
  EXPECT_EQ(ibv_create_qp_ex(s.ctx, &a), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST(VerbsMcast, ASendToTheGroupReachesEveryAttachedQp) {
  VerbsSide sender, r1, r2;
  make_side(&sender, IBV_QPT_UD);
  make_side(&r1, IBV_QPT_UD);
  make_side(&r2, IBV_QPT_UD);
  for (VerbsSide* s : {&sender, &r1, &r2}) ASSERT_EQ(to_rts_ud(s->qp, kQkey), 0);
  const ibv_gid group = group_for(sender.ctx);
  ASSERT_EQ(ibv_attach_mcast(r1.qp, &group, 0), 0);
  ASSERT_EQ(ibv_attach_mcast(r2.qp, &group, 0), 0);

  ibv_ah_attr aa{};
  aa.is_global = 1;
  aa.grh.dgid = group;
  aa.grh.sgid_index = 0;
  aa.grh.hop_limit = 1;
  aa.port_num = 1;
  ibv_ah* ah = ibv_create_ah(sender.pd, &aa);
  ASSERT_NE(ah, nullptr) << "an address handle for a group needs no neighbour: " << strerror(errno);

  const char msg[] = "to every member of the group";
  for (VerbsSide* s : {&r1, &r2}) ASSERT_EQ(post_recv_at(*s, 4096, 5), 0);
  std::memcpy(sender.buf.data() + 8192, msg, sizeof msg);
  ibv_sge sge{reinterpret_cast<uint64_t>(sender.buf.data() + 8192), sizeof msg, sender.mr->lkey};
  ASSERT_EQ(post_ud_send(sender.qp, ah, kMcastQpn, kQkey, &sge), 0);
  const std::vector<ibv_wc> sent = poll_n(sender.cq, 1);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, IBV_WC_SUCCESS);
  for (VerbsSide* s : {&r1, &r2}) {
    const std::vector<ibv_wc> wc = poll_n(s->cq, 1);
    ASSERT_EQ(wc.size(), 1u) << "QP " << s->qp->qp_num << " got nothing";
    EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc[0].opcode, IBV_WC_RECV);
    EXPECT_EQ(wc[0].qp_num, s->qp->qp_num);
    EXPECT_EQ(wc[0].src_qp, sender.qp->qp_num);
    EXPECT_EQ(wc[0].byte_len, kGrh + sizeof msg);
    EXPECT_TRUE(wc[0].wc_flags & IBV_WC_GRH);
    EXPECT_EQ(std::memcmp(s->buf.data() + kGrh, msg, sizeof msg), 0);
  }

  // After r2 leaves, the next datagram reaches r1 only.
  ASSERT_EQ(ibv_detach_mcast(r2.qp, &group, 0), 0);
  for (VerbsSide* s : {&r1, &r2}) ASSERT_EQ(post_recv_at(*s, 4096, 6), 0);
  ASSERT_EQ(post_ud_send(sender.qp, ah, kMcastQpn, kQkey, &sge), 0);
  ASSERT_EQ(poll_n(sender.cq, 1).size(), 1u);
  const std::vector<ibv_wc> got = poll_n(r1.cq, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].wr_id, 6u);
  EXPECT_TRUE(poll_n(r2.cq, 1, 200).empty()) << "a detached QP receives nothing";
  EXPECT_EQ(ibv_destroy_ah(ah), 0);
}

}  // namespace
}  // namespace uroce::test
