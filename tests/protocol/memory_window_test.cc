// Memory windows at the transport (IBA 10.6.7, o10-36/o10-37): binding type 1 and type 2 windows through the
// send queue, remote WRITE/READ/ATOMIC through a window's rkey, every way an access through a window can be
// wrong (key, bounds, rights, unbound, another QP or PD), LOCAL_INV and SEND with Invalidate, and windows
// that are invalidated or deallocated between the packets of a WRITE or while a READ is answered: each ends
// in NAK Remote Access Error with nothing written outside a live window, and the responder QP in ERR.
#include <gtest/gtest.h>

#include "tests/support/capture_port.h"

namespace uroce {
namespace {

using namespace wire;
using test::Emitted;
using test::pattern;
using test::ProtoEnv;
using test::ProtoOptions;

constexpr uint32_t kPsn = 0x500;
constexpr uint8_t kNakInvReq = 1, kNakRemAccess = 2;
constexpr uint32_t kRemoteRw = kAccessRemoteWrite | kAccessRemoteRead;
// The window used by most cases: 2 KiB at offset 4 KiB of the test buffer.
constexpr size_t kWinOff = 4096, kWinLen = 2048;

bool is_nak(const Emitted& f, uint8_t code, uint32_t psn) {
  return f.opcode() == op::kRcAck && f.aeth_kind() == AethKind::kNak && f.aeth_value() == code &&
         f.psn() == psn;
}
bool is_ack(const Emitted& f, uint32_t psn) {
  return f.opcode() == op::kRcAck && f.aeth_kind() == AethKind::kAck && f.psn() == psn;
}

// ProtoEnv plus an MR over the same buffer that allows binding windows and grants no remote access itself:
// whatever a peer reaches through a window, the window granted.
struct MwEnv {
  explicit MwEnv(const ProtoOptions& o = {}) : env(o) {
    if (env.dev->reg_mr(env.pd, env.at(0), env.mem.size(), kAccessLocalWrite | kAccessMwBind, &bind_mr))
      throw std::runtime_error("MwEnv: reg_mr failed");
    env.fill(0, env.mem.size(), 9);
    before = env.bytes(0, env.mem.size());
  }

  Mw* alloc(MwType t) {
    Mw* mw = nullptr;
    EXPECT_EQ(env.dev->alloc_mw(env.pd, t, &mw), 0);
    return mw;
  }

  MwBind bind_of(const Mw* mw, size_t off, uint64_t len, uint32_t access, const Mr* mr = nullptr) const {
    MwBind b;
    b.mw_rkey = mw->rkey;
    b.new_rkey = (mw->rkey & ~0xFFu) | ((mw->rkey + 1) & 0xFFu);  // ibv_inc_rkey
    b.mr_lkey = (mr ? mr : bind_mr)->lkey;
    b.addr = env.addr(off);
    b.length = len;
    b.access = access;
    return b;
  }

  int post_bind(const MwBind& b, uint64_t wr_id = 77, Qp* q = nullptr) {
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = WrOpcode::kBindMw;
    wr.send_flags = kSendSignaled;
    wr.bind = b;
    return (q ? q : env.qp)->post_send(wr);
  }

  // Binds `mw` and runs the bind to its completion; returns the window's rkey.
  uint32_t bind(Mw* mw, size_t off = kWinOff, uint64_t len = kWinLen, uint32_t access = kRemoteRw,
                Qp* q = nullptr) {
    const MwBind b = bind_of(mw, off, len, access);
    EXPECT_EQ(post_bind(b, 77, q), 0);
    env.run();
    const std::vector<Wc> wc = env.poll();
    EXPECT_EQ(wc.size(), 1u);
    if (!wc.empty()) {
      EXPECT_EQ(wc[0].opcode, WcOpcode::kBindMw);
      EXPECT_EQ(wc[0].status, WcStatus::kSuccess) << wc_status_name(wc[0].status);
    }
    EXPECT_EQ(mw->rkey, b.new_rkey);
    return mw->rkey;
  }

