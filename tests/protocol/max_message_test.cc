// Messages of the largest size the device advertises (max_msg_sz = 2^31 bytes), end to end between two
// devices on a lossless simulated link: an RDMA WRITE and a SEND of exactly 2^31 bytes complete and land
// where they should, and one byte more is refused at post time.
//
// 2 GiB twice would not fit a CI machine, so both sides see a "fake" 2 GiB: the source is one 64 MiB memfd
// mapped 32 times back to back (its bytes repeat with period 64 MiB), the destination a 48 MiB memfd mapped
// 43 times (every destination byte is written about 43 times). The periods differ, so the final content of
// the destination pins down the offset every byte was written at: destination byte d holds the source byte
// of the last message offset x < 2^31 with x = d (mod 48 MiB), i.e. src[x mod 64 MiB]. A transport that
// truncated a length or an offset to 31 bits, wrapped one, or dropped or repeated a packet leaves other
// bytes there. 112 MiB of real memory; a few seconds of real time per message.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "tests/support/sim_env.h"

namespace uroce {
namespace {

constexpr uint64_t kMsg = uint64_t{1} << 31;
constexpr size_t kSrcPeriod = size_t{64} << 20;
constexpr size_t kDstPeriod = size_t{48} << 20;

// A memfd of `period` bytes mapped repeatedly over at least `span` bytes of contiguous address space.
class AliasedRegion {
 public:
  AliasedRegion(size_t period, uint64_t span) : period_(period) {
    const size_t copies = static_cast<size_t>((span + period - 1) / period);
    size_ = copies * period;
    fd_ = memfd_create("uroce-max-msg", MFD_CLOEXEC);
    if (fd_ < 0 || ftruncate(fd_, static_cast<off_t>(period)) != 0) return;
    void* base = mmap(nullptr, size_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) return;
    base_ = static_cast<uint8_t*>(base);
    for (size_t i = 0; i < copies; ++i) {
      if (mmap(base_ + i * period, period, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd_, 0) ==
          MAP_FAILED) {
        munmap(base_, size_);
        base_ = nullptr;
        return;
      }
    }
  }
  ~AliasedRegion() {
    if (base_) munmap(base_, size_);
    if (fd_ >= 0) close(fd_);
  }
  AliasedRegion(const AliasedRegion&) = delete;
  AliasedRegion& operator=(const AliasedRegion&) = delete;

  bool ok() const { return base_ != nullptr; }
  uint8_t* data() const { return base_; }
  size_t period() const { return period_; }
  size_t size() const { return size_; }

 private:
  size_t period_, size_ = 0;
  int fd_ = -1;
  uint8_t* base_ = nullptr;
};

class MaxMessage : public ::testing::Test {
 protected:
  MaxMessage() : net(1), a(net, 1), b(net, 2), src(kSrcPeriod, kMsg), dst(kDstPeriod, kMsg + 1) {
    net.connect(*a.port, *b.port, sim::LinkConfig{});
  }

  void SetUp() override {
    ASSERT_TRUE(src.ok() && dst.ok()) << "could not map the aliased regions";
    std::mt19937_64 rng(31);
    for (size_t i = 0; i < kSrcPeriod; i += 8) {
      const uint64_t v = rng();
      std::memcpy(src.data() + i, &v, 8);
    }
    std::memset(dst.data(), 0, kDstPeriod);
    const uint32_t access = kAccessLocalWrite | kAccessRemoteWrite;
    ASSERT_EQ(a.dev->reg_mr(a.pd, src.data(), src.size(), access, &src_mr), 0);
    ASSERT_EQ(b.dev->reg_mr(b.pd, dst.data(), dst.size(), access, &dst_mr), 0);
    qa = a.create_qp(QpType::kRc, 16, 4);
    qb = b.create_qp(QpType::kRc, 16, 4);
    test::RcOptions o;
    o.mtu = Mtu::k4096;
    ASSERT_EQ(test::connect_qps(a, qa, b, qb, o), 0);
  }

  // Destination byte d after a message of kMsg bytes from src's start was written at dst's start.
  uint8_t expected(size_t d) const {
    const uint64_t x = d + (kMsg - 1 - d) / kDstPeriod * kDstPeriod;  // last message offset landing on d
    return src.data()[x % kSrcPeriod];
  }

  // Compares all kDstPeriod distinct destination bytes; returns the first wrong offset or -1.
  int64_t first_mismatch() const {
    for (size_t d = 0; d < kDstPeriod; ++d)
      if (dst.data()[d] != expected(d)) return static_cast<int64_t>(d);
    return -1;
  }

  int post(WrOpcode op, const Sge* sges, uint32_t n, uint64_t id) {
    SendWr wr;
    wr.wr_id = id;
    wr.opcode = op;
    wr.sg_list = sges;
    wr.num_sge = n;
    wr.send_flags = kSendSignaled;
    wr.remote_addr = reinterpret_cast<uint64_t>(dst.data());
    wr.rkey = dst_mr->rkey;
    return qa->post_send(wr);
  }

  sim::SimNetwork net;
  test::Endpoint a, b;
  AliasedRegion src, dst;
  Mr* src_mr = nullptr;
  Mr* dst_mr = nullptr;
  Qp* qa = nullptr;
  Qp* qb = nullptr;
};

TEST_F(MaxMessage, RdmaWriteOf2GiB) {
  const Sge s{reinterpret_cast<uint64_t>(src.data()), static_cast<uint32_t>(kMsg), src_mr->lkey};
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, &s, 1, 7), 0);
  const auto w = test::run_for_completions(net, a, 1, 20'000'000'000);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].status, WcStatus::kSuccess);
  EXPECT_EQ(w[0].opcode, WcOpcode::kRdmaWrite);
  EXPECT_EQ(first_mismatch(), -1);
}

TEST_F(MaxMessage, SendOf2GiBFromTwoSges) {
  // 2^31 - 4096 + 4096 bytes: the gather crosses an SGE boundary too.
  const Sge s[2] = {
      {reinterpret_cast<uint64_t>(src.data()), static_cast<uint32_t>(kMsg - 4096), src_mr->lkey},
      {reinterpret_cast<uint64_t>(src.data() + kMsg - 4096), 4096, src_mr->lkey}};
  const Sge r{reinterpret_cast<uint64_t>(dst.data()), static_cast<uint32_t>(kMsg), dst_mr->lkey};
  ASSERT_EQ(qb->post_recv(RecvWr{42, &r, 1}), 0);
  ASSERT_EQ(post(WrOpcode::kSend, s, 2, 8), 0);
  const auto wa = test::run_for_completions(net, a, 1, 20'000'000'000);
  const auto wb = test::run_for_completions(net, b, 1);
  ASSERT_EQ(wa.size(), 1u);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wa[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wb[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wb[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(wb[0].wr_id, 42u);
  EXPECT_EQ(wb[0].byte_len, kMsg);
  EXPECT_EQ(first_mismatch(), -1);
}

TEST_F(MaxMessage, OneByteMoreIsRefused) {
  const Sge s[2] = {{reinterpret_cast<uint64_t>(src.data()), static_cast<uint32_t>(kMsg), src_mr->lkey},
                    {reinterpret_cast<uint64_t>(src.data()), 1, src_mr->lkey}};
  EXPECT_EQ(post(WrOpcode::kRdmaWrite, s, 2, 9), EINVAL);
  EXPECT_EQ(post(WrOpcode::kSend, s, 2, 10), EINVAL);
}

}  // namespace
}  // namespace uroce
