// Memory registration through the system libibverbs: ibv_reg_mr_iova2 with an IOVA that is not the buffer's
// address (SGEs, RDMA WRITE/READ/ATOMIC, SEND/RECV and window binds all in the IOVA space; the buffer's own
// address is out of range), ibv_rereg_mr moving the IOVA with the translation, and on-demand paging:
// ibv_query_device_ex's odp_caps, explicit ODP regions over pages no one has touched yet, and the implicit
// ODP region, where a WRITE or READ naming unmapped memory completes REM_ACCESS_ERR and the process lives on.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tests/verbs/verbs_env.h"

namespace uroce::test {
namespace {

constexpr int kAll =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr uint64_t kIovaA = 0x1000'0000'0000ull, kIovaB = 0x2000'0000'0000ull;

ibv_wc_status one(ibv_cq* cq) {
  const std::vector<ibv_wc> wc = poll_n(cq, 1);
  EXPECT_EQ(wc.size(), 1u);
  return wc.empty() ? IBV_WC_GENERAL_ERR : wc[0].status;
}

void fill(uint8_t* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(seed + i * 7);
}

// Two connected RC sides, each buffer also registered at an IOVA of its own (kIovaA, kIovaB).
struct IovaPair {
  IovaPair() {
    make_side(&a, IBV_QPT_RC);
    make_side(&b, IBV_QPT_RC);
    if (testing::Test::HasFatalFailure()) return;
    am = ibv_reg_mr_iova2(a.pd, a.buf.data(), a.buf.size(), kIovaA, kAll);
    bm = ibv_reg_mr_iova2(b.pd, b.buf.data(), b.buf.size(), kIovaB, kAll | IBV_ACCESS_MW_BIND);
    EXPECT_NE(am, nullptr) << strerror(errno);
    EXPECT_NE(bm, nullptr) << strerror(errno);
    EXPECT_EQ(connect_rc(a, b), 0);
  }
  ~IovaPair() {
    if (mw) {
      EXPECT_EQ(ibv_dealloc_mw(mw), 0);
    }
    if (am) {
      EXPECT_EQ(ibv_dereg_mr(am), 0);
    }
    if (bm) {
      EXPECT_EQ(ibv_dereg_mr(bm), 0);
    }
  }
  ibv_sge sa(size_t off, uint32_t len) const { return ibv_sge{kIovaA + off, len, am->lkey}; }
  VerbsSide a, b;
  ibv_mr* am = nullptr;
  ibv_mr* bm = nullptr;
  ibv_mw* mw = nullptr;
};

// ibv_reg_mr_iova (and _iova2) take any IOVA, the buffer's address included; zero-based regions stay refused.
TEST(IovaMr, RegistrationTakesAnyIova) {
  VerbsSide s;
  s.ctx = open_uroce();
  ASSERT_NE(s.ctx, nullptr);
  s.pd = ibv_alloc_pd(s.ctx);
  ASSERT_NE(s.pd, nullptr);
  std::vector<char> buf(4096);
  for (const uint64_t iova : {uint64_t{0x10000}, uint64_t{0}, reinterpret_cast<uint64_t>(buf.data())}) {
    ibv_mr* mr = ibv_reg_mr_iova(s.pd, buf.data(), buf.size(), iova, IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(mr, nullptr) << "iova " << iova << ": " << strerror(errno);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
  }
  errno = 0;
  EXPECT_EQ(ibv_reg_mr_iova(s.pd, buf.data(), buf.size(), UINT64_MAX - 100, IBV_ACCESS_LOCAL_WRITE), nullptr)
      << "an IOVA range that wraps";
  EXPECT_EQ(errno, EINVAL);
}

TEST(IovaMr, WriteReadAtomicAndSendUseTheIovaOnBothSides) {
  IovaPair p;
  ASSERT_NE(p.bm, nullptr);
  EXPECT_EQ(p.bm->addr, p.b.buf.data()) << "ibv_mr.addr stays the buffer's address";
  EXPECT_EQ(p.bm->length, p.b.buf.size());

  fill(p.a.buf.data(), 3000, 1);
  ibv_sge s = p.sa(0, 3000);
  ASSERT_EQ(post_send(p.a.qp, IBV_WR_RDMA_WRITE, &s, 1, kIovaB + 4096, p.bm->rkey), 0);
  ASSERT_EQ(one(p.a.cq), IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(p.b.buf.data() + 4096, p.a.buf.data(), 3000), 0);

  fill(p.b.buf.data() + 16384, 5000, 2);
  s = p.sa(32768, 5000);
  ASSERT_EQ(post_send(p.a.qp, IBV_WR_RDMA_READ, &s, 1, kIovaB + 16384, p.bm->rkey), 0);
  ASSERT_EQ(one(p.a.cq), IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(p.a.buf.data() + 32768, p.b.buf.data() + 16384, 5000), 0);

  uint64_t v = 40;
  std::memcpy(p.b.buf.data() + 64, &v, 8);
  s = p.sa(128, 8);
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.atomic = {kIovaB + 64, 2, 0, p.bm->rkey};
  ASSERT_EQ(ibv_post_send(p.a.qp, &wr, &bad), 0);
  ASSERT_EQ(one(p.a.cq), IBV_WC_SUCCESS);
  std::memcpy(&v, p.a.buf.data() + 128, 8);
  EXPECT_EQ(v, 40u);
  std::memcpy(&v, p.b.buf.data() + 64, 8);
  EXPECT_EQ(v, 42u);

  ibv_sge r{kIovaB + 65536, 2000, p.bm->lkey};
  ASSERT_EQ(post_recv(p.b.qp, &r, 1, 9), 0);
  fill(p.a.buf.data() + 40000, 2000, 3);
  s = p.sa(40000, 2000);
  ASSERT_EQ(post_send(p.a.qp, IBV_WR_SEND, &s, 1), 0);
  ASSERT_EQ(one(p.a.cq), IBV_WC_SUCCESS);
  ASSERT_EQ(one(p.b.cq), IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(p.b.buf.data() + 65536, p.a.buf.data() + 40000, 2000), 0);
}

TEST(IovaMr, TheBuffersOwnAddressIsOutOfRangeForTheIovaKey) {
  IovaPair p;
  ASSERT_NE(p.bm, nullptr);
  p.b.buf[100] = 0;
  p.a.buf[0] = 0x77;
  ibv_sge s = p.sa(0, 64);
  ASSERT_EQ(post_send(p.a.qp, IBV_WR_RDMA_WRITE, &s, 1, reinterpret_cast<uint64_t>(p.b.buf.data() + 100),
                      p.bm->rkey),
            0);
  EXPECT_EQ(one(p.a.cq), IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(p.b.buf[100], 0);
}

TEST(IovaMr, AReadPastTheIovaRangeIsARemoteAccessError) {
  IovaPair p;
  ASSERT_NE(p.bm, nullptr);
  ibv_sge s = p.sa(0, 64);
  ASSERT_EQ(post_send(p.a.qp, IBV_WR_RDMA_READ, &s, 1, kIovaB + p.b.buf.size() - 32, p.bm->rkey), 0);
  EXPECT_EQ(one(p.a.cq), IBV_WC_REM_ACCESS_ERR);
}

TEST(IovaMr, ALocalSgeOutsideTheIovaRangeIsALocalProtectionError) {
  IovaPair p;
  ASSERT_NE(p.am, nullptr);
  ibv_sge s{reinterpret_cast<uint64_t>(p.a.buf.data()), 64, p.am->lkey};  // the process address
  ASSERT_EQ(post_send(p.a.qp, IBV_WR_RDMA_WRITE, &s, 1, kIovaB, p.bm->rkey), 0);
  EXPECT_EQ(one(p.a.cq), IBV_WC_LOC_PROT_ERR);
}

TEST(IovaMr, AWindowIsBoundAndUsedInTheRegionsIovaSpace) {
  IovaPair p;
  ASSERT_NE(p.bm, nullptr);
  p.mw = ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1);
  ASSERT_NE(p.mw, nullptr);
  ibv_mw_bind mb{};
  mb.wr_id = 5;
  mb.send_flags = IBV_SEND_SIGNALED;
  mb.bind_info = ibv_mw_bind_info{p.bm, kIovaB + 8192, 4096, IBV_ACCESS_REMOTE_WRITE};
  ASSERT_EQ(ibv_bind_mw(p.b.qp, p.mw, &mb), 0);
  ASSERT_EQ(one(p.b.cq), IBV_WC_SUCCESS);
  fill(p.a.buf.data(), 1024, 4);
  ibv_sge s = p.sa(0, 1024);
  ASSERT_EQ(post_send(p.a.qp, IBV_WR_RDMA_WRITE, &s, 1, kIovaB + 8192 + 1024, p.mw->rkey), 0);
  ASSERT_EQ(one(p.a.cq), IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(p.b.buf.data() + 8192 + 1024, p.a.buf.data(), 1024), 0);
  // Past the window's end, though inside the region.
  ASSERT_EQ(post_send(p.a.qp, IBV_WR_RDMA_WRITE, &s, 1, kIovaB + 8192 + 3584, p.mw->rkey), 0);
  EXPECT_EQ(one(p.a.cq), IBV_WC_REM_ACCESS_ERR);
}

TEST(IovaMr, ReregWithANewTranslationMovesTheIovaToTheNewAddress) {
  IovaPair p;
  ASSERT_NE(p.bm, nullptr);
  uint8_t* moved = p.b.buf.data() + 4096;
  ASSERT_EQ(ibv_rereg_mr(p.bm, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, moved, 8192, 0), 0);
  EXPECT_EQ(p.bm->addr, moved);
  fill(p.a.buf.data(), 256, 5);
  ibv_sge s = p.sa(0, 256);
  ASSERT_EQ(post_send(p.a.qp, IBV_WR_RDMA_WRITE, &s, 1, reinterpret_cast<uint64_t>(moved + 100), p.bm->rkey),
            0);
  ASSERT_EQ(one(p.a.cq), IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(moved + 100, p.a.buf.data(), 256), 0);
  // The old IOVA names nothing any more.
  ASSERT_EQ(post_send(p.a.qp, IBV_WR_RDMA_WRITE, &s, 1, kIovaB + 100, p.bm->rkey), 0);
  EXPECT_EQ(one(p.a.cq), IBV_WC_REM_ACCESS_ERR);
}

TEST(Odp, QueryDeviceExReportsExplicitAndImplicitOdp) {
  VerbsSide s;
  s.ctx = open_uroce();
  ASSERT_NE(s.ctx, nullptr);
  ibv_device_attr_ex a{};
  ASSERT_EQ(ibv_query_device_ex(s.ctx, nullptr, &a), 0);
  EXPECT_EQ(a.odp_caps.general_caps, uint64_t{IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT});
  constexpr uint32_t kRc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
                           IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC;
  EXPECT_EQ(a.odp_caps.per_transport_caps.rc_odp_caps & kRc, kRc);
  constexpr uint32_t kUd = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV;
  EXPECT_EQ(a.odp_caps.per_transport_caps.ud_odp_caps & kUd, kUd);
}

// Two connected RC sides; b's memory is reached through `odp`, an ODP region the test registers.
struct OdpPair {
  OdpPair() {
    make_side(&a, IBV_QPT_RC);
    make_side(&b, IBV_QPT_RC);
    if (testing::Test::HasFatalFailure()) return;
    EXPECT_EQ(connect_rc(a, b), 0);
  }
  ~OdpPair() {
    if (odp) {
      EXPECT_EQ(ibv_dereg_mr(odp), 0);
    }
    if (map) munmap(map, map_len);
  }
  // A fresh anonymous mapping no one has touched.
  void fresh_map(size_t len) {
    map_len = len;
    map =
        static_cast<uint8_t*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(map, MAP_FAILED);
  }
  ibv_wc_status rdma(ibv_wr_opcode op, uint64_t raddr, uint32_t len) {
    ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), len, a.mr->lkey};
    EXPECT_EQ(post_send(a.qp, op, &s, 1, raddr, odp->rkey), 0);
    return one(a.cq);
  }
  VerbsSide a, b;
  ibv_mr* odp = nullptr;
  uint8_t* map = nullptr;
  size_t map_len = 0;
};

TEST(Odp, AWriteIntoPagesNeverTouchedLandsInAnExplicitRegion) {
  OdpPair p;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t len = 64 * page;
  ASSERT_NO_FATAL_FAILURE(p.fresh_map(len));
  p.odp = ibv_reg_mr(p.b.pd, p.map, len, kAll | IBV_ACCESS_ON_DEMAND);
  ASSERT_NE(p.odp, nullptr) << strerror(errno);
  std::vector<unsigned char> resident(64);
  ASSERT_EQ(mincore(p.map, len, resident.data()), 0);
  for (unsigned char c : resident) ASSERT_EQ(c & 1, 0) << "registration must not touch the pages";
  fill(p.a.buf.data(), len, 6);
  ASSERT_EQ(p.rdma(IBV_WR_RDMA_WRITE, reinterpret_cast<uint64_t>(p.map), static_cast<uint32_t>(len)),
            IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(p.map, p.a.buf.data(), len), 0);
  std::memset(p.a.buf.data(), 0, len);
  ASSERT_EQ(p.rdma(IBV_WR_RDMA_READ, reinterpret_cast<uint64_t>(p.map), static_cast<uint32_t>(len)),
            IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(p.map, p.a.buf.data(), len), 0);
}

TEST(Odp, AnImplicitRegionReachesMappedMemoryAndRefusesAHole) {
  OdpPair p;
  p.odp = ibv_reg_mr(p.b.pd, nullptr, SIZE_MAX, kAll | IBV_ACCESS_ON_DEMAND);
  ASSERT_NE(p.odp, nullptr) << strerror(errno);
  EXPECT_EQ(p.odp->length, SIZE_MAX);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  ASSERT_NO_FATAL_FAILURE(p.fresh_map(8 * page));
  fill(p.a.buf.data(), 5000, 7);
  ASSERT_EQ(p.rdma(IBV_WR_RDMA_WRITE, reinterpret_cast<uint64_t>(p.map + 100), 5000), IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(p.map + 100, p.a.buf.data(), 5000), 0);
  // The same pages taken away (no access, in place: see AnExplicitRegionWhoseMemoryWasTakenAway...):
  // the WRITE ends in a remote access error, and this process is still here.
  ASSERT_EQ(mmap(p.map, p.map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0),
            static_cast<void*>(p.map));
  EXPECT_EQ(p.rdma(IBV_WR_RDMA_WRITE, reinterpret_cast<uint64_t>(p.map) + 100, 5000), IBV_WC_REM_ACCESS_ERR);
}

TEST(Odp, AnAtomicIntoAReadOnlyPageOfAnImplicitRegionIsARemoteAccessError) {
  OdpPair p;
  p.odp = ibv_reg_mr(p.b.pd, nullptr, SIZE_MAX, kAll | IBV_ACCESS_ON_DEMAND);
  ASSERT_NE(p.odp, nullptr) << strerror(errno);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  ASSERT_NO_FATAL_FAILURE(p.fresh_map(page));
  auto atomic_add = [&p](uint64_t va) {
    ibv_sge s{reinterpret_cast<uint64_t>(p.a.buf.data()), 8, p.a.mr->lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.atomic.remote_addr = va;
    wr.wr.atomic.rkey = p.odp->rkey;
    wr.wr.atomic.compare_add = 5;
    EXPECT_EQ(ibv_post_send(p.a.qp, &wr, &bad), 0);
    return one(p.a.cq);
  };
  const uint64_t va = reinterpret_cast<uint64_t>(p.map);
  EXPECT_EQ(atomic_add(va), IBV_WC_SUCCESS);  // writable: the add lands
  EXPECT_EQ(p.map[0], 5);
  // The same page read-only: a CPU atomic there would be SIGSEGV.
  ASSERT_EQ(mprotect(p.map, page, PROT_READ), 0);
  EXPECT_EQ(atomic_add(va), IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(p.map[0], 5);  // unchanged, and this process is still here
}

TEST(Odp, AReadOfAnImplicitRegionsHoleIsARemoteAccessError) {
  OdpPair p;
  p.odp = ibv_reg_mr(p.b.pd, nullptr, SIZE_MAX, kAll | IBV_ACCESS_ON_DEMAND);
  ASSERT_NE(p.odp, nullptr) << strerror(errno);
  EXPECT_EQ(p.rdma(IBV_WR_RDMA_READ, 4096, 64), IBV_WC_REM_ACCESS_ERR) << "page 1 is never mapped";
}

// The region's memory is taken away after registration. It is replaced, in one mmap(MAP_FIXED), by pages
// with no access rather than unmapped: a plain munmap left a hole that the next allocation of this
// multi-threaded process could fill (the second connection's own buffers did once, under ASan, and the READ
// succeeded). The responder reaches both the same way (process_vm_readv/writev fail with EFAULT); a range
// that was never mapped is AReadOfAnImplicitRegionsHoleIsARemoteAccessError.
TEST(Odp, AnExplicitRegionWhoseMemoryWasTakenAwayRefusesWriteAndRead) {
  OdpPair p;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  ASSERT_NO_FATAL_FAILURE(p.fresh_map(4 * page));
  p.odp = ibv_reg_mr(p.b.pd, p.map, p.map_len, kAll | IBV_ACCESS_ON_DEMAND);
  ASSERT_NE(p.odp, nullptr) << strerror(errno);
  void* gone_map =
      mmap(p.map, p.map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  ASSERT_EQ(gone_map, static_cast<void*>(p.map));
  const uint64_t gone = reinterpret_cast<uint64_t>(p.map);
  p.map = nullptr;  // unmapped at the end, below
  EXPECT_EQ(p.rdma(IBV_WR_RDMA_WRITE, gone, 64), IBV_WC_REM_ACCESS_ERR);

  OdpPair q;  // a READ, on a fresh connection (the error took the first one down)
  q.odp = ibv_reg_mr(q.b.pd, reinterpret_cast<void*>(gone), 4 * page, kAll | IBV_ACCESS_ON_DEMAND);
  ASSERT_NE(q.odp, nullptr) << strerror(errno);
  EXPECT_EQ(q.rdma(IBV_WR_RDMA_READ, gone + 8, 64), IBV_WC_REM_ACCESS_ERR);
  munmap(gone_map, 4 * page);
}

TEST(Odp, UdSendAndReceiveThroughImplicitRegions) {
  VerbsSide a, b;
  ASSERT_NO_FATAL_FAILURE(make_ud_pair(&a, &b, 0x11));
  ibv_mr* ia = ibv_reg_mr(a.pd, nullptr, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
  ibv_mr* ib = ibv_reg_mr(b.pd, nullptr, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
  ASSERT_NE(ia, nullptr);
  ASSERT_NE(ib, nullptr);
  ibv_sge r{reinterpret_cast<uint64_t>(b.buf.data()), 40 + 500, ib->lkey};
  ASSERT_EQ(post_recv(b.qp, &r, 1), 0);
  fill(a.buf.data(), 500, 8);
  ibv_ah* ah = ah_to(a, b);
  ASSERT_NE(ah, nullptr);
  ibv_sge s{reinterpret_cast<uint64_t>(a.buf.data()), 500, ia->lkey};
  ASSERT_EQ(post_ud_send(a.qp, ah, b.qp->qp_num, 0x11, &s), 0);
  EXPECT_EQ(one(a.cq), IBV_WC_SUCCESS);
  EXPECT_EQ(one(b.cq), IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(b.buf.data() + 40, a.buf.data(), 500), 0);
  EXPECT_EQ(ibv_destroy_ah(ah), 0);
  EXPECT_EQ(ibv_dereg_mr(ia), 0);
  EXPECT_EQ(ibv_dereg_mr(ib), 0);
}

TEST(Odp, ASendFromAnUnmappedBufferCompletesWithALocalProtectionError) {
  OdpPair p;
  ibv_mr* local = ibv_reg_mr(p.a.pd, nullptr, SIZE_MAX, kAll | IBV_ACCESS_ON_DEMAND);
  ASSERT_NE(local, nullptr) << strerror(errno);
  ibv_sge r{reinterpret_cast<uint64_t>(p.b.buf.data()), 4096, p.b.mr->lkey};
  ASSERT_EQ(post_recv(p.b.qp, &r, 1), 0);
  ibv_sge s{4096, 64, local->lkey};  // page 1: never mapped
  ASSERT_EQ(post_send(p.a.qp, IBV_WR_SEND, &s, 1), 0);
  EXPECT_EQ(one(p.a.cq), IBV_WC_LOC_PROT_ERR);
  EXPECT_EQ(ibv_destroy_qp(p.a.qp), 0);  // before its MR goes
  p.a.qp = nullptr;
  EXPECT_EQ(ibv_dereg_mr(local), 0);
}

}  // namespace
}  // namespace uroce::test
