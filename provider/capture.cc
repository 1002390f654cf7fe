#include "provider/capture.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace uroce::provider {

namespace {

// pcap file header, format 2.4 with nanosecond timestamps (magic a1b23c4d), written in host byte order as
// libpcap does; readers detect the order from the magic.
struct PcapFileHeader {
  uint32_t magic = 0xa1b23c4d;
  uint16_t version_major = 2;
  uint16_t version_minor = 4;
  int32_t thiszone = 0;
  uint32_t sigfigs = 0;
  uint32_t snaplen = 0;
  uint32_t linktype = 1;  // LINKTYPE_ETHERNET
};
static_assert(sizeof(PcapFileHeader) == 24);

struct PcapRecordHeader {
  uint32_t ts_sec;
  uint32_t ts_nsec;
  uint32_t incl_len;
  uint32_t orig_len;
};
static_assert(sizeof(PcapRecordHeader) == 16);

constexpr size_t kWriteBuffer = 1 << 20;

}  // namespace

uint64_t capture_now_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

PcapWriter::~PcapWriter() { (void)close(); }

std::string PcapWriter::open(const std::string& path, uint32_t snaplen) {
  if (f_) return "a capture file is already open";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot create " + path + ": " + std::strerror(errno);
  return adopt(fd, path, snaplen);
}

std::string PcapWriter::adopt(int fd, const std::string& path, uint32_t snaplen) {
  if (f_) {
    ::close(fd);
    return "a capture file is already open";
  }
  f_ = fdopen(fd, "w");
  if (!f_) {
    ::close(fd);
    return "cannot open " + path + ": " + std::strerror(errno);
  }
  buf_ = std::make_unique<char[]>(kWriteBuffer);
  setvbuf(f_, buf_.get(), _IOFBF, kWriteBuffer);
  path_ = path;
  error_.clear();
  records_ = 0;
  PcapFileHeader h;
  h.snaplen = snaplen;
  if (std::fwrite(&h, sizeof(h), 1, f_) != 1) error_ = "cannot write " + path + ": " + std::strerror(errno);
  return error_;
}

bool PcapWriter::write(uint64_t ts_ns, const uint8_t* data, uint32_t cap_len, uint32_t orig_len) {
  if (!f_ || !error_.empty()) return false;
  const PcapRecordHeader r{static_cast<uint32_t>(ts_ns / 1'000'000'000ull),
                           static_cast<uint32_t>(ts_ns % 1'000'000'000ull), cap_len, orig_len};
  if (std::fwrite(&r, sizeof(r), 1, f_) != 1 || std::fwrite(data, 1, cap_len, f_) != cap_len) {
    error_ = "cannot write " + path_ + ": " + std::strerror(errno);
    return false;
  }
  ++records_;
  return true;
}

std::string PcapWriter::close() {
  if (!f_) return error_;
  if (std::fclose(f_) != 0 && error_.empty()) error_ = "cannot write " + path_ + ": " + std::strerror(errno);
  f_ = nullptr;
  buf_.reset();
  return error_;
}

CaptureRing::CaptureRing(uint32_t slots, uint32_t slot_bytes, uint64_t limit)
    : slot_bytes_(slot_bytes), remaining_(limit ? limit : UINT64_MAX) {
  uint64_t n = 1;
  while (n < slots) n <<= 1;
  mask_ = n - 1;
  stride_ = (static_cast<uint32_t>(sizeof(SlotHeader)) + slot_bytes + 63) & ~63u;
  mem_ = std::make_unique_for_overwrite<uint8_t[]>(n * stride_);  // pages are touched as the ring fills
}

uint32_t CaptureRing::stage(PktBuf* const* bufs, uint32_t n, uint64_t ts_ns) {
  const uint64_t head = head_.load(std::memory_order_relaxed);
  const uint64_t used = head - tail_.load(std::memory_order_acquire);
  const uint64_t room = std::min(mask_ + 1 - used, remaining_);
  const uint32_t m = static_cast<uint32_t>(std::min<uint64_t>(n, room));
  for (uint32_t i = 0; i < m; ++i) {
    uint8_t* s = slot(head + i);
    const SlotHeader h{ts_ns, std::min<uint32_t>(bufs[i]->len, slot_bytes_), bufs[i]->len};
    std::memcpy(s, &h, sizeof(h));
    std::memcpy(s + sizeof(h), bufs[i]->data, h.cap_len);
  }
  return m;
}

void CaptureRing::publish(uint32_t n, uint32_t seen) {
  const uint64_t wanted = std::min<uint64_t>(seen, remaining_);
  if (wanted > n) dropped_.fetch_add(wanted - n, std::memory_order_relaxed);
  if (n) head_.store(head_.load(std::memory_order_relaxed) + n, std::memory_order_release);
  // After the head: a consumer that sees the limit reached and then drains gets every frame.
  if (remaining_ != UINT64_MAX) {
    remaining_ -= wanted;
    if (remaining_ == 0) limit_reached_.store(true, std::memory_order_release);
  }
}

uint16_t CaptureTap::tx_burst(PktBuf** bufs, uint16_t n) {
  if (__builtin_expect(ring_ == nullptr, 1)) return inner_->tx_burst(bufs, n);
  // Copied before the hand-over: once the port owns a buffer it may be sent and reused at once. Only the
  // frames the port accepted are published; the caller retries the rest, which are staged again then.
  const uint32_t staged = ring_->stage(bufs, n, capture_now_ns());
  const uint16_t k = inner_->tx_burst(bufs, n);
  ring_->publish(std::min<uint32_t>(staged, k), k);
  return k;
}

uint16_t CaptureTap::rx_burst(PktBuf** bufs, uint16_t n) {
  const uint16_t k = inner_->rx_burst(bufs, n);
  if (__builtin_expect(ring_ == nullptr || k == 0, 1)) return k;
  ring_->publish(ring_->stage(bufs, k, capture_now_ns()), k);
  return k;
}

}  // namespace uroce::provider
