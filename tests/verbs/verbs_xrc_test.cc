// XRC at the libibverbs level, as ibv_xsrq_pingpong and MPI libraries use it: domains opened on a file,
// XRC SRQs with their own CQ, XRC_SEND and XRC_RECV QPs, and traffic from an initiator to the SRQ a work
// request names (here both ends on one device: the initiator's destination is the device's own GID).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/verbs/verbs_env.h"

namespace uroce::test {
namespace {

class VerbsXrc : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx = open_uroce();
    ASSERT_NE(ctx, nullptr);
    pd = ibv_alloc_pd(ctx);
    cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
    srq_cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
    ASSERT_TRUE(pd && cq && srq_cq);
    buf.assign(1 << 16, 0);
    mr = ibv_reg_mr(pd, buf.data(), buf.size(),
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    ASSERT_NE(mr, nullptr);
    char path[] = "/tmp/uroce-xrc-XXXXXX";
    fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    unlink(path);
  }
  void TearDown() override {
    for (ibv_qp* q : qps) ibv_destroy_qp(q);
    for (ibv_srq* s : srqs) ibv_destroy_srq(s);
    for (ibv_xrcd* x : xrcds) ibv_close_xrcd(x);
    if (mr) ibv_dereg_mr(mr);
    if (srq_cq) ibv_destroy_cq(srq_cq);
    if (cq) ibv_destroy_cq(cq);
    if (pd) ibv_dealloc_pd(pd);
    if (ctx) ibv_close_device(ctx);
    if (fd >= 0) close(fd);
  }

