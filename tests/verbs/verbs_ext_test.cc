// Verbs a generic RDMA device is expected to have, through the public libibverbs API between two contexts of
// the device: ATOMIC WRITE (ibv_post_send and ibv_wr_atomic_write), and UD and UC QPs created through
// ibv_create_qp_ex with their ibv_wr_* operations, completing on CQs created with ibv_create_cq_ex and read
// with the extended polling API.
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "tests/verbs/verbs_env.h"

namespace uroce::test {
namespace {

// The kernel's IB_UVERBS_DEVICE_ATOMIC_WRITE; rdma-core 44's headers do not name it.
constexpr uint64_t kDeviceAtomicWrite = 1ULL << 40;
constexpr uint64_t kValue = 0x0123456789ABCDEFull;

uint64_t load(const VerbsSide& s, size_t off) {
  uint64_t v;
  std::memcpy(&v, s.buf.data() + off, 8);
  return v;
}

// One completion as the extended polling API reads it.
struct ExWc {
  uint64_t wr_id;
  ibv_wc_status status;
  ibv_wc_opcode opcode;
  uint32_t byte_len;
  uint32_t imm;  // host order
  uint32_t qp_num, src_qp;
  unsigned flags;
};

// Polls `cq` with ibv_start_poll / ibv_next_poll until `n` completions arrived or ~10 s passed.
std::vector<ExWc> poll_ex(ibv_cq_ex* cq, size_t n) {
  std::vector<ExWc> out;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (out.size() < n && std::chrono::steady_clock::now() < end) {
    ibv_poll_cq_attr attr{};
    if (ibv_start_poll(cq, &attr) != 0) {
      std::this_thread::yield();
      continue;
    }
    do {
      ExWc w{cq->wr_id,
             cq->status,
             ibv_wc_read_opcode(cq),
             ibv_wc_read_byte_len(cq),
             0,
             ibv_wc_read_qp_num(cq),
             ibv_wc_read_src_qp(cq),
             ibv_wc_read_wc_flags(cq)};
      if (w.flags & IBV_WC_WITH_IMM) w.imm = be32toh(ibv_wc_read_imm_data(cq));
      out.push_back(w);
    } while (out.size() < n && ibv_next_poll(cq) == 0);
    ibv_end_poll(cq);
  }
  return out;
}

// Replaces `s`'s CQ and QP with ones made through ibv_create_cq_ex and ibv_create_qp_ex with `ops`.
ibv_cq_ex* make_ex(VerbsSide* s, ibv_qp_type type, uint64_t ops) {
  EXPECT_EQ(ibv_destroy_qp(s->qp), 0);
  EXPECT_EQ(ibv_destroy_cq(s->cq), 0);
  s->qp = nullptr;
  s->cq = nullptr;
  ibv_cq_init_attr_ex ca{};
  ca.cqe = 64;
  ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP;
  ibv_cq_ex* cq = ibv_create_cq_ex(s->ctx, &ca);
  if (!cq) return nullptr;
  s->cq = ibv_cq_ex_to_cq(cq);
  ibv_qp_init_attr_ex init{};
  init.send_cq = s->cq;
  init.recv_cq = s->cq;
  init.qp_type = type;
  init.cap = ibv_qp_cap{32, 32, 2, 2, 64};
  init.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  init.pd = s->pd;
  init.send_ops_flags = ops;
  s->qp = ibv_create_qp_ex(s->ctx, &init);
  EXPECT_NE(s->qp, nullptr) << strerror(errno);
  return cq;
}

ibv_send_wr atomic_write_wr(ibv_sge* s, const VerbsSide& to, size_t off, unsigned flags = IBV_SEND_SIGNALED) {
  ibv_send_wr wr{};
  wr.wr_id = 77;
  wr.opcode = IBV_WR_ATOMIC_WRITE;
  wr.sg_list = s;
  wr.num_sge = 1;
  wr.send_flags = flags;
  wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(to.buf.data() + off);
  wr.wr.rdma.rkey = to.mr->rkey;
  return wr;
}

TEST(AtomicWrite, TheDeviceAdvertisesIt) {
  ibv_context* ctx = open_uroce();
  ASSERT_NE(ctx, nullptr);
  ibv_device_attr_ex dev{};
  ASSERT_EQ(ibv_query_device_ex(ctx, nullptr, &dev), 0);
  EXPECT_EQ(dev.device_cap_flags_ex, kDeviceAtomicWrite) << "ATOMIC WRITE, and no other extended capability";
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

TEST(AtomicWrite, PostSendStoresTheValueFromAnSgeOrInline) {
  VerbsSide a, b;
  make_side(&a, IBV_QPT_RC);
  make_side(&b, IBV_QPT_RC);
  ASSERT_EQ(connect_rc(a, b), 0);
  std::memcpy(a.buf.data() + 64, &kValue, 8);
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data() + 64), 8, a.mr->lkey};
  ibv_send_wr wr = atomic_write_wr(&s, b, 4096);
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a.qp, &wr, &bad), 0);
  auto w = poll_n(a.cq, 1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(w[0].status);
  EXPECT_EQ(w[0].opcode, IBV_WC_ATOMIC_WRITE);
  EXPECT_EQ(w[0].byte_len, 8u);
  EXPECT_EQ(w[0].wr_id, 77u);
  EXPECT_EQ(load(b, 4096), kValue);
  EXPECT_EQ(load(b, 4088), 0u);
  EXPECT_EQ(load(b, 4104), 0u);

  const uint64_t other = ~kValue;
  ibv_sge in{reinterpret_cast<uint64_t>(&other), 8, 0};
  wr = atomic_write_wr(&in, b, 4096, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
  ASSERT_EQ(ibv_post_send(a.qp, &wr, &bad), 0);
  w = poll_n(a.cq, 1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(load(b, 4096), other);
  EXPECT_TRUE(poll_n(b.cq, 1, 100).empty()) << "no receive completion at the target";
}

TEST(AtomicWrite, QpExWritesAndCompletesOnAnExtendedCq) {
  VerbsSide a, b;
  make_side(&a, IBV_QPT_RC);
  make_side(&b, IBV_QPT_RC);
  ibv_cq_ex* cq = make_ex(&a, IBV_QPT_RC, IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_RDMA_WRITE);
  ASSERT_NE(cq, nullptr);
  ASSERT_NE(a.qp, nullptr);
  ASSERT_EQ(connect_rc(a, b), 0);
  ibv_qp_ex* ex = ibv_qp_to_qp_ex(a.qp);
  ASSERT_NE(ex, nullptr);
  ASSERT_NE(ex->wr_atomic_write, nullptr);
  uint64_t v1 = kValue, v2 = kValue + 1;
  ibv_wr_start(ex);
  ex->wr_id = 5;
  ex->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_atomic_write(ex, b.mr->rkey, reinterpret_cast<uint64_t>(b.buf.data() + 8), &v1);
  ex->wr_id = 6;
  ibv_wr_atomic_write(ex, b.mr->rkey, reinterpret_cast<uint64_t>(b.buf.data() + 16), &v2);
  v1 = v2 = 0;  // the value is copied when the WR is built
  ASSERT_EQ(ibv_wr_complete(ex), 0);
  const auto w = poll_ex(cq, 2);
  ASSERT_EQ(w.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(w[i].wr_id, 5u + i);
    EXPECT_EQ(w[i].status, IBV_WC_SUCCESS) << ibv_wc_status_str(w[i].status);
    EXPECT_EQ(w[i].opcode, IBV_WC_ATOMIC_WRITE);
    EXPECT_EQ(w[i].byte_len, 8u);
    EXPECT_EQ(w[i].qp_num, a.qp->qp_num);
  }
  EXPECT_EQ(load(b, 8), kValue);
  EXPECT_EQ(load(b, 16), kValue + 1);
}

TEST(AtomicWrite, MisalignedTargetAndMissingRightsFailTheWr) {
  VerbsSide a, b;
  make_side(&a, IBV_QPT_RC);
  make_side(&b, IBV_QPT_RC);
  ASSERT_EQ(connect_rc(a, b), 0);
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 8, a.mr->lkey};
  ibv_send_wr wr = atomic_write_wr(&s, b, 4);  // not 8-byte aligned
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a.qp, &wr, &bad), 0);
  auto w = poll_n(a.cq, 1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].status, IBV_WC_REM_INV_REQ_ERR) << ibv_wc_status_str(w[0].status);
  destroy_side(&a);
  destroy_side(&b);

  // The target region allows remote atomics and reads but not remote writes.
  make_side(&a, IBV_QPT_RC);
  make_side(&b, IBV_QPT_RC);
  ASSERT_EQ(connect_rc(a, b), 0);
  ibv_mr* ro = ibv_reg_mr(b.pd, b.buf.data(), 4096,
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  ASSERT_NE(ro, nullptr);
  s = ibv_sge{reinterpret_cast<uint64_t>(a.buf.data()), 8, a.mr->lkey};
  wr = atomic_write_wr(&s, b, 8);
  wr.wr.rdma.rkey = ro->rkey;
  ASSERT_EQ(ibv_post_send(a.qp, &wr, &bad), 0);
  w = poll_n(a.cq, 1);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(w[0].status);
  EXPECT_EQ(load(b, 8), 0u);
  EXPECT_EQ(ibv_dereg_mr(ro), 0);
}

