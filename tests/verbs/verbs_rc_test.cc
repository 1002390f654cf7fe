// RC, UC and UD data transfer through the public libibverbs API over the uroce provider: two contexts of the
// device in one process, so traffic loops back inside the engine.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/verbs/verbs_env.h"

namespace uroce::test {
namespace {

class RcVerbs : public ::testing::Test {
 protected:
  void SetUp() override {
    make_side(&a, IBV_QPT_RC);
    make_side(&b, IBV_QPT_RC);
    ASSERT_EQ(connect_rc(a, b), 0);
    for (size_t i = 0; i < a.buf.size(); ++i) a.buf[i] = static_cast<uint8_t>(i * 13 + 5);
  }
  void TearDown() override {
    destroy_side(&a);
    destroy_side(&b);
  }
  ibv_sge sge(VerbsSide& s, size_t off, uint32_t len) {
    return ibv_sge{reinterpret_cast<uint64_t>(s.buf.data() + off), len, s.mr->lkey};
  }
  VerbsSide a, b;
};

TEST_F(RcVerbs, SendRecvWithImmediateAndMultipleSges) {
  ibv_sge r[2] = {sge(b, 0, 3000), sge(b, 10000, 7000)};
  ASSERT_EQ(post_recv(b.qp, r, 2, 42), 0);
  ibv_sge s[3] = {sge(a, 0, 1000), sge(a, 5000, 4000), sge(a, 20000, 5000)};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.sg_list = s;
  wr.num_sge = 3;
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
  wr.imm_data = htobe32(0xC0FFEE);
  ASSERT_EQ(ibv_post_send(a.qp, &wr, &bad), 0);
  auto ws = poll_n(a.cq, 1);
  auto wr_ = poll_n(b.cq, 1);
  ASSERT_EQ(ws.size(), 1u);
  ASSERT_EQ(wr_.size(), 1u);
  EXPECT_EQ(ws[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(ws[0].opcode, IBV_WC_SEND);
  EXPECT_EQ(wr_[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wr_[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(wr_[0].wr_id, 42u);
  EXPECT_EQ(wr_[0].byte_len, 10000u);
  EXPECT_TRUE(wr_[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(be32toh(wr_[0].imm_data), 0xC0FFEEu);
  EXPECT_EQ(wr_[0].qp_num, b.qp->qp_num);
  // Gathered a[0..1000) a[5000..9000) a[20000..25000), scattered b[0..3000) b[10000..17000).
  std::vector<uint8_t> sent, got;
  sent.insert(sent.end(), a.buf.begin(), a.buf.begin() + 1000);
  sent.insert(sent.end(), a.buf.begin() + 5000, a.buf.begin() + 9000);
  sent.insert(sent.end(), a.buf.begin() + 20000, a.buf.begin() + 25000);
  got.insert(got.end(), b.buf.begin(), b.buf.begin() + 3000);
  got.insert(got.end(), b.buf.begin() + 10000, b.buf.begin() + 17000);
  EXPECT_EQ(sent, got);
}

TEST_F(RcVerbs, InlineSend) {
  ibv_sge r = sge(b, 0, 64);
  ASSERT_EQ(post_recv(b.qp, &r, 1), 0);
  uint8_t msg[48];
  for (int i = 0; i < 48; ++i) msg[i] = static_cast<uint8_t>(200 - i);
  ibv_sge s{reinterpret_cast<uint64_t>(msg), 48, 0};  // no lkey: inline data is not read through an MR
  ASSERT_EQ(post_send(a.qp, IBV_WR_SEND, &s, 1, 0, 0, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  std::memset(msg, 0, sizeof(msg));  // the data was copied at post time
  ASSERT_EQ(poll_n(b.cq, 1).size(), 1u);
  for (int i = 0; i < 48; ++i) EXPECT_EQ(b.buf[i], 200 - i);
  EXPECT_EQ(poll_n(a.cq, 1).at(0).status, IBV_WC_SUCCESS);
}

// A QP that asked for no inline room has its gather list's (rdma_xclient posts 16 bytes inline on one SGE).
TEST(RcVerbsInline, InlineWithoutAskedRoom) {
  VerbsSide a, b;
  make_side(&a, IBV_QPT_RC);
  make_side(&b, IBV_QPT_RC);
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = a.cq;
  init.qp_type = IBV_QPT_RC;
  init.cap = ibv_qp_cap{4, 4, 1, 1, 0};
  ibv_qp* q = ibv_create_qp(a.pd, &init);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(init.cap.max_inline_data, 16u);
  ASSERT_EQ(ibv_destroy_qp(a.qp), 0);
  a.qp = q;
  ASSERT_EQ(connect_rc(a, b), 0);
  ibv_sge r{reinterpret_cast<uint64_t>(b.buf.data()), 64, b.mr->lkey};
  ASSERT_EQ(post_recv(b.qp, &r, 1), 0);
  char msg[17] = "sixteen bytes!!";
  ibv_sge s{reinterpret_cast<uint64_t>(msg), 17, 0};
  EXPECT_EQ(post_send(q, IBV_WR_SEND, &s, 1, 0, 0, IBV_SEND_SIGNALED | IBV_SEND_INLINE), EINVAL)
      << "one byte beyond the room";
  s.length = 16;
  ASSERT_EQ(post_send(q, IBV_WR_SEND, &s, 1, 0, 0, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  auto got = poll_n(b.cq, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].byte_len, 16u);
  EXPECT_EQ(std::memcmp(b.buf.data(), msg, 16), 0);
  EXPECT_EQ(poll_n(a.cq, 1).at(0).status, IBV_WC_SUCCESS);
  destroy_side(&a);
  destroy_side(&b);
}

TEST_F(RcVerbs, WriteWithImmReadAndAtomics) {
  ibv_sge r = sge(b, 0, 0);
  ASSERT_EQ(post_recv(b.qp, &r, 1, 7), 0);
  ibv_sge s = sge(a, 0, 50000);
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htobe32(99);
  wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(b.buf.data() + 100000);
  wr.wr.rdma.rkey = b.mr->rkey;
  ASSERT_EQ(ibv_post_send(a.qp, &wr, &bad), 0);
  auto rw = poll_n(b.cq, 1);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_EQ(rw[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_EQ(rw[0].byte_len, 50000u);
  EXPECT_EQ(be32toh(rw[0].imm_data), 99u);
  EXPECT_EQ(poll_n(a.cq, 1).at(0).opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(std::memcmp(a.buf.data(), b.buf.data() + 100000, 50000), 0);

  ibv_sge d = sge(a, 200000, 50000);
  ASSERT_EQ(
      post_send(a.qp, IBV_WR_RDMA_READ, &d, 1, reinterpret_cast<uint64_t>(b.buf.data() + 100000), b.mr->rkey),
      0);
  auto rd = poll_n(a.cq, 1);
  ASSERT_EQ(rd.size(), 1u);
  EXPECT_EQ(rd[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(rd[0].opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(std::memcmp(a.buf.data(), a.buf.data() + 200000, 50000), 0);

  uint64_t counter = 10;
  std::memcpy(b.buf.data() + 8, &counter, 8);
  ibv_sge res = sge(a, 300000, 8);
  wr = ibv_send_wr{};
  wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  wr.sg_list = &res;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.atomic.remote_addr = reinterpret_cast<uint64_t>(b.buf.data() + 8);
  wr.wr.atomic.rkey = b.mr->rkey;
  wr.wr.atomic.compare_add = 5;
  ASSERT_EQ(ibv_post_send(a.qp, &wr, &bad), 0);
  ASSERT_EQ(poll_n(a.cq, 1).at(0).opcode, IBV_WC_FETCH_ADD);
  uint64_t v;
  std::memcpy(&v, a.buf.data() + 300000, 8);
  EXPECT_EQ(v, 10u);
  wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
  wr.wr.atomic.compare_add = 15;
  wr.wr.atomic.swap = 777;
  ASSERT_EQ(ibv_post_send(a.qp, &wr, &bad), 0);
  auto cs = poll_n(a.cq, 1);
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].opcode, IBV_WC_COMP_SWAP);
  std::memcpy(&v, a.buf.data() + 300000, 8);
  EXPECT_EQ(v, 15u);
  std::memcpy(&v, b.buf.data() + 8, 8);
  EXPECT_EQ(v, 777u);
}

TEST(QpExVerbs, WorkRequestApi) {
  // A QP created with ibv_create_qp_ex, driven with the ibv_wr_* builder.
  VerbsSide a, b;
  make_side(&a, IBV_QPT_RC);
  make_side(&b, IBV_QPT_RC);
  ibv_qp_init_attr_ex init{};
  init.send_cq = a.cq;
  init.recv_cq = a.cq;
  init.qp_type = IBV_QPT_RC;
  init.cap = ibv_qp_cap{16, 16, 2, 2, 64};
  init.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  init.pd = a.pd;
  init.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND;
  ibv_qp* qx = ibv_create_qp_ex(a.ctx, &init);
  ASSERT_NE(qx, nullptr);
  ASSERT_EQ(ibv_destroy_qp(a.qp), 0);
  a.qp = qx;
  ASSERT_EQ(connect_rc(a, b), 0);
  for (size_t i = 0; i < 3000; ++i) a.buf[i] = static_cast<uint8_t>(i);
  ibv_qp_ex* ex = ibv_qp_to_qp_ex(qx);
  ASSERT_NE(ex, nullptr);
  ibv_wr_start(ex);
  ex->wr_id = 11;
  ex->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(ex, b.mr->rkey, reinterpret_cast<uint64_t>(b.buf.data() + 4096));
  ibv_wr_set_sge(ex, a.mr->lkey, reinterpret_cast<uint64_t>(a.buf.data()), 3000);
  ex->wr_id = 12;
  ibv_wr_rdma_write(ex, b.mr->rkey, reinterpret_cast<uint64_t>(b.buf.data() + 8192));
  const char text[] = "inline via the wr_ API";
  ibv_wr_set_inline_data(ex, const_cast<char*>(text), sizeof(text));
  ASSERT_EQ(ibv_wr_complete(ex), 0);
  auto w = poll_n(a.cq, 2);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].wr_id, 11u);
  EXPECT_EQ(w[1].wr_id, 12u);
  EXPECT_EQ(std::memcmp(b.buf.data() + 4096, a.buf.data(), 3000), 0);
  EXPECT_STREQ(reinterpret_cast<const char*>(b.buf.data() + 8192), text);
  // wr_abort drops a batch.
  ibv_wr_start(ex);
  ibv_wr_send(ex);
  ibv_wr_set_sge(ex, a.mr->lkey, reinterpret_cast<uint64_t>(a.buf.data()), 8);
  ibv_wr_abort(ex);
  EXPECT_TRUE(poll_n(a.cq, 1, 200).empty());
  destroy_side(&a);
  destroy_side(&b);
}

TEST(UcVerbs, SendAndWrite) {
  VerbsSide a, b;
  make_side(&a, IBV_QPT_UC);
  make_side(&b, IBV_QPT_UC);
  ASSERT_EQ(connect_rc(a, b), 0);
  std::memset(a.buf.data(), 0x5A, 9000);
  ibv_sge r{reinterpret_cast<uint64_t>(b.buf.data()), 9000, b.mr->lkey};
  ASSERT_EQ(post_recv(b.qp, &r, 1), 0);
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 9000, a.mr->lkey};
  ASSERT_EQ(post_send(a.qp, IBV_WR_SEND, &s, 1), 0);
  auto rw = poll_n(b.cq, 1);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_EQ(rw[0].byte_len, 9000u);
  EXPECT_EQ(b.buf[8999], 0x5A);
  ASSERT_EQ(b.buf[20000], 0);
  ASSERT_EQ(
      post_send(a.qp, IBV_WR_RDMA_WRITE, &s, 1, reinterpret_cast<uint64_t>(b.buf.data() + 20000), b.mr->rkey),
      0);
  // UC has no acknowledgement and a plain WRITE no receive completion: a SEND after it, on the same QP and
  // so delivered after it, tells when the WRITE's bytes must be in place.
  ASSERT_EQ(post_recv(b.qp, &r, 1, 2), 0);
  ibv_sge one{reinterpret_cast<uint64_t>(a.buf.data()), 1, a.mr->lkey};
  ASSERT_EQ(post_send(a.qp, IBV_WR_SEND, &one, 1, 0, 0, IBV_SEND_SIGNALED, 3), 0);
  const auto sw = poll_n(a.cq, 3);
  ASSERT_EQ(sw.size(), 3u);
  for (const ibv_wc& wc : sw) EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << "wr_id " << wc.wr_id;
  EXPECT_EQ(sw[1].opcode, IBV_WC_RDMA_WRITE);
  const auto rw2 = poll_n(b.cq, 1);
  ASSERT_EQ(rw2.size(), 1u);
  EXPECT_EQ(rw2[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(rw2[0].wr_id, 2u);
  const std::vector<uint8_t> want(9000, 0x5A);
  EXPECT_EQ(std::memcmp(b.buf.data() + 20000, want.data(), want.size()), 0) << "UC WRITE data";
  EXPECT_EQ(b.buf[20000 + 9000], 0) << "UC WRITE wrote past its length";
  destroy_side(&a);
  destroy_side(&b);
}

TEST(UdVerbs, SendCarriesTheGrhAndSourceQp) {
  VerbsSide a, b;
  make_ud_pair(&a, &b, 0x1234);
  if (testing::Test::HasFatalFailure()) return;
  ibv_ah* ah = ah_to(a, b);
  ASSERT_NE(ah, nullptr);
  ibv_sge r{reinterpret_cast<uint64_t>(b.buf.data()), 40 + 512, b.mr->lkey};
  ASSERT_EQ(post_recv(b.qp, &r, 1), 0);
  std::memset(a.buf.data(), 0x77, 512);
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 512, a.mr->lkey};
  ASSERT_EQ(post_ud_send(a.qp, ah, b.qp->qp_num, 0x1234, &s), 0);
  auto rw = poll_n(b.cq, 1);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_EQ(rw[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(rw[0].byte_len, 40u + 512u);
  EXPECT_TRUE(rw[0].wc_flags & IBV_WC_GRH);
  EXPECT_EQ(rw[0].src_qp, a.qp->qp_num);
  // RoCEv2 over IPv4: the first 20 bytes of the GRH area are zero, then the IPv4 header.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(b.buf[i], 0) << i;
  EXPECT_EQ(b.buf[20], 0x45);
  EXPECT_EQ(b.buf[40], 0x77);
  EXPECT_EQ(b.buf[40 + 511], 0x77);
  // A wrong Q_Key is dropped silently.
  ASSERT_EQ(post_recv(b.qp, &r, 1), 0);
  ASSERT_EQ(post_ud_send(a.qp, ah, b.qp->qp_num, 0x9999, &s), 0);
  EXPECT_TRUE(poll_n(b.cq, 1, 300).empty());
  EXPECT_EQ(ibv_destroy_ah(ah), 0);
  destroy_side(&a);
  destroy_side(&b);
}

// The counter `name` of this process's device, read as `uroce stats` reads it (0 if it cannot be read).
uint64_t device_counter(const std::string& name) {
  std::string cmd = UROCE_TOOL;
  cmd += " stats --json --all --pid ";
  cmd += std::to_string(getpid());
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return 0;
  std::string out;
  char chunk[4096];
  for (size_t n; (n = fread(chunk, 1, sizeof chunk, p)) > 0;) out.append(chunk, n);
  pclose(p);
  // One reply per device of the process; its counters are the "device" object.
  const nlohmann::json all = nlohmann::json::parse(out, nullptr, false);
  if (!all.is_array() || all.empty()) return 0;
  return all[0].value("device", nlohmann::json::object()).value(name, uint64_t{0});
}

// A burst of posts whose caller then spins on memory, calling no verb: the frames the burst left waiting
// for its end (post_send coalescing) are sent by the progress thread, each WRITE lands, and the completions
// are all there afterwards. (Under Valgrind or ASan the posts may be too far apart to count as a burst: more
// than PostCoalescer::kBurstNs from the end of one post's pass to the next post.)
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
TEST_F(RcVerbs, ABurstOfPostsLeftWithoutAPollStillLeaves) {
  constexpr int kPosts = 64;
  for (int round = 0; round < 2; ++round) {
    volatile uint8_t* target = b.buf.data() + 100000;
    for (int i = 0; i < kPosts; ++i) target[i] = 0;
    for (int i = 0; i < kPosts; ++i) a.buf[50000 + i] = static_cast<uint8_t>(round * 100 + i + 1);
    for (int i = 0; i < kPosts; ++i) {
      ibv_sge s = sge(a, 50000 + i, 1);
      ASSERT_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, &s, 1, reinterpret_cast<uint64_t>(target + i), b.mr->rkey,
                          i == kPosts - 1 ? unsigned{IBV_SEND_SIGNALED} : 0u, i),
                0);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (target[kPosts - 1] != static_cast<uint8_t>(round * 100 + kPosts) &&
           std::chrono::steady_clock::now() < deadline) {
    }
    for (int i = 0; i < kPosts; ++i) EXPECT_EQ(target[i], static_cast<uint8_t>(round * 100 + i + 1)) << i;
    const auto wc = poll_n(a.cq, 1);
    ASSERT_EQ(wc.size(), 1u);
    EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  }
  const char* preload = std::getenv("LD_PRELOAD");
  if (!kAsan && (!preload || !std::strstr(preload, "vgpreload"))) {
    EXPECT_GT(device_counter("posts_coalesced"), 0u) << "no post of the bursts waited for its end";
  }
}

}  // namespace
}  // namespace uroce::test
