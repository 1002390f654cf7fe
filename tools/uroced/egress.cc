#include "tools/uroced/egress.h"

#include <algorithm>

#include "transport/wire/headers.h"

namespace uroce::uroced {

namespace {
constexpr uint64_t kNsPerSec = 1'000'000'000;
}  // namespace

void TokenBucket::configure(uint64_t rate_bps, uint64_t burst_bytes, uint64_t now_ns) {
  rate_bps_ = rate_bps;
  burst_ = burst_bytes;
  tokens_ = static_cast<double>(burst_bytes);
  last_ns_ = now_ns;
}

void TokenBucket::refill(uint64_t now_ns) {
  if (unlimited() || now_ns <= last_ns_) return;
  const double earned =
      static_cast<double>(now_ns - last_ns_) * static_cast<double>(rate_bps_) / (8.0 * kNsPerSec);
  tokens_ = std::min(static_cast<double>(burst_), tokens_ + earned);
  last_ns_ = now_ns;
}

uint64_t TokenBucket::ready_at(uint32_t bytes, uint64_t now_ns) const {
  if (allows(bytes)) return now_ns;
  const double wait_ns = (bytes - tokens_) * 8.0 * kNsPerSec / static_cast<double>(rate_bps_);
  return std::max(now_ns, last_ns_) + static_cast<uint64_t>(wait_ns) + 1;
}

uint64_t Xorshift64::next() {
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  return state_ * 0x2545F4914F6CDD1DULL;
}

}  // namespace uroce::uroced
