// crc32_update (and the VPCLMULQDQ kernel behind it, where this CPU has one) against zlib's crc32, the
// definition the ICRC uses. Every input is copied into a buffer that ends exactly where the input ends, so
// an over-read past the last byte shows under ASan.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <random>
#include <vector>

#include "transport/wire/crc32_avx2.h"
#include "transport/wire/icrc.h"

namespace uroce::wire {
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

// The kernel on its own, so that it stays covered whatever length crc32_update hands it from.
TEST_F(Crc32Test, Avx2KernelDirect) {
  if (!crc32_avx2_preferred()) GTEST_SKIP() << "no AVX2 + VPCLMULQDQ (or AVX-512 present): kernel unused";
  for (size_t n = kCrc32Avx2MinLen; n <= 2048; ++n) {
    const size_t offset = n % 64;
    const auto buf = input(offset, n);
    const uint32_t s = n % 3 == 0 ? 0 : seed();
    EXPECT_EQ(crc32_avx2(s, buf.data() + offset, n), zlib_crc(s, buf.data() + offset, n)) << n;
  }
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