  int post_local_inv(uint32_t rkey, uint64_t wr_id = 88) {
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = WrOpcode::kLocalInv;
    wr.send_flags = kSendSignaled;
    wr.imm_data_be = rkey;
    return env.qp->post_send(wr);
  }

  PacketHeaders write(uint8_t opcode, uint32_t psn, size_t off, uint32_t rkey, uint32_t len,
                      Qp* q = nullptr) {
    PacketHeaders h = env.peer_headers(opcode, psn);
    if (opcode == op::kRcWriteFirst || opcode == op::kRcWriteOnly) h.reth = {env.addr(off), rkey, len};
    if (q) h.bth.dqpn = q->qpn();
    h.bth.ackreq = opcode == op::kRcWriteOnly || opcode == op::kRcWriteLast;
    return h;
  }

  PacketHeaders read(uint32_t psn, size_t off, uint32_t rkey, uint32_t len) {
    PacketHeaders h = env.peer_headers(op::kRcReadRequest, psn);
    h.reth = {env.addr(off), rkey, len};
    h.bth.ackreq = true;
    return h;
  }

  // Memory outside [off, off + len) is as the fixture left it.
  void expect_untouched_except(size_t off, size_t len) const {
    const std::vector<uint8_t> now = env.bytes(0, env.mem.size());
    for (size_t i = 0; i < now.size(); ++i) {
      if (i >= off && i < off + len) continue;
      ASSERT_EQ(now[i], before[i]) << "byte " << i << " written outside the live window";
    }
  }

  void expect_access_error(Qp* q = nullptr) {
    EXPECT_EQ((q ? q : env.qp)->state(), QpState::kErr);
    bool access_event = false;
    for (const AsyncEvent& ev : env.events()) access_event |= ev.type == EventType::kQpAccessErr;
    EXPECT_TRUE(access_event);
  }

  ProtoEnv env;
  Mr* bind_mr = nullptr;
  std::vector<uint8_t> before;
};

void write_through(MwEnv& m, uint32_t rkey, Qp* q = nullptr) {
  const std::vector<uint8_t> data = pattern(kWinLen, 4);
  m.env.inject(m.write(op::kRcWriteFirst, kPsn, kWinOff, rkey, kWinLen, q), std::span(data).first(1024));
  m.env.inject(m.write(op::kRcWriteLast, kPsn + 1, 0, 0, 0, q), std::span(data).subspan(1024));
  const std::vector<Emitted> f = m.env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(is_ack(f[0], kPsn + 1));
  EXPECT_EQ(m.env.bytes(kWinOff, kWinLen), data);
}

TEST(MemoryWindow, Type2WindowTakesWritesAndReadsThroughItsRkey) {
  MwEnv m;
  Mw* mw = m.alloc(MwType::k2);
  const uint32_t rkey = m.bind(mw);
  EXPECT_NE(rkey, m.bind_mr->rkey);
  write_through(m, rkey);
  m.env.inject(m.read(kPsn + 2, kWinOff, rkey, kWinLen));
  const std::vector<Emitted> f = m.env.run();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].opcode(), op::kRcReadRespFirst);
  EXPECT_EQ(f[1].opcode(), op::kRcReadRespLast);
  std::vector<uint8_t> got = f[0].payload;
  got.insert(got.end(), f[1].payload.begin(), f[1].payload.end());
  EXPECT_EQ(got, pattern(kWinLen, 4));
  m.expect_untouched_except(kWinOff, kWinLen);
  EXPECT_EQ(m.env.qp->state(), QpState::kRts);
}