  ibv_xrcd* open_xrcd(int file, int oflags) {
    ibv_xrcd_init_attr a{};
    a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
    a.fd = file;
    a.oflags = oflags;
    ibv_xrcd* x = ibv_open_xrcd(ctx, &a);
    if (x) xrcds.push_back(x);
    return x;
  }
  ibv_srq* xrc_srq(ibv_xrcd* x, ibv_cq* c) {
    ibv_srq_init_attr_ex a{};
    a.attr.max_wr = 16;
    a.attr.max_sge = 1;
    a.comp_mask =
        IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD;
    a.srq_type = IBV_SRQT_XRC;
    a.xrcd = x;
    a.cq = c;
    a.pd = pd;
    ibv_srq* s = ibv_create_srq_ex(ctx, &a);
    if (s) srqs.push_back(s);
    return s;
  }
  ibv_qp* xrc_qp(ibv_qp_type type, ibv_xrcd* x) {
    ibv_qp_init_attr_ex a{};
    a.qp_type = type;
    if (type == IBV_QPT_XRC_RECV) {
      a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
      a.xrcd = x;
    } else {
      a.comp_mask = IBV_QP_INIT_ATTR_PD;
      a.pd = pd;
      a.send_cq = cq;
      a.cap.max_send_wr = 16;
      a.cap.max_send_sge = 1;
    }
    ibv_qp* q = ibv_create_qp_ex(ctx, &a);
    if (q) qps.push_back(q);
    return q;
  }
  // Both XRC QPs to RTS pointing at each other, with the attribute masks ibv_xsrq_pingpong uses, or with
  // `rc_masks` the masks of an RC QP for both, as perftest -c XRC sets them.
  void connect(ibv_qp* send, ibv_qp* recv, bool rc_masks = false) {
    const ibv_gid g = gid0(ctx);
    for (ibv_qp* q : {send, recv}) {
      ibv_qp_attr a{};
      a.qp_state = IBV_QPS_INIT;
      a.port_num = 1;
      a.qp_access_flags = q == recv ? IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ : 0;
      ASSERT_EQ(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
                0);
      a = ibv_qp_attr{};
      a.qp_state = IBV_QPS_RTR;
      a.path_mtu = IBV_MTU_1024;
      a.dest_qp_num = (q == send ? recv : send)->qp_num;
      a.rq_psn = 7;
      a.ah_attr.is_global = 1;
      a.ah_attr.grh.dgid = g;
      a.ah_attr.grh.hop_limit = 1;
      a.ah_attr.port_num = 1;
      a.max_dest_rd_atomic = 1;
      a.min_rnr_timer = 12;
      int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
      if (q == recv || rc_masks) mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
      ASSERT_EQ(ibv_modify_qp(q, &a, mask), 0);
      a.qp_state = IBV_QPS_RTS;
      a.timeout = 14;
      a.sq_psn = 7;
      a.retry_cnt = 7;
      a.rnr_retry = 7;
      a.max_rd_atomic = 1;
      mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN;
      if (q == send || rc_masks) mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
      ASSERT_EQ(ibv_modify_qp(q, &a, mask), 0);
    }
  }
  // An initiator and a target of `x`, connected to each other.
  void connected_pair(ibv_xrcd* x, ibv_qp** send, ibv_qp** recv) {
    *send = xrc_qp(IBV_QPT_XRC_SEND, nullptr);
    *recv = xrc_qp(IBV_QPT_XRC_RECV, x);
    ASSERT_TRUE(*send && *recv);
    connect(*send, *recv);
  }
  uint32_t srq_num(ibv_srq* s) {
    uint32_t n = 0;
    EXPECT_EQ(ibv_get_srq_num(s, &n), 0);
    return n;
  }
  int send_to(ibv_qp* q, uint32_t srqn, ibv_wr_opcode op, size_t off, uint32_t len, uint64_t raddr = 0) {
    ibv_sge s{reinterpret_cast<uint64_t>(buf.data() + off), len, mr->lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.opcode = op;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = mr->rkey;
    wr.qp_type.xrc.remote_srqn = srqn;
    return ibv_post_send(q, &wr, &bad);
  }
  int recv_on(ibv_srq* s, size_t off, uint32_t len, uint64_t id) {
    ibv_sge sge{reinterpret_cast<uint64_t>(buf.data() + off), len, mr->lkey};
    ibv_recv_wr wr{};
    ibv_recv_wr* bad = nullptr;
    wr.wr_id = id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    return ibv_post_srq_recv(s, &wr, &bad);
  }

  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_cq* srq_cq = nullptr;
  ibv_mr* mr = nullptr;
  std::vector<uint8_t> buf;
  int fd = -1;
  std::vector<ibv_qp*> qps;
  std::vector<ibv_srq*> srqs;
  std::vector<ibv_xrcd*> xrcds;
};

TEST_F(VerbsXrc, TheDeviceAdvertisesXrc) {
  ibv_device_attr a{};
  ASSERT_EQ(ibv_query_device(ctx, &a), 0);
  EXPECT_TRUE(a.device_cap_flags & IBV_DEVICE_XRC);
}

TEST_F(VerbsXrc, DomainsFollowTheFileTheyAreOpenedOn) {
  ibv_xrcd* x1 = open_xrcd(fd, O_CREAT);
  ASSERT_NE(x1, nullptr);
  ibv_xrcd* x2 = open_xrcd(fd, 0);  // the same file: the same domain, no O_CREAT needed
  ASSERT_NE(x2, nullptr);
  errno = 0;
  EXPECT_EQ(open_xrcd(fd, O_CREAT | O_EXCL), nullptr);
  EXPECT_EQ(errno, EEXIST);
  char path[] = "/tmp/uroce-xrc2-XXXXXX";
  const int other = mkstemp(path);
  ASSERT_GE(other, 0);
  unlink(path);
  errno = 0;
  EXPECT_EQ(open_xrcd(other, 0), nullptr);  // no domain for this file yet, and none asked for
  EXPECT_EQ(errno, ENOENT);
  close(other);
  errno = 0;
  EXPECT_EQ(open_xrcd(-1, 0), nullptr);  // a private domain must be created
  EXPECT_EQ(errno, EINVAL);
  EXPECT_NE(open_xrcd(-1, O_CREAT), nullptr);
  // An SRQ made through one open is of the domain of the other open too: a target created through x2
  // takes requests for it.
  ibv_srq* s = xrc_srq(x1, srq_cq);
  ASSERT_NE(s, nullptr);
  ibv_qp *send = nullptr, *recv = nullptr;
  ASSERT_NO_FATAL_FAILURE(connected_pair(x2, &send, &recv));
  ASSERT_EQ(recv_on(s, 0, 4096, 9), 0);
  ASSERT_EQ(send_to(send, srq_num(s), IBV_WR_SEND, 8192, 100), 0);
  EXPECT_EQ(poll_n(srq_cq, 1).size(), 1u);
}

TEST_F(VerbsXrc, SendsLandInTheNamedSrqAndCompleteOnItsCq) {
  ibv_xrcd* x = open_xrcd(fd, O_CREAT);
  ASSERT_NE(x, nullptr);
  ibv_srq* s1 = xrc_srq(x, srq_cq);
  ibv_srq* s2 = xrc_srq(x, srq_cq);
  ASSERT_TRUE(s1 && s2);
  const uint32_t n1 = srq_num(s1), n2 = srq_num(s2);
  EXPECT_NE(n1, n2);
  ibv_qp *send = nullptr, *recv = nullptr;
  ASSERT_NO_FATAL_FAILURE(connected_pair(x, &send, &recv));
  EXPECT_EQ(recv->pd, nullptr);  // a target belongs to its domain, not to a PD
  // Given one, a target reports the PD its creator passed, as libibverbs does (librdmacm takes the id's PD
  // from it), and still serves the SRQs of its domain whatever their PD.
  ibv_qp_init_attr_ex a{};
  a.qp_type = IBV_QPT_XRC_RECV;
  a.comp_mask = IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_PD;
  a.xrcd = x;
  a.pd = pd;
  ibv_qp* with_pd = ibv_create_qp_ex(ctx, &a);
  ASSERT_NE(with_pd, nullptr);
  qps.push_back(with_pd);
  EXPECT_EQ(with_pd->pd, pd);
  for (size_t i = 0; i < 6000; ++i) buf[16384 + i] = static_cast<uint8_t>(i * 5 + 1);
  ASSERT_EQ(recv_on(s1, 0, 8000, 1), 0);
  ASSERT_EQ(recv_on(s2, 32768, 8000, 2), 0);
  ASSERT_EQ(send_to(send, n2, IBV_WR_SEND, 16384, 6000), 0);  // to the second SRQ only
  auto sent = poll_n(cq, 1);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, IBV_WC_SUCCESS);
  auto got = poll_n(srq_cq, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(got[0].wr_id, 2u);
  EXPECT_EQ(got[0].qp_num, recv->qp_num);
  EXPECT_EQ(got[0].byte_len, 6000u);
  EXPECT_EQ(std::memcmp(buf.data() + 32768, buf.data() + 16384, 6000), 0);
  // WRITE and READ through the target, on the MR of the named SRQ's PD.
  ASSERT_EQ(send_to(send, n1, IBV_WR_RDMA_WRITE, 16384, 3000, reinterpret_cast<uint64_t>(buf.data() + 49152)),
            0);
  ASSERT_EQ(poll_n(cq, 1).size(), 1u);
  EXPECT_EQ(std::memcmp(buf.data() + 49152, buf.data() + 16384, 3000), 0);
}

// The kernel's uverbs drops the attributes of the half an XRC QP does not have before it checks the mask, so
// programs that treat XRC QPs as RC QPs (perftest -c XRC) connect on hardware; they must here too.
TEST_F(VerbsXrc, AttributesOfTheMissingHalfAreIgnored) {
  ibv_xrcd* x = open_xrcd(-1, O_CREAT);
  ASSERT_NE(x, nullptr);
  ibv_srq* s = xrc_srq(x, srq_cq);
  ASSERT_NE(s, nullptr);
  ibv_qp* send = xrc_qp(IBV_QPT_XRC_SEND, nullptr);
  ibv_qp* recv = xrc_qp(IBV_QPT_XRC_RECV, x);
  ASSERT_TRUE(send && recv);
  ASSERT_NO_FATAL_FAILURE(connect(send, recv, true));
  ASSERT_EQ(recv_on(s, 0, 4096, 1), 0);
  ASSERT_EQ(send_to(send, srq_num(s), IBV_WR_SEND, 8192, 64), 0);
  auto sent = poll_n(cq, 1);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(poll_n(srq_cq, 1).size(), 1u);
  // An attribute outside the table for every QP type is still refused.
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.qkey = 1;
  EXPECT_EQ(ibv_modify_qp(send, &a, IBV_QP_STATE | IBV_QP_QKEY), EINVAL);
}

TEST_F(VerbsXrc, AWrongSrqNumberFailsTheSend) {
  ibv_xrcd* x = open_xrcd(-1, O_CREAT);
  ASSERT_NE(x, nullptr);
  ibv_srq* s = xrc_srq(x, srq_cq);
  ASSERT_NE(s, nullptr);
  ibv_qp *send = nullptr, *recv = nullptr;
  ASSERT_NO_FATAL_FAILURE(connected_pair(x, &send, &recv));
  ASSERT_EQ(recv_on(s, 0, 4096, 1), 0);
  ASSERT_EQ(send_to(send, srq_num(s) + 12345, IBV_WR_SEND, 8192, 64), 0);
  auto sent = poll_n(cq, 1);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, IBV_WC_REM_INV_REQ_ERR);
}

TEST_F(VerbsXrc, CreateRulesAndBusyObjects) {
  ibv_xrcd* x = open_xrcd(-1, O_CREAT);
  ASSERT_NE(x, nullptr);
  ibv_srq_init_attr_ex sa{};
  sa.attr.max_wr = 4;
  sa.attr.max_sge = 1;
  sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_PD;  // no CQ
  sa.srq_type = IBV_SRQT_XRC;
  sa.xrcd = x;
  sa.pd = pd;
  errno = 0;
  EXPECT_EQ(ibv_create_srq_ex(ctx, &sa), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ibv_qp_init_attr_ex qa{};
  qa.qp_type = IBV_QPT_XRC_RECV;
  qa.comp_mask = IBV_QP_INIT_ATTR_PD;  // a target needs its domain
  qa.pd = pd;
  errno = 0;
  EXPECT_EQ(ibv_create_qp_ex(ctx, &qa), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ibv_qp* recv = xrc_qp(IBV_QPT_XRC_RECV, x);
  ASSERT_NE(recv, nullptr);
  ibv_sge sge{reinterpret_cast<uint64_t>(buf.data()), 64, mr->lkey};
  ibv_recv_wr rwr{};
  ibv_recv_wr* bad = nullptr;
  rwr.sg_list = &sge;
  rwr.num_sge = 1;
  EXPECT_NE(ibv_post_recv(recv, &rwr, &bad), 0);  // receives go to the domain's SRQs
  EXPECT_EQ(ibv_close_xrcd(x), EBUSY);            // the target QP still uses it
  ibv_destroy_qp(recv);
  qps.clear();
  EXPECT_EQ(ibv_close_xrcd(x), 0);
  xrcds.clear();
}

}  // namespace
}  // namespace uroce::test