TEST(AtomicWrite, WhatCannotBePostedIsRefused) {
  VerbsSide a, b;
  make_side(&a, IBV_QPT_RC);
  make_side(&b, IBV_QPT_RC);
  ASSERT_EQ(connect_rc(a, b), 0);
  ibv_sge four{reinterpret_cast<uint64_t>(a.buf.data()), 4, a.mr->lkey};
  ibv_send_wr wr = atomic_write_wr(&four, b, 8);
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a.qp, &wr, &bad), EINVAL) << "the length must be 8";
  EXPECT_EQ(bad, &wr);
  VerbsSide u, v;
  make_side(&u, IBV_QPT_UC);
  make_side(&v, IBV_QPT_UC);
  ASSERT_EQ(connect_rc(u, v), 0);
  ibv_sge eight{reinterpret_cast<uint64_t>(u.buf.data()), 8, u.mr->lkey};
  wr = atomic_write_wr(&eight, v, 8);
  EXPECT_EQ(ibv_post_send(u.qp, &wr, &bad), EINVAL) << "RC only";
  // Nor may a UC or UD QP be created for it.
  ibv_qp_init_attr_ex init{};
  init.send_cq = u.cq;
  init.recv_cq = u.cq;
  init.cap = ibv_qp_cap{8, 8, 1, 1, 0};
  init.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  init.pd = u.pd;
  init.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE;
  for (ibv_qp_type t : {IBV_QPT_UC, IBV_QPT_UD}) {
    init.qp_type = t;
    errno = 0;
    EXPECT_EQ(ibv_create_qp_ex(u.ctx, &init), nullptr) << t;
    EXPECT_EQ(errno, EOPNOTSUPP) << t;
  }
}