TEST(MemoryWindow, Type1WindowServesEveryQpOfItsPd) {
  MwEnv m;
  Mw* mw = m.alloc(MwType::k1);
  const uint32_t rkey = m.bind(mw);
  Qp* q2 = nullptr;
  QpInitAttr init = m.env.qp->init_attr();
  ASSERT_EQ(m.env.dev->create_qp(m.env.pd, init, &q2), 0);
  ASSERT_EQ(m.env.connect(q2), 0);
  write_through(m, rkey, q2);
  m.expect_untouched_except(kWinOff, kWinLen);
}

TEST(MemoryWindow, AtomicThroughAWindowNeedsItsAtomicRight) {
  MwEnv m;
  Mw* mw = m.alloc(MwType::k2);
  const uint32_t rkey = m.bind(mw, kWinOff, kWinLen, kRemoteRw | kAccessRemoteAtomic);
  m.env.set_u64(kWinOff, 40);
  PacketHeaders h = m.env.peer_headers(op::kRcFetchAdd, kPsn);
  h.atomic = {m.env.addr(kWinOff), rkey, 2, 0};
  m.env.inject(h);
  const std::vector<Emitted> f = m.env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), op::kRcAtomicAck);
  EXPECT_EQ(m.env.u64(kWinOff), 42u);
}

// One bad access through a window per case: the WRITE is NAKed with Remote Access Error, nothing is written,
// the QP goes to ERR.
struct BadAccess {
  const char* name;
  void (*setup)(MwEnv& m, uint32_t* rkey, size_t* off, uint32_t* len, Qp** q);
};

const BadAccess kBadAccesses[] = {
    {"wrong key byte",
     [](MwEnv& m, uint32_t* rkey, size_t*, uint32_t*, Qp**) { *rkey = m.bind(m.alloc(MwType::k2)) ^ 0x01; }},
    {"the MR's rkey is not the window's",
     [](MwEnv& m, uint32_t* rkey, size_t*, uint32_t*, Qp**) {
       m.bind(m.alloc(MwType::k2));
       *rkey = m.bind_mr->rkey;  // the MR itself grants no remote write
     }},
    {"starts before the window",
     [](MwEnv& m, uint32_t* rkey, size_t* off, uint32_t*, Qp**) {
       *rkey = m.bind(m.alloc(MwType::k2));
       *off = kWinOff - 8;
     }},
    {"ends past the window",
     [](MwEnv& m, uint32_t* rkey, size_t* off, uint32_t*, Qp**) {
       *rkey = m.bind(m.alloc(MwType::k2));
       *off = kWinOff + kWinLen - 8;
     }},
    {"longer than the window",
     [](MwEnv& m, uint32_t* rkey, size_t*, uint32_t* len, Qp**) {
       *rkey = m.bind(m.alloc(MwType::k2));
       *len = kWinLen + 64;
     }},
    {"window without remote write",
     [](MwEnv& m, uint32_t* rkey, size_t*, uint32_t*, Qp**) {
       *rkey = m.bind(m.alloc(MwType::k2), kWinOff, kWinLen, kAccessRemoteRead);
     }},
    {"type 2 window never bound",
     [](MwEnv& m, uint32_t* rkey, size_t*, uint32_t*, Qp**) { *rkey = m.alloc(MwType::k2)->rkey; }},
    {"type 1 window never bound",
     [](MwEnv& m, uint32_t* rkey, size_t*, uint32_t*, Qp**) { *rkey = m.alloc(MwType::k1)->rkey; }},
    {"type 1 window unbound (length 0)",
     [](MwEnv& m, uint32_t* rkey, size_t*, uint32_t*, Qp**) {
       Mw* mw = m.alloc(MwType::k1);
       m.bind(mw);
       *rkey = m.bind(mw, kWinOff, 0);
     }},
    {"type 2 window used through another QP of its PD",
     [](MwEnv& m, uint32_t* rkey, size_t*, uint32_t*, Qp** q) {
       *rkey = m.bind(m.alloc(MwType::k2));
       ASSERT_EQ(m.env.dev->create_qp(m.env.pd, m.env.qp->init_attr(), q), 0);
       ASSERT_EQ(m.env.connect(*q), 0);
     }},
    {"type 1 window used through a QP of another PD",
     [](MwEnv& m, uint32_t* rkey, size_t*, uint32_t*, Qp** q) {
       *rkey = m.bind(m.alloc(MwType::k1));
       Pd* pd2 = nullptr;
       ASSERT_EQ(m.env.dev->alloc_pd(&pd2), 0);
       ASSERT_EQ(m.env.dev->create_qp(pd2, m.env.qp->init_attr(), q), 0);
       ASSERT_EQ(m.env.connect(*q), 0);
     }},
    {"type 2 window invalidated by LOCAL_INV",
     [](MwEnv& m, uint32_t* rkey, size_t*, uint32_t*, Qp**) {
       *rkey = m.bind(m.alloc(MwType::k2));
       ASSERT_EQ(m.post_local_inv(*rkey), 0);
       m.env.run();
       const std::vector<Wc> wc = m.env.poll();
       ASSERT_EQ(wc.size(), 1u);
       EXPECT_EQ(wc[0].opcode, WcOpcode::kLocalInv);
       EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
     }},
    {"window deallocated",
     [](MwEnv& m, uint32_t* rkey, size_t*, uint32_t*, Qp**) {
       Mw* mw = m.alloc(MwType::k2);
       *rkey = m.bind(mw);
       ASSERT_EQ(m.env.dev->dealloc_mw(mw), 0);
     }},
};

