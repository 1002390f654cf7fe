// Memory regions whose I/O virtual address differs from their address (ibv_reg_mr_iova2), and on-demand
// paging regions, at the transport. An IOVA region is named by [iova, iova + length) everywhere: local SGEs,
// RETH/AtomicETH addresses, window binds; its bytes are at [addr, addr + length), and its own process
// addresses are out of range (remote access error). An ODP region may name memory that is not mapped: a
// remote WRITE, READ or ATOMIC there ends in NAK Remote Access Error, a SEND into it in NAK Remote
// Operational Error with the receive completing LOC_PROT_ERR, and the process lives on; pages never touched
// before are faulted in by the access.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "tests/support/capture_port.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::pattern;
using test::ProtoEnv;

constexpr uint32_t kPsn = 0x500;  // ProtoOptions::rq_psn
constexpr uint8_t kNakRemAccess = 2, kNakRemOp = 3;
constexpr uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr uint64_t kIova = 0x5a5a'0000'0000ull;  // far from any address of the test process

bool is_nak(const Emitted& f, uint8_t code, uint32_t psn) {
  return f.opcode() == op::kRcAck && f.aeth_kind() == AethKind::kNak && f.aeth_value() == code &&
         f.psn() == psn;
}
bool is_ack(const Emitted& f, uint32_t psn) {
  return f.opcode() == op::kRcAck && f.aeth_kind() == AethKind::kAck && f.psn() == psn;
}

TEST(MrTableIova, BoundsAreCheckedInTheIovaSpace) {
  MrTable t;
  Pd pd;
  Mr* mr;
  ASSERT_EQ(t.reg(&pd, 0x10000, kIova, 4096, kAll, &mr), 0);
  EXPECT_EQ(t.check(mr->lkey, &pd, kIova, 4096, kAccessLocalWrite), mr);
  EXPECT_EQ(t.check(mr->lkey, &pd, kIova + 4095, 1, kAccessLocalWrite), mr);
  EXPECT_EQ(t.check(mr->lkey, &pd, kIova - 1, 1, kAccessLocalWrite), nullptr);
  EXPECT_EQ(t.check(mr->lkey, &pd, kIova + 4096, 1, kAccessLocalWrite), nullptr);
  EXPECT_EQ(t.check(mr->lkey, &pd, kIova + 1, 4096, kAccessLocalWrite), nullptr);
  EXPECT_EQ(t.check(mr->lkey, &pd, 0x10000, 1, kAccessLocalWrite), nullptr) << "the process address";
  EXPECT_EQ(t.check_remote(mr->rkey, nullptr, &pd, kIova + 8, 8, kAccessRemoteAtomic), mr);
  EXPECT_EQ(t.check_remote(mr->rkey, nullptr, &pd, 0x10008, 8, kAccessRemoteAtomic), nullptr);
  EXPECT_EQ(mr->host(kIova + 0x123), reinterpret_cast<uint8_t*>(0x10123));
  EXPECT_EQ(t.resolve(mr->lkey), mr);
  EXPECT_EQ(t.resolve(mr->lkey ^ 1), nullptr);
  // Neither range may wrap.
  Mr* bad;
  EXPECT_EQ(t.reg(&pd, 0x10000, UINT64_MAX - 100, 4096, kAll, &bad), EINVAL);
  EXPECT_EQ(t.reg(&pd, UINT64_MAX - 100, 0x10000, 4096, kAll, &bad), EINVAL);
  // rereg moves both.
  ASSERT_EQ(t.rereg(mr, &pd, 0x20000, 0x9000, 8192, kAll), 0);
  EXPECT_EQ(t.check(mr->lkey, &pd, 0x9000, 8192, 0), mr);
  EXPECT_EQ(t.check(mr->lkey, &pd, kIova, 1, 0), nullptr);
  EXPECT_EQ(mr->host(0x9001), reinterpret_cast<uint8_t*>(0x20001));
  EXPECT_EQ(t.dereg(mr), 0);
}

TEST(MrTableIova, ImplicitOdpIsTheWholeAddressSpaceAndNeedsOnDemand) {
  MrTable t;
  Pd pd;
  Mr* mr;
  EXPECT_EQ(t.reg(&pd, 0, 0, UINT64_MAX, kAll, &mr), EINVAL) << "only ODP may span everything";
  EXPECT_EQ(t.reg(&pd, 0x1000, 0x1000, UINT64_MAX, kAll | kAccessOnDemand, &mr), EINVAL);
  ASSERT_EQ(t.reg(&pd, 0, 0, UINT64_MAX, kAll | kAccessOnDemand, &mr), 0);
  EXPECT_TRUE(mr->odp);
  EXPECT_EQ(t.check(mr->lkey, &pd, 0x1234, 100, 0), mr);
  EXPECT_EQ(t.check(mr->lkey, &pd, UINT64_MAX - 8, 8, 0), mr);  // [0, UINT64_MAX): the length is UINT64_MAX
  EXPECT_EQ(mr->host(0x1234), reinterpret_cast<uint8_t*>(0x1234));
  EXPECT_EQ(t.dereg(mr), 0);
}

