// crc32_update, the ICRC and every CRC-32 kernel behind them against zlib's crc32, the definition the ICRC
// uses. Each kernel of crc32_kernels.h runs on every machine whose CPU can execute it, whichever one the
// dispatcher prefers there: ours (crc32_avx2.cc, 256 and 512-bit, plain, copying and gathering) and ISA-L's
// variants (its dispatcher, table, SSE, AVX, AVX-512). Every input is copied into a buffer that ends exactly
// where the input ends, so an over-read past the last byte shows under ASan.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "transport/wire/crc32_kernels.h"
#include "transport/wire/icrc.h"

namespace uroce::wire {

// Test names and failures show the kernel by name (found by argument-dependent lookup, so not in the
// anonymous namespace).
void PrintTo(const Crc32Kernel& k, std::ostream* os) { *os << k.name; }

namespace {

// zlib answers 0 (its initial value) for a null buffer, whatever crc it was given; an empty std::vector's
// data() may be null, so empty inputs go in through a valid pointer.
uint32_t zlib_crc(uint32_t crc, const uint8_t* p, size_t n) {
  static const uint8_t kNone = 0;
  return static_cast<uint32_t>(crc32(crc, p != nullptr ? p : &kNone, static_cast<uInt>(n)));
}

class Crc32Test : public ::testing::Test {
 protected:
  // `n` random bytes placed `offset` bytes into a buffer of exactly offset + n bytes.
  std::vector<uint8_t> input(size_t offset, size_t n) {
    std::vector<uint8_t> buf(offset + n);
    for (auto& b : buf) b = static_cast<uint8_t>(rng_());
    return buf;
  }
  uint32_t seed() { return static_cast<uint32_t>(rng_()); }
  size_t uniform(size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng_); }