TEST(MemoryWindow, EveryBadAccessIsARemoteAccessErrorAndWritesNothing) {
  for (const BadAccess& c : kBadAccesses) {
    SCOPED_TRACE(c.name);
    MwEnv m;
    uint32_t rkey = 0, len = 1024;
    size_t off = kWinOff;
    Qp* q = nullptr;
    c.setup(m, &rkey, &off, &len, &q);
    if (::testing::Test::HasFatalFailure()) return;
    const std::vector<uint8_t> before = m.env.bytes(0, m.env.mem.size());
    const std::vector<uint8_t> data = pattern(len, 5);
    const uint32_t first = std::min<uint32_t>(len, 1024);
    m.env.inject(m.write(len > 1024 ? op::kRcWriteFirst : op::kRcWriteOnly, kPsn, off, rkey, len, q),
                 std::span(data).first(first));
    const std::vector<Emitted> f = m.env.run();
    ASSERT_EQ(f.size(), 1u);
    EXPECT_TRUE(is_nak(f[0], kNakRemAccess, kPsn));
    EXPECT_EQ(m.env.bytes(0, m.env.mem.size()), before);
    m.expect_access_error(q);
  }
}

TEST(MemoryWindow, ReadOutsideTheWindowIsARemoteAccessError) {
  MwEnv m;
  const uint32_t rkey = m.bind(m.alloc(MwType::k2), kWinOff, kWinLen, kAccessRemoteRead);
  m.env.inject(m.read(kPsn, kWinOff + 1024, rkey, kWinLen));
  const std::vector<Emitted> f = m.env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(is_nak(f[0], kNakRemAccess, kPsn));
  m.expect_access_error();
}

TEST(MemoryWindow, SendWithInvalidateEndsTheWindowAndReportsItsKey) {
  MwEnv m;
  const uint32_t rkey = m.bind(m.alloc(MwType::k2));
  ASSERT_EQ(m.env.post_recv(0, 1024, 5), 0);
  PacketHeaders h = m.env.peer_headers(op::kRcSendOnlyInv, kPsn);
  h.ieth_rkey = rkey;
  h.bth.ackreq = true;
  m.env.inject(h, pattern(100, 6));
  std::vector<Emitted> f = m.env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(is_ack(f[0], kPsn));
  const std::vector<Wc> wc = m.env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(wc[0].byte_len, 100u);
  EXPECT_TRUE(wc[0].wc_flags & kWcWithInv);
  EXPECT_EQ(wc[0].imm_data_be, rkey) << "the invalidated rkey, host order";
  const std::vector<uint8_t> before = m.env.bytes(kWinOff, kWinLen);
  m.env.inject(m.write(op::kRcWriteOnly, kPsn + 1, kWinOff, rkey, 64), pattern(64, 1));
  f = m.env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(is_nak(f[0], kNakRemAccess, kPsn + 1));
  EXPECT_EQ(m.env.bytes(kWinOff, kWinLen), before);
  m.expect_access_error();
}