TEST(MrTableIova, WindowsAreBoundInTheRegionsIovaSpace) {
  MrTable t;
  Pd pd;
  Mr* mr;
  Mw* mw;
  ASSERT_EQ(t.reg(&pd, 0x10000, kIova, 4096, kAll | kAccessMwBind, &mr), 0);
  ASSERT_EQ(t.alloc_mw(&pd, MwType::k1, &mw), 0);
  MwBind b{mw->rkey,          (mw->rkey & ~0xFFu) | ((mw->rkey + 1) & 0xFFu), mr->lkey, 0x10000, 1024,
           kAccessRemoteWrite};
  EXPECT_EQ(t.bind_static_check(b, &pd), EINVAL) << "a window over the process address";
  b.addr = kIova + 1024;
  ASSERT_TRUE(t.bind(b, nullptr, &pd));
  EXPECT_EQ(t.check_remote(mw->rkey, nullptr, &pd, kIova + 1024, 1024, kAccessRemoteWrite), mr);
  EXPECT_EQ(t.check_remote(mw->rkey, nullptr, &pd, kIova, 8, kAccessRemoteWrite), nullptr);
  EXPECT_EQ(t.resolve(mw->rkey), mr) << "a window's addresses translate through its region";
  t.dealloc_mw(mw);
  EXPECT_EQ(t.dereg(mr), 0);
}

// ProtoEnv plus a second MR over the same buffer at kIova.
struct IovaEnv {
  IovaEnv() {
    if (env.dev->reg_mr(env.pd, env.at(0), env.mem.size(), kIova, kAll, &im))
      throw std::runtime_error("IovaEnv: reg_mr failed");
  }
  PacketHeaders req(uint8_t opcode, uint32_t psn, uint64_t va, uint32_t rkey, uint32_t len) const {
    PacketHeaders h = env.peer_headers(opcode, psn);
    h.bth.ackreq = true;
    h.reth = {va, rkey, len};
    return h;
  }
  ProtoEnv env;
  Mr* im = nullptr;
};

TEST(ResponderIova, WriteReadAndAtomicAtTheIovaReachTheRegionsMemory) {
  IovaEnv e;
  const std::vector<uint8_t> d = pattern(1500, 3);
  e.env.inject(e.req(op::kRcWriteFirst, kPsn, kIova + 4096, e.im->rkey, 1500), std::span(d).first(1024));
  PacketHeaders last = e.env.peer_headers(op::kRcWriteLast, kPsn + 1);
  last.bth.ackreq = true;
  e.env.inject(last, std::span(d).subspan(1024));
  std::vector<Emitted> f = e.env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(is_ack(f[0], kPsn + 1));
  EXPECT_EQ(e.env.bytes(4096, 1500), d);

  e.env.fill(16384, 2000, 5);
  e.env.inject(e.req(op::kRcReadRequest, kPsn + 2, kIova + 16384, e.im->rkey, 2000));
  f = e.env.run();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].payload, e.env.bytes(16384, 1024));
  EXPECT_EQ(f[1].payload, e.env.bytes(16384 + 1024, 976));

  e.env.set_u64(64, 40);
  PacketHeaders fa = e.env.peer_headers(op::kRcFetchAdd, kPsn + 4);
  fa.atomic = {kIova + 64, e.im->rkey, 2, 0};
  e.env.inject(fa);
  f = e.env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcAtomicAck);
  EXPECT_EQ(f[0].h.atomic_ack_orig, 40u);
  EXPECT_EQ(e.env.u64(64), 42u);
}