TEST(ExCreatePaths, UdQpExSendsWithAndWithoutImmediateToExtendedCqs) {
  VerbsSide a, b;
  make_side(&a, IBV_QPT_UD);
  make_side(&b, IBV_QPT_UD);
  ibv_cq_ex* acq = make_ex(&a, IBV_QPT_UD, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
  ibv_cq_ex* bcq = make_ex(&b, IBV_QPT_UD, IBV_QP_EX_WITH_SEND);
  ASSERT_NE(acq, nullptr);
  ASSERT_NE(bcq, nullptr);
  ASSERT_NE(a.qp, nullptr);
  ASSERT_NE(b.qp, nullptr);
  ASSERT_EQ(to_rts_ud(a.qp, 0x4242), 0);
  ASSERT_EQ(to_rts_ud(b.qp, 0x4242), 0);
  ibv_ah* ah = ah_to(a, b);
  ASSERT_NE(ah, nullptr);
  for (uint64_t i = 0; i < 2; ++i) {
    ibv_sge r{reinterpret_cast<uint64_t>(b.buf.data() + i * 4096), 40 + 1000, b.mr->lkey};
    ASSERT_EQ(post_recv(b.qp, &r, 1, 100 + i), 0);
  }
  std::memset(a.buf.data(), 0x3C, 1000);
  const char text[] = "inline UD datagram";
  ibv_qp_ex* ex = ibv_qp_to_qp_ex(a.qp);
  ASSERT_NE(ex, nullptr);
  ASSERT_NE(ex->wr_set_ud_addr, nullptr);
  ibv_wr_start(ex);
  ex->wr_id = 1;
  ex->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_send(ex);
  ibv_wr_set_ud_addr(ex, ah, b.qp->qp_num, 0x4242);
  ibv_wr_set_sge(ex, a.mr->lkey, reinterpret_cast<uint64_t>(a.buf.data()), 1000);
  ex->wr_id = 2;
  ibv_wr_send_imm(ex, htobe32(0xA1B2C3D4));
  ibv_wr_set_ud_addr(ex, ah, b.qp->qp_num, 0x4242);
  ibv_wr_set_inline_data(ex, const_cast<char*>(text), sizeof(text));
  ASSERT_EQ(ibv_wr_complete(ex), 0);

  const auto sent = poll_ex(acq, 2);
  ASSERT_EQ(sent.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(sent[i].wr_id, 1u + i);
    EXPECT_EQ(sent[i].status, IBV_WC_SUCCESS);
    EXPECT_EQ(sent[i].opcode, IBV_WC_SEND);
  }
  const auto got = poll_ex(bcq, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].wr_id, 100u);
  EXPECT_EQ(got[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(got[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(got[0].byte_len, 40u + 1000u);
  EXPECT_EQ(got[0].src_qp, a.qp->qp_num);
  EXPECT_EQ(got[0].qp_num, b.qp->qp_num);
  EXPECT_TRUE(got[0].flags & IBV_WC_GRH);
  EXPECT_FALSE(got[0].flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(b.buf[40], 0x3C);
  EXPECT_EQ(b.buf[40 + 999], 0x3C);
  EXPECT_EQ(got[1].wr_id, 101u);
  EXPECT_EQ(got[1].byte_len, 40u + sizeof(text));
  EXPECT_TRUE(got[1].flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(got[1].imm, 0xA1B2C3D4u);
  EXPECT_STREQ(reinterpret_cast<const char*>(b.buf.data() + 4096 + 40), text);
  EXPECT_EQ(ibv_destroy_ah(ah), 0);
}

TEST(ExCreatePaths, UcQpExWritesWithAndWithoutImmediateToExtendedCqs) {
  VerbsSide a, b;
  make_side(&a, IBV_QPT_UC);
  make_side(&b, IBV_QPT_UC);
  ibv_cq_ex* acq = make_ex(&a, IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM);
  ibv_cq_ex* bcq = make_ex(&b, IBV_QPT_UC, IBV_QP_EX_WITH_SEND);
  ASSERT_NE(acq, nullptr);
  ASSERT_NE(bcq, nullptr);
  ASSERT_NE(a.qp, nullptr);
  ASSERT_NE(b.qp, nullptr);
  ASSERT_EQ(connect_rc(a, b), 0);
  ibv_sge r{reinterpret_cast<uint64_t>(b.buf.data()), 16, b.mr->lkey};
  ASSERT_EQ(post_recv(b.qp, &r, 1, 9), 0);
  for (size_t i = 0; i < 5000; ++i) a.buf[i] = static_cast<uint8_t>(i * 3 + 1);
  ibv_qp_ex* ex = ibv_qp_to_qp_ex(a.qp);
  ASSERT_NE(ex, nullptr);
  EXPECT_EQ(ex->wr_set_ud_addr, nullptr) << "only UD QPs address each WR";
  ibv_wr_start(ex);
  ex->wr_id = 1;
  ex->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(ex, b.mr->rkey, reinterpret_cast<uint64_t>(b.buf.data() + 8192));
  ibv_wr_set_sge(ex, a.mr->lkey, reinterpret_cast<uint64_t>(a.buf.data()), 5000);
  // UC has no acknowledgement: the WRITE with immediate after it, on the same QP, tells when both landed.
  ex->wr_id = 2;
  ibv_wr_rdma_write_imm(ex, b.mr->rkey, reinterpret_cast<uint64_t>(b.buf.data() + 16384), htobe32(31337));
  ibv_wr_set_sge(ex, a.mr->lkey, reinterpret_cast<uint64_t>(a.buf.data() + 100), 300);
  ASSERT_EQ(ibv_wr_complete(ex), 0);
  const auto sent = poll_ex(acq, 2);
  ASSERT_EQ(sent.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(sent[i].wr_id, 1u + i);
    EXPECT_EQ(sent[i].status, IBV_WC_SUCCESS);
    EXPECT_EQ(sent[i].opcode, IBV_WC_RDMA_WRITE);
  }
  const auto got = poll_ex(bcq, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].wr_id, 9u);
  EXPECT_EQ(got[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(got[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_EQ(got[0].byte_len, 300u);
  EXPECT_EQ(got[0].imm, 31337u);
  EXPECT_EQ(std::memcmp(b.buf.data() + 8192, a.buf.data(), 5000), 0);
  EXPECT_EQ(std::memcmp(b.buf.data() + 16384, a.buf.data() + 100, 300), 0);
}

TEST(ExCreatePaths, OperationsTheQpTypeCannotDoAreRefused) {
  VerbsSide a;
  make_side(&a, IBV_QPT_RC);
  ibv_qp_init_attr_ex init{};
  init.send_cq = a.cq;
  init.recv_cq = a.cq;
  init.cap = ibv_qp_cap{8, 8, 1, 1, 0};
  init.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  init.pd = a.pd;
  const std::pair<ibv_qp_type, uint64_t> refused[] = {
      {IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE},    {IBV_QPT_UD, IBV_QP_EX_WITH_BIND_MW},
      {IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_READ},     {IBV_QPT_UC, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD},
      {IBV_QPT_UC, IBV_QP_EX_WITH_SEND_WITH_INV}, {IBV_QPT_RC, IBV_QP_EX_WITH_TSO},
  };
  for (const auto& [type, ops] : refused) {
    init.qp_type = type;
    init.send_ops_flags = IBV_QP_EX_WITH_SEND | ops;
    errno = 0;
    EXPECT_EQ(ibv_create_qp_ex(a.ctx, &init), nullptr) << type << " " << ops;
    EXPECT_EQ(errno, EOPNOTSUPP) << type << " " << ops;
  }
}

}  // namespace
}  // namespace uroce::test