TEST(MemoryWindow, SendWithInvalidateOfAnythingButABoundType2WindowIsAnInvalidRequest) {
  const auto key_of = [](MwEnv& m, int which) -> uint32_t {
    switch (which) {
      case 0:
        return m.env.mr->rkey;  // a user MR cannot be invalidated
      case 1:
        return m.bind(m.alloc(MwType::k1));  // nor a type 1 window
      default:
        return m.alloc(MwType::k2)->rkey;  // nor a type 2 window that is not bound
    }
  };
  for (int which = 0; which < 3; ++which) {
    SCOPED_TRACE(which);
    MwEnv m;
    const uint32_t key = key_of(m, which);
    ASSERT_EQ(m.env.post_recv(0, 1024, 5), 0);
    PacketHeaders h = m.env.peer_headers(op::kRcSendOnlyInv, kPsn);
    h.ieth_rkey = key;
    m.env.inject(h, pattern(100, 6));
    const std::vector<Emitted> f = m.env.run();
    ASSERT_EQ(f.size(), 1u);
    EXPECT_TRUE(is_nak(f[0], kNakInvReq, kPsn));
    const std::vector<Wc> wc = m.env.poll();
    ASSERT_EQ(wc.size(), 1u);
    EXPECT_EQ(wc[0].status, WcStatus::kRemInvReqErr);
    EXPECT_EQ(m.env.qp->state(), QpState::kErr);
  }
}

TEST(MemoryWindow, SendWithInvalidateThroughAnotherQpLeavesTheWindowBound) {
  MwEnv m;
  const uint32_t rkey = m.bind(m.alloc(MwType::k2));
  Qp* q2 = nullptr;
  ASSERT_EQ(m.env.dev->create_qp(m.env.pd, m.env.qp->init_attr(), &q2), 0);
  ASSERT_EQ(m.env.connect(q2), 0);
  const Sge s = m.env.sge(0, 1024);
  ASSERT_EQ(q2->post_recv(RecvWr{5, &s, 1}), 0);
  PacketHeaders h = m.env.peer_headers(op::kRcSendOnlyInv, kPsn);
  h.bth.dqpn = q2->qpn();
  h.ieth_rkey = rkey;
  m.env.inject(h, pattern(100, 6));
  const std::vector<Emitted> f = m.env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(is_nak(f[0], kNakInvReq, kPsn));
  EXPECT_EQ(q2->state(), QpState::kErr);
  m.env.poll();
  write_through(m, rkey);  // still valid on the QP it was bound through
}

TEST(MemoryWindow, LocalInvalidateOfAnMrOrType1WindowFailsTheWqe) {
  for (int which = 0; which < 2; ++which) {
    SCOPED_TRACE(which);
    MwEnv m;
    const uint32_t key = which == 0 ? m.env.mr->rkey : m.bind(m.alloc(MwType::k1));
    ASSERT_EQ(m.post_local_inv(key), 0);
    m.env.run();
    const std::vector<Wc> wc = m.env.poll();
    ASSERT_EQ(wc.size(), 1u);
    EXPECT_EQ(wc[0].opcode, WcOpcode::kLocalInv);
    EXPECT_EQ(wc[0].status, WcStatus::kLocQpOpErr);
    EXPECT_EQ(m.env.qp->state(), QpState::kErr);
  }
}