  std::mt19937_64 rng_{20240611};
};

TEST_F(Crc32Test, EveryLengthUpTo1024) {
  for (size_t n = 0; n <= 1024; ++n) {
    const auto buf = input(0, n);
    EXPECT_EQ(crc32_update(0, buf), zlib_crc(0, buf.data(), n)) << n;
    const uint32_t s = seed();
    EXPECT_EQ(crc32_update(s, buf), zlib_crc(s, buf.data(), n)) << n;
  }
}

TEST_F(Crc32Test, RandomLengthsUpTo64KiB) {
  for (int i = 0; i < 300; ++i) {
    const size_t n = uniform(0, 64 * 1024);
    const auto buf = input(0, n);
    const uint32_t s = seed();
    EXPECT_EQ(crc32_update(s, buf), zlib_crc(s, buf.data(), n)) << n;
  }
}

TEST_F(Crc32Test, EveryAlignment) {
  for (size_t offset = 0; offset < 64; ++offset) {
    for (size_t n : {size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{31}, size_t{32}, size_t{33},
                     size_t{63}, size_t{127}, size_t{128}, size_t{129}, size_t{255}, size_t{300},
                     size_t{1000}, size_t{4096}, uniform(0, 8192)}) {
      const auto buf = input(offset, n);
      const ConstBytes data(buf.data() + offset, n);
      const uint32_t s = seed();
      EXPECT_EQ(crc32_update(s, data), zlib_crc(s, data.data(), n)) << "offset " << offset << " n " << n;
    }
  }
}

TEST_F(Crc32Test, ContinuationAtRandomSplits) {
  for (int i = 0; i < 500; ++i) {
    const size_t n = uniform(0, i < 250 ? 600 : 20000);
    const auto buf = input(0, n);
    const uint32_t expect = zlib_crc(0, buf.data(), n);
    // Up to five pieces, each copied into its own exact-size buffer.
    uint32_t crc = 0;
    size_t at = 0;
    for (int piece = 0; piece < 5 && at < n; ++piece) {
      const size_t len = piece == 4 ? n - at : uniform(0, n - at);
      const std::vector<uint8_t> part(buf.begin() + static_cast<ptrdiff_t>(at),
                                      buf.begin() + static_cast<ptrdiff_t>(at + len));
      crc = crc32_update(crc, part);
      at += len;
    }
    if (at < n) crc = crc32_update(crc, ConstBytes(buf.data() + at, n - at));
    EXPECT_EQ(crc, expect) << n;
  }
}

// Every kernel of crc32_kernels() on its own, on every CPU that can run it, whichever one crc32_update
// uses there; one this CPU cannot run is skipped, by name.
class Crc32KernelTest : public Crc32Test, public ::testing::WithParamInterface<Crc32Kernel> {
 protected:
  void SetUp() override {
    if (!GetParam().runs())
      GTEST_SKIP() << "this CPU cannot run " << GetParam().name << ": needs " << GetParam().needs;
  }
};

TEST_P(Crc32KernelTest, MatchesZlibAtRandomLengthsAndAlignments) {
  const Crc32Kernel& k = GetParam();
  for (size_t n = 0; n <= 300; ++n) {
    const size_t offset = n % 64;
    const auto buf = input(offset, n);
    const uint32_t s = n % 3 == 0 ? 0 : seed();
    ASSERT_EQ(k.update(s, buf.data() + offset, n), zlib_crc(s, buf.data() + offset, n))
        << k.name << " n " << n;
  }
  for (int i = 0; i < 1500; ++i) {
    const size_t n = uniform(0, 9000), offset = uniform(0, 63);
    const auto buf = input(offset, n);
    const uint32_t s = i % 4 == 0 ? 0 : seed();
    ASSERT_EQ(k.update(s, buf.data() + offset, n), zlib_crc(s, buf.data() + offset, n))
        << k.name << " n " << n << " offset " << offset;
  }
  const std::vector<uint8_t> zeros(9000, 0), ones(9000, 0xFF);
  EXPECT_EQ(k.update(0, zeros.data(), zeros.size()), zlib_crc(0, zeros.data(), zeros.size())) << k.name;
  EXPECT_EQ(k.update(0, ones.data(), ones.size()), zlib_crc(0, ones.data(), ones.size())) << k.name;
}

// crc(crc(a), b) ... == crc(a || b ...): up to five pieces of random lengths, each in its own exact buffer.
TEST_P(Crc32KernelTest, ContinuesAcrossRandomSplits) {
  const Crc32Kernel& k = GetParam();
  for (int i = 0; i < 400; ++i) {
    const size_t n = uniform(0, i < 200 ? 600 : 9000);
    const auto buf = input(0, n);
    uint32_t crc = 0;
    for (size_t at = 0, piece = 0; at < n; ++piece) {
      const size_t len = piece == 4 ? n - at : uniform(0, n - at);
      const std::vector<uint8_t> part(buf.begin() + static_cast<ptrdiff_t>(at),
                                      buf.begin() + static_cast<ptrdiff_t>(at + len));
      crc = k.update(crc, part.data(), len);
      at += len;
    }
    ASSERT_EQ(crc, zlib_crc(0, buf.data(), n)) << k.name << " n " << n;
  }
}

// The kernels that have a fused copy + CRC variant.
class Crc32CopyKernelTest : public Crc32KernelTest {};

std::vector<Crc32Kernel> copy_kernels() {
  std::vector<Crc32Kernel> v;
  for (const Crc32Kernel& k : crc32_kernels())
    if (k.copy != nullptr) v.push_back(k);
  return v;
}

// The fused copy + CRC: the same CRC, the bytes copied exactly, nothing written around the destination, and
// continuation across pieces as the transmit path chains it over SGEs.
TEST_P(Crc32CopyKernelTest, CopyVariantCopiesExactlyAndMatchesZlib) {
  const Crc32Kernel& k = GetParam();
  auto check = [&](size_t n, size_t soff, size_t doff) {
    const auto buf = input(soff, n);
    std::vector<uint8_t> out(doff + n + 64, 0xA5);
    const uint32_t s = n % 3 == 0 ? 0 : seed();
    ASSERT_EQ(k.copy(s, out.data() + doff, buf.data() + soff, n), zlib_crc(s, buf.data() + soff, n)) << n;
    if (n != 0) {  // an empty buf's data() may be null, which memcmp must not get
      ASSERT_EQ(0, std::memcmp(out.data() + doff, buf.data() + soff, n)) << n;
    }
    for (size_t i = 0; i < doff; ++i) ASSERT_EQ(out[i], 0xA5) << "before, n " << n;
    for (size_t i = doff + n; i < out.size(); ++i) ASSERT_EQ(out[i], 0xA5) << "after, n " << n;
  };
  for (size_t n = 0; n <= 300; ++n) check(n, n % 64, (n * 7) % 64);
  for (int i = 0; i < 1000; ++i) check(uniform(0, 9000), uniform(0, 63), uniform(0, 63));
  for (int i = 0; i < 200; ++i) {
    const size_t a = uniform(0, 3000), b = uniform(0, 3000), c = uniform(0, 3000);
    const auto buf = input(0, a + b + c);
    std::vector<uint8_t> out(buf.size());
    uint32_t crc = k.copy(0, out.data(), buf.data(), a);
    crc = k.copy(crc, out.data() + a, buf.data() + a, b);
    crc = k.copy(crc, out.data() + a + b, buf.data() + a + b, c);
    ASSERT_EQ(crc, zlib_crc(0, buf.data(), buf.size())) << a << "+" << b << "+" << c;
    ASSERT_EQ(out, buf);
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, Crc32KernelTest,
                         ::testing::ValuesIn(crc32_kernels().begin(), crc32_kernels().end()),
                         [](const auto& info) { return std::string(info.param.name); });
INSTANTIATE_TEST_SUITE_P(Kernels, Crc32CopyKernelTest, ::testing::ValuesIn(copy_kernels()),
                         [](const auto& info) { return std::string(info.param.name); });

// The dispatcher's choice is a kernel this CPU runs: ours on 256-bit registers wherever that runs and the
// 512-bit one does not, one of ours wherever they run, else ISA-L's dispatcher.
TEST(Crc32Dispatch, ChoosesARunnableKernelAndOursWhereverItRuns) {
  const Crc32Kernel& k = crc32_chosen();
  EXPECT_TRUE(k.runs()) << k.name;
  const Crc32Kernel& ymm = crc32_kernels()[0];
  const Crc32Kernel& zmm = crc32_kernels()[1];
  ASSERT_STREQ(ymm.name, "vpclmul_ymm");
  ASSERT_STREQ(zmm.name, "vpclmul_zmm");
  if (zmm.runs()) {
    EXPECT_TRUE(&k == &ymm || &k == &zmm) << k.name;
  } else if (ymm.runs()) {
    EXPECT_EQ(&k, &ymm) << k.name;
  } else {
    EXPECT_STREQ(k.name, "isal");
  }
  EXPECT_EQ(k.gather != nullptr, ymm.runs()) << k.name;
}

// The measured choice (made between ours and ISA-L on AVX-512 CPUs) picks the faster of two kernels whose
// speeds differ several-fold: ISA-L's table code against any PCLMULQDQ kernel this CPU runs.
TEST(Crc32Dispatch, MeasuredChoicePicksTheFasterKernel) {
  const Crc32Kernel* base = nullptr;
  const Crc32Kernel* fast = nullptr;
  for (const Crc32Kernel& k : crc32_kernels()) {
    if (std::string(k.name) == "isal_base") base = &k;
    if ((std::string(k.name) == "vpclmul_ymm" || std::string(k.name) == "isal_by8") && k.runs() &&
        fast == nullptr)
      fast = &k;
  }
  ASSERT_NE(base, nullptr);
  if (fast == nullptr) GTEST_SKIP() << "this CPU runs no PCLMULQDQ kernel to race the table code against";
  EXPECT_EQ(&crc32_faster(*base, *fast), fast) << fast->name;
  EXPECT_EQ(&crc32_faster(*fast, *base), fast) << fast->name;
}

// The copying variant: the same CRC, the bytes copied exactly, nothing written around the destination.
TEST_F(Crc32Test, CopyUpdateChecksumsAndCopies) {
  for (size_t n = 0; n <= 4200; n += n < 300 ? 1 : 37) {
    const size_t soff = n % 64, doff = (n * 7) % 64;
    const auto buf = input(soff, n);
    std::vector<uint8_t> out(n + 128, 0xA5);
    const uint32_t s = n % 3 == 0 ? 0 : seed();
    const uint32_t crc = crc32_copy_update(s, out.data() + doff, ConstBytes(buf.data() + soff, n));
    EXPECT_EQ(crc, zlib_crc(s, buf.data() + soff, n)) << n;
    if (n) {
      EXPECT_EQ(0, std::memcmp(out.data() + doff, buf.data() + soff, n)) << n;
    }
    for (size_t i = 0; i < doff; ++i) ASSERT_EQ(out[i], 0xA5) << "before, n " << n;
    for (size_t i = doff + n; i < out.size(); ++i) ASSERT_EQ(out[i], 0xA5) << "after, n " << n;
  }
}

TEST_F(Crc32Test, KnownValues) {
  const char* check = "123456789";  // the CRC catalogue's check input for CRC-32/ISO-HDLC
  EXPECT_EQ(crc32_update(0, ConstBytes(reinterpret_cast<const uint8_t*>(check), 9)), 0xCBF43926u);
  const std::vector<uint8_t> zeros(4096, 0), ones(4096, 0xFF);
  EXPECT_EQ(crc32_update(0, zeros), zlib_crc(0, zeros.data(), zeros.size()));
  EXPECT_EQ(crc32_update(0, ones), zlib_crc(0, ones.data(), ones.size()));
}

}  // namespace
}  // namespace uroce::wire