TEST(ResponderIova, TheRegionsProcessAddressIsOutOfRange) {
  for (const uint8_t opcode : {op::kRcWriteOnly, op::kRcReadRequest, op::kRcFetchAdd}) {
    SCOPED_TRACE(int{opcode});
    IovaEnv e;
    e.env.fill(0, e.env.mem.size(), 9);
    const std::vector<uint8_t> before = e.env.bytes(0, e.env.mem.size());
    PacketHeaders h = e.req(opcode, kPsn, e.env.addr(4096), e.im->rkey, 64);
    if (opcode == op::kRcFetchAdd) h.atomic = {e.env.addr(4096), e.im->rkey, 1, 0};
    e.env.inject(h, opcode == op::kRcWriteOnly ? pattern(64, 1) : std::vector<uint8_t>{});
    const std::vector<Emitted> f = e.env.run();
    ASSERT_EQ(f.size(), 1u);
    EXPECT_TRUE(is_nak(f[0], kNakRemAccess, kPsn));
    EXPECT_EQ(e.env.qp->state(), QpState::kErr);
    EXPECT_EQ(e.env.bytes(0, e.env.mem.size()), before);
  }
  // Past the end of the IOVA range, by one byte.
  IovaEnv e;
  e.env.inject(e.req(op::kRcWriteOnly, kPsn, kIova + e.env.mem.size() - 63, e.im->rkey, 64), pattern(64, 1));
  const std::vector<Emitted> f = e.env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(is_nak(f[0], kNakRemAccess, kPsn));
}

TEST(RequesterIova, SendGathersAndReadAndReceiveScatterThroughTheIova) {
  IovaEnv e;
  e.env.unlimited_credits();
  e.env.fill(2048, 300, 7);
  SendWr wr;
  const Sge s{kIova + 2048, 300, e.im->lkey};
  wr.wr_id = 1;
  wr.opcode = WrOpcode::kSend;
  wr.send_flags = kSendSignaled;
  wr.sg_list = &s;
  wr.num_sge = 1;
  ASSERT_EQ(e.env.qp->post_send(wr), 0);
  std::vector<Emitted> f = e.env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].payload, e.env.bytes(2048, 300));

  const Sge r{kIova + 8192, 100, e.im->lkey};
  wr.wr_id = 2;
  wr.opcode = WrOpcode::kRdmaRead;
  wr.sg_list = &r;
  wr.remote_addr = 0x1000;
  wr.rkey = 1;
  ASSERT_EQ(e.env.qp->post_send(wr), 0);
  f = e.env.run();
  ASSERT_EQ(f.size(), 1u);
  e.env.inject_ack(e.env.opt.sq_psn);
  e.env.inject_read_resp(op::kRcReadRespOnly, e.env.opt.sq_psn + 1, pattern(100, 4), 2);
  e.env.run();
  std::vector<Wc> wc = e.env.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[1].status, WcStatus::kSuccess);
  EXPECT_EQ(e.env.bytes(8192, 100), pattern(100, 4));

  const Sge rr{kIova + 12288, 200, e.im->lkey};
  ASSERT_EQ(e.env.qp->post_recv(RecvWr{9, &rr, 1}), 0);
  PacketHeaders h = e.env.peer_headers(op::kRcSendOnly, kPsn);
  h.bth.ackreq = true;
  e.env.inject(h, pattern(200, 6));
  f = e.env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(is_ack(f[0], kPsn));
  EXPECT_EQ(e.env.bytes(12288, 200), pattern(200, 6));
}

// A fresh anonymous mapping of `pages` pages, never touched, registered as an explicit ODP region.
struct OdpRegion {
  OdpRegion(ProtoEnv& env, size_t pages) : len(pages * static_cast<size_t>(sysconf(_SC_PAGESIZE))) {
    p = static_cast<uint8_t*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (p == MAP_FAILED) throw std::runtime_error("mmap");
    if (env.dev->reg_mr(env.pd, p, len, kAll | kAccessOnDemand, &mr)) throw std::runtime_error("reg_mr");
  }
  ~OdpRegion() { munmap(p, len); }
  uint64_t va(size_t off) const { return reinterpret_cast<uint64_t>(p + off); }
  size_t len;
  uint8_t* p;
  Mr* mr = nullptr;
};

// Pages of the process that hold nothing: an anonymous mapping, unmapped again.
uint64_t hole(size_t len) {
  void* p = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(p, MAP_FAILED);
  munmap(p, len);
  return reinterpret_cast<uint64_t>(p);
}

TEST(Odp, AWriteIntoPagesNeverTouchedLandsAndAReadReturnsIt) {
  ProtoEnv env;
  OdpRegion r(env, 4);
  std::vector<unsigned char> resident(4);
  ASSERT_EQ(mincore(r.p, r.len, resident.data()), 0);
  for (unsigned char c : resident) ASSERT_EQ(c & 1, 0) << "the pages must start out never touched";
  const std::vector<uint8_t> d = pattern(1000, 8);
  PacketHeaders h = env.peer_headers(op::kRcWriteOnly, kPsn);
  h.bth.ackreq = true;
  h.reth = {r.va(r.len / 2 - 500), r.mr->rkey, 1000};  // across two pages
  env.inject(h, d);
  std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(is_ack(f[0], kPsn));
  EXPECT_EQ(std::memcmp(r.p + r.len / 2 - 500, d.data(), d.size()), 0);

  h = env.peer_headers(op::kRcReadRequest, kPsn + 1);
  h.reth = {r.va(r.len / 2 - 500), r.mr->rkey, 1000};
  env.inject(h);
  f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].payload, d);
}