// The races: the window stops being valid between the packets of one WRITE, or while a READ is answered.
enum class End { kLocalInv, kDealloc, kUnbindType1 };

struct RaceEnv : MwEnv {
  explicit RaceEnv(End how, const ProtoOptions& o = {}) : MwEnv(o), how(how) {}
  uint32_t bind_window(size_t len) {
    mw = alloc(how == End::kUnbindType1 ? MwType::k1 : MwType::k2);
    return bind(mw, kWinOff, len, kRemoteRw);
  }
  // Ends the window now: LOCAL_INV and unbinding run through the send queue (and are seen complete), dealloc
  // is immediate. Returns the frames the engine sent in the passes until the WQE completed.
  std::vector<Emitted> end_window() {
    std::vector<Emitted> sent;
    if (how == End::kDealloc) {
      EXPECT_EQ(env.dev->dealloc_mw(mw), 0);
      return sent;
    }
    const int posted =
        how == End::kLocalInv ? post_local_inv(mw->rkey) : post_bind(bind_of(mw, kWinOff, 0, 0));
    EXPECT_EQ(posted, 0);
    // The window ends within the pass that completes the WQE; READ responses of that pass sent before it
    // still read a live window.
    for (int i = 0; i < 100 && env.cq->depth() == 0; ++i) {
      env.dev->progress();
      std::vector<Emitted> f = env.port.take();
      sent.insert(sent.end(), f.begin(), f.end());
    }
    const std::vector<Wc> wc = env.poll();
    EXPECT_EQ(wc.size(), 1u);
    for (const Wc& w : wc) EXPECT_EQ(w.status, WcStatus::kSuccess);
    return sent;
  }
  End how;
  Mw* mw = nullptr;
};

void end_mid_write(End how) {
  RaceEnv m(how);
  const uint32_t rkey = m.bind_window(3 * 1024);
  const std::vector<uint8_t> data = pattern(3 * 1024, 8);
  m.env.inject(m.write(op::kRcWriteFirst, kPsn, kWinOff, rkey, 3 * 1024), std::span(data).first(1024));
  EXPECT_TRUE(m.env.run().empty());
  EXPECT_EQ(m.env.bytes(kWinOff, 1024), std::vector<uint8_t>(data.begin(), data.begin() + 1024));
  EXPECT_TRUE(m.end_window().empty());
  m.env.inject(m.write(op::kRcWriteMiddle, kPsn + 1, 0, 0, 0), std::span(data).subspan(1024, 1024));
  m.env.inject(m.write(op::kRcWriteLast, kPsn + 2, 0, 0, 0), std::span(data).subspan(2048));
  const std::vector<Emitted> f = m.env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(is_nak(f[0], kNakRemAccess, kPsn + 1));
  m.expect_untouched_except(kWinOff, 1024);
  EXPECT_EQ(m.env.dev->counters()[Counter::kRemAccessNakSent], 1u);
  m.expect_access_error();
}

TEST(MemoryWindow, LocalInvalidateBetweenWriteFirstAndLastIsNakedAndWritesNothingMore) {
  end_mid_write(End::kLocalInv);
}
TEST(MemoryWindow, DeallocBetweenWriteFirstAndLastIsNakedAndWritesNothingMore) {
  end_mid_write(End::kDealloc);
}
TEST(MemoryWindow, Type1UnbindBetweenWriteFirstAndLastIsNakedAndWritesNothingMore) {
  end_mid_write(End::kUnbindType1);
}