namespace uroce::wire {
namespace {

// The ICRC against its definition (IBA Annex A17.3.3), written out here byte by byte independently of
// icrc.cc: zlib's CRC-32 over 8 bytes of ones, the IP header with TOS, TTL and checksum (IPv4) or traffic
// class, flow label and hop limit (IPv6) set to ones, the UDP header with its checksum set to ones, the
// BTH with byte 4 set to ones, then everything after the BTH. Headers and payload are random, the payload
// split into random pieces (empty, shorter than 16 bytes, long), each in a buffer of exactly its size.
// Every kernel this CPU runs computes it (icrc_roce_v2_with), in one pass where it has a gather; the
// dispatcher's (icrc_roce_v2, icrc_begin + crc32_update) too.
class IcrcTest : public ::testing::TestWithParam<std::tuple<Crc32Kernel, bool>> {
 protected:
  void SetUp() override {
    const Crc32Kernel& k = std::get<0>(GetParam());
    if (!k.runs()) GTEST_SKIP() << "this CPU cannot run " << k.name << ": needs " << k.needs;
  }
  std::mt19937_64 rng_{7};
  size_t uniform(size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng_); }
};

TEST_P(IcrcTest, MatchesTheDefinitionOverRandomPieces) {
  const Crc32Kernel& k = std::get<0>(GetParam());
  const bool v6 = std::get<1>(GetParam());
  const size_t ip_len = v6 ? 40 : 20, hdr_len = ip_len + 8 + 12;
  for (int iter = 0; iter < 400; ++iter) {
    std::vector<uint8_t> hdr(hdr_len);  // IP, UDP, BTH and nothing after: reads past them show under ASan
    for (auto& b : hdr) b = static_cast<uint8_t>(rng_());
    hdr[0] = static_cast<uint8_t>((v6 ? 0x60 : 0x45) | (v6 ? hdr[0] & 0x0F : 0));
    const size_t n = uniform(0, iter < 200 ? 300 : 9000);
    std::vector<uint8_t> rest(n);
    for (auto& b : rest) b = static_cast<uint8_t>(rng_());

    std::vector<uint8_t> def(8, 0xFF);
    def.insert(def.end(), hdr.begin(), hdr.end());
    uint8_t* ip = def.data() + 8;
    if (v6) {
      ip[0] |= 0x0F;
      ip[1] = ip[2] = ip[3] = 0xFF;
      ip[7] = 0xFF;
    } else {
      ip[1] = ip[8] = ip[10] = ip[11] = 0xFF;
    }
    ip[ip_len + 6] = ip[ip_len + 7] = 0xFF;
    ip[ip_len + 8 + 4] = 0xFF;
    def.insert(def.end(), rest.begin(), rest.end());
    const auto expect = static_cast<uint32_t>(crc32(0, def.data(), static_cast<uInt>(def.size())));

    std::vector<std::vector<uint8_t>> bufs;
    for (size_t at = 0; at < n || bufs.empty();) {
      const size_t len = uniform(0, 4) == 0 ? uniform(0, 15) : uniform(0, n - at);
      bufs.emplace_back(rest.begin() + static_cast<ptrdiff_t>(at),
                        rest.begin() + static_cast<ptrdiff_t>(std::min(n, at + len)));
      at = std::min(n, at + len);
    }
    std::vector<ConstBytes> pieces(bufs.begin(), bufs.end());
    EXPECT_EQ(icrc_roce_v2_with(k, hdr.data(), pieces), expect) << "n " << n << " pieces " << pieces.size();
    EXPECT_EQ(icrc_roce_v2(hdr.data(), pieces), expect) << "n " << n << " pieces " << pieces.size();
    uint32_t crc = icrc_begin(hdr.data());
    for (ConstBytes p : pieces) crc = crc32_update(crc, p);
    EXPECT_EQ(crc, expect) << "n " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, IcrcTest,
                         ::testing::Combine(::testing::ValuesIn(crc32_kernels().begin(),
                                                                crc32_kernels().end()),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) +
                                  (std::get<1>(info.param) ? "_v6" : "_v4");
                         });

}  // namespace
}  // namespace uroce::wire