TEST(Odp, WriteReadAndAtomicIntoAHoleOfAnImplicitRegionAreRemoteAccessErrors) {
  for (const uint8_t opcode : {op::kRcWriteOnly, op::kRcReadRequest, op::kRcFetchAdd, op::kRcWriteFirst}) {
    SCOPED_TRACE(int{opcode});
    ProtoEnv env;
    Mr* implicit;
    ASSERT_EQ(env.dev->reg_mr(env.pd, nullptr, SIZE_MAX, kAll | kAccessOnDemand, &implicit), 0);
    const uint64_t va = hole(1 << 16);
    PacketHeaders h = env.peer_headers(opcode, kPsn);
    h.bth.ackreq = true;
    h.reth = {va, implicit->rkey, opcode == op::kRcWriteFirst ? 2048u : 64u};
    if (opcode == op::kRcFetchAdd) h.atomic = {va, implicit->rkey, 1, 0};
    env.inject(h, opcode == op::kRcWriteOnly    ? pattern(64, 1)
                  : opcode == op::kRcWriteFirst ? pattern(1024, 1)
                                                : std::vector<uint8_t>{});
    const std::vector<Emitted> f = env.run();
    ASSERT_EQ(f.size(), 1u);
    EXPECT_TRUE(is_nak(f[0], kNakRemAccess, kPsn));
    EXPECT_EQ(env.qp->state(), QpState::kErr);
  }
}

TEST(Odp, AReadOfAnUnmappedTailStopsWithANakAtThatPacket) {
  ProtoEnv env;
  OdpRegion r(env, 2);
  const size_t page = r.len / 2;
  std::memset(r.p, 7, page);
  ASSERT_EQ(munmap(r.p + page, page), 0);  // the region's second page goes; its first stays
  PacketHeaders h = env.peer_headers(op::kRcReadRequest, kPsn);
  h.reth = {r.va(page - 1024), r.mr->rkey, 2048};
  env.inject(h);
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].opcode(), op::kRcReadRespFirst);
  EXPECT_EQ(f[0].payload, std::vector<uint8_t>(1024, 7));
  EXPECT_TRUE(is_nak(f[1], kNakRemAccess, kPsn + 1));
  r.len = page;  // what is left to unmap
}

TEST(Odp, ASendIntoAnUnmappedReceiveBufferIsALocalProtectionError) {
  ProtoEnv env;
  Mr* implicit;
  ASSERT_EQ(env.dev->reg_mr(env.pd, nullptr, SIZE_MAX, kAll | kAccessOnDemand, &implicit), 0);
  const Sge s{hole(4096), 256, implicit->lkey};
  ASSERT_EQ(env.qp->post_recv(RecvWr{3, &s, 1}), 0);
  PacketHeaders h = env.peer_headers(op::kRcSendOnly, kPsn);
  h.bth.ackreq = true;
  env.inject(h, pattern(100, 2));
  const std::vector<Emitted> f = env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(is_nak(f[0], kNakRemOp, kPsn));
  const std::vector<Wc> wc = env.poll();
  ASSERT_GE(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 3u);
  EXPECT_EQ(wc[0].status, WcStatus::kLocProtErr);
}

TEST(Odp, ASendFromOrAReadIntoAHoleFailsLocallyAndSendsNothing) {
  for (const WrOpcode opcode : {WrOpcode::kSend, WrOpcode::kRdmaRead, WrOpcode::kRdmaWrite}) {
    SCOPED_TRACE(static_cast<int>(opcode));
    ProtoEnv env;
    env.unlimited_credits();
    Mr* implicit;
    ASSERT_EQ(env.dev->reg_mr(env.pd, nullptr, SIZE_MAX, kAll | kAccessOnDemand, &implicit), 0);
    const Sge s{hole(1 << 16) + 100, 5000, implicit->lkey};
    SendWr wr;
    wr.wr_id = 4;
    wr.opcode = opcode;
    wr.send_flags = kSendSignaled;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.remote_addr = 0x1000;
    wr.rkey = 1;
    ASSERT_EQ(env.qp->post_send(wr), 0);
    EXPECT_TRUE(env.run().empty());
    const std::vector<Wc> wc = env.poll();
    ASSERT_EQ(wc.size(), 1u);
    EXPECT_EQ(wc[0].status, WcStatus::kLocProtErr);
  }
}

}  // namespace
}  // namespace uroce