void end_mid_read(End how) {
  ProtoOptions o;
  o.mem_bytes = 1 << 18;
  RaceEnv m(how, o);
  constexpr uint32_t kLen = 96 * 1024;  // 96 responses at MTU 1024: more than one engine pass sends
  const uint32_t rkey = m.bind_window(kLen);
  m.env.inject(m.read(kPsn, kWinOff, rkey, kLen));
  m.env.dev->progress();
  std::vector<Emitted> f = m.env.port.take();
  const size_t answered = f.size();
  ASSERT_GT(answered, 0u);
  ASSERT_LT(answered, 96u) << "the test needs the READ still being answered";
  // Whatever the engine sends from the moment the window ends: no READ response more, one NAK instead.
  f = m.end_window();
  const std::vector<Emitted> rest = m.env.run();
  f.insert(f.end(), rest.begin(), rest.end());
  ASSERT_EQ(f.size(), 1u) << "no byte more is read: the next response is replaced by a NAK";
  EXPECT_TRUE(is_nak(f[0], kNakRemAccess, kPsn + static_cast<uint32_t>(answered)));
  EXPECT_EQ(m.env.dev->counters()[Counter::kRemAccessNakSent], 1u);
  m.expect_access_error();
}

TEST(MemoryWindow, LocalInvalidateWhileAReadIsAnsweredStopsItWithANak) { end_mid_read(End::kLocalInv); }
TEST(MemoryWindow, DeallocWhileAReadIsAnsweredStopsItWithANak) { end_mid_read(End::kDealloc); }

TEST(MemoryWindow, BindsThatCanNeverSucceedFailAtPost) {
  MwEnv m;
  Mr* plain = m.env.mr;  // no MW_BIND right
  Mr* ro = nullptr;      // MW_BIND but no local write
  ASSERT_EQ(m.env.dev->reg_mr(m.env.pd, m.env.at(0), 8192, kAccessMwBind, &ro), 0);
  Mw* mw = m.alloc(MwType::k2);
  EXPECT_EQ(m.post_bind(m.bind_of(mw, kWinOff, kWinLen, kRemoteRw, plain)), EINVAL) << "C10-73";
  EXPECT_EQ(m.post_bind(m.bind_of(mw, kWinOff, kWinLen, kAccessRemoteWrite, ro)), EINVAL) << "C10-74";
  EXPECT_EQ(m.post_bind(m.bind_of(mw, kWinOff, kWinLen, kAccessRemoteRead, ro)), 0);
  EXPECT_EQ(m.post_bind(m.bind_of(mw, m.env.mem.size() - 1024, kWinLen, kRemoteRw)), EINVAL) << "C10-75";
  EXPECT_EQ(m.post_bind(m.bind_of(mw, kWinOff, 0, kRemoteRw)), EINVAL) << "a type 2 window never unbinds";
  EXPECT_EQ(m.post_bind(m.bind_of(mw, kWinOff, kWinLen, kRemoteRw | kAccessZeroBased)), EINVAL);
  Pd* pd2 = nullptr;
  Mr* other = nullptr;
  ASSERT_EQ(m.env.dev->alloc_pd(&pd2), 0);
  ASSERT_EQ(m.env.dev->reg_mr(pd2, m.env.at(0), 8192, kAccessLocalWrite | kAccessMwBind, &other), 0);
  EXPECT_EQ(m.post_bind(m.bind_of(mw, kWinOff, kWinLen, kRemoteRw, other)), EPERM);
}

TEST(MemoryWindow, RebindingABoundType2WindowIsABindErrorAndTheRegionStaysWhileBound) {
  MwEnv m;
  Mw* mw = m.alloc(MwType::k2);
  m.bind(mw);
  EXPECT_EQ(m.env.dev->dereg_mr(m.bind_mr), EBUSY) << "windows are bound to it";
  EXPECT_EQ(m.env.dev->rereg_mr(m.bind_mr, m.env.pd, m.env.at(0), 4096, kAccessLocalWrite | kAccessMwBind),
            EBUSY);
  ASSERT_EQ(m.post_bind(m.bind_of(mw, kWinOff, kWinLen, kRemoteRw)), 0);
  m.env.run();
  const std::vector<Wc> wc = m.env.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kMwBindErr);
  EXPECT_EQ(m.env.qp->state(), QpState::kErr);
  ASSERT_EQ(m.env.dev->dealloc_mw(mw), 0);
  EXPECT_EQ(m.env.dev->dereg_mr(m.bind_mr), 0);
}

TEST(MemoryWindow, ABindTakesEffectInSendQueueOrder) {
  // A bind posted behind a READ that cannot start yet (max_rd_atomic 1, another READ outstanding) executes
  // only when the requester reaches it.
  ProtoOptions o;
  o.max_rd_atomic = 1;
  MwEnv m(o);
  ASSERT_EQ(m.env.post(WrOpcode::kRdmaRead, 0, 64, 1, 0x1000, 0x99), 0);
  SendWr fenced;
  fenced.wr_id = 2;
  fenced.opcode = WrOpcode::kRdmaRead;
  fenced.send_flags = kSendSignaled;
  const Sge s = m.env.sge(64, 64);
  fenced.sg_list = &s;
  fenced.num_sge = 1;
  fenced.remote_addr = 0x2000;
  fenced.rkey = 0x99;
  ASSERT_EQ(m.env.qp->post_send(fenced), 0);
  Mw* mw = m.alloc(MwType::k2);
  const MwBind b = m.bind_of(mw, kWinOff, kWinLen, kRemoteRw);
  ASSERT_EQ(m.post_bind(b), 0);
  m.env.run();
  EXPECT_NE(mw->rkey, b.new_rkey) << "the bind waits behind the second READ";
  m.env.inject_read_resp(op::kRcReadRespOnly, m.env.opt.sq_psn, pattern(64, 1));
  m.env.run();
  m.env.inject_read_resp(op::kRcReadRespOnly, m.env.opt.sq_psn + 1, pattern(64, 2));
  m.env.run();
  EXPECT_EQ(mw->rkey, b.new_rkey);
  const std::vector<Wc> wc = m.env.poll();
  ASSERT_EQ(wc.size(), 3u);
  EXPECT_EQ(wc[2].opcode, WcOpcode::kBindMw);
  EXPECT_EQ(wc[2].status, WcStatus::kSuccess);
}

TEST(MemoryWindow, SendWithInvalidateGoesOutWithTheKeyInItsLastPacket) {
  MwEnv m;
  m.env.unlimited_credits();
  SendWr wr;
  wr.wr_id = 3;
  wr.opcode = WrOpcode::kSendWithInv;
  wr.send_flags = kSendSignaled;
  const Sge s = m.env.sge(0, 1500);
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.imm_data_be = 0x123456;
  ASSERT_EQ(m.env.qp->post_send(wr), 0);
  const std::vector<Emitted> f = m.env.run();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].opcode(), op::kRcSendFirst);
  EXPECT_EQ(f[1].opcode(), op::kRcSendLastInv);
  EXPECT_EQ(f[1].h.ieth_rkey, 0x123456u);
}

TEST(MemoryWindow, DestroyingTheQpAType2WindowIsBoundThroughInvalidatesIt) {
  MwEnv m;
  Qp* q2 = nullptr;
  ASSERT_EQ(m.env.dev->create_qp(m.env.pd, m.env.qp->init_attr(), &q2), 0);
  ASSERT_EQ(m.env.connect(q2), 0);
  Mw* mw = m.alloc(MwType::k2);
  const uint32_t rkey = m.bind(mw, kWinOff, kWinLen, kRemoteRw, q2);
  ASSERT_EQ(m.env.dev->destroy_qp(q2), 0);
  m.env.inject(m.write(op::kRcWriteOnly, kPsn, kWinOff, rkey, 64), pattern(64, 1));
  const std::vector<Emitted> f = m.env.run();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(is_nak(f[0], kNakRemAccess, kPsn));
  EXPECT_EQ(m.env.dev->dereg_mr(m.bind_mr), 0) << "the window no longer holds the region";
}

}  // namespace
}  // namespace uroce
