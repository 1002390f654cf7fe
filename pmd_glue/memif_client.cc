#include "pmd_glue/memif_client.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

#include "pmd_glue/link_drain.h"
#include "transport/wire/packet.h"

namespace uroce::glue {

namespace {

using Clock = std::chrono::steady_clock;

uint16_t load_acquire(uint16_t& v) { return std::atomic_ref<uint16_t>(v).load(std::memory_order_acquire); }
void store_release(uint16_t& v, uint16_t x) {
  std::atomic_ref<uint16_t>(v).store(x, std::memory_order_release);
}

void copy_name(uint8_t* dst, size_t size, const std::string& s) {
  std::memset(dst, 0, size);
  std::memcpy(dst, s.data(), std::min(s.size(), size - 1));
}

}  // namespace

std::unique_ptr<MemifClient> MemifClient::create(const MemifClientConfig& cfg, std::string* err) {
  std::unique_ptr<MemifClient> c(new MemifClient(cfg));
  if (!c->setup(err)) return nullptr;
  return c;
}

bool MemifClient::setup(std::string* err) {
  owner_pid_ = getpid();
  if (cfg_.socket.empty() || cfg_.socket.size() >= sizeof(sockaddr_un::sun_path)) {
    *err =
        "memif client: socket path empty or longer than " + std::to_string(sizeof(sockaddr_un::sun_path) - 1);
    return false;
  }
  if (cfg_.log2_ring < 1 || cfg_.log2_ring > 14) {
    *err = "memif client: log2 ring size must be 1..14, got " + std::to_string(cfg_.log2_ring);
    return false;
  }
  const uint32_t ring = uint32_t{1} << cfg_.log2_ring;
  if (cfg_.buffer_size < 64 || cfg_.buffers < 2 * ring + kBurst) {
    *err = "memif client: buffers of at least 64 bytes, and at least two rings' worth and a burst of them";
    return false;
  }
  log2_ = cfg_.log2_ring;
  buffers_off_ = (2 * memif::ring_bytes(cfg_.log2_ring) + 4095) & ~size_t{4095};
  region_size_ = buffers_off_ + size_t{cfg_.buffers} * cfg_.buffer_size;
  if (region_size_ > UINT32_MAX) {
    *err = "memif client: a region over 4 GiB cannot be addressed by a descriptor";
    return false;
  }
  mem_fd_ = memfd_create("uroce-memif", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (mem_fd_ < 0 || ftruncate(mem_fd_, static_cast<off_t>(region_size_)) != 0 ||
      fcntl(mem_fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL) != 0) {
    *err = std::string("memif client: shared memory: ") + std::strerror(errno);
    return false;
  }
  void* p = mmap(nullptr, region_size_, PROT_READ | PROT_WRITE, MAP_SHARED, mem_fd_, 0);
  if (p == MAP_FAILED) {
    *err = std::string("memif client: mmap: ") + std::strerror(errno);
    return false;
  }
  base_ = static_cast<uint8_t*>(p);
  c2s_event_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  s2c_event_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (c2s_event_ < 0 || s2c_event_ < 0) {
    *err = std::string("memif client: eventfd: ") + std::strerror(errno);
    return false;
  }
  pkt_.resize(cfg_.buffers);
  free_.init(cfg_.buffers);
  for (uint32_t i = 0; i < cfg_.buffers; ++i) {
    pkt_[i].data = buffer(i);
    pkt_[i].cap = cfg_.buffer_size;
    free_.push(i);
  }
  c2s_buf_.assign(ring, UINT32_MAX);
  s2c_buf_.assign(ring, UINT32_MAX);
  if (cfg_.bell) {
    std::string why;  // a server without a bell (another memif program): frames are found after naps
    bell_ = MemifBell::open(cfg_.socket, cfg_.id, /*server=*/false, &why);
  }
  return true;
}

MemifClient::~MemifClient() {
  // A forked child shares the parent's control socket: it must neither drain nor disconnect the link.
  if (getpid() == owner_pid_) {
    linger();
    if (sock_ >= 0) link_down("client closed", true);
  } else if (sock_ >= 0) {
    close(sock_);
  }
  if (base_) munmap(base_, region_size_);
  for (int fd : {mem_fd_, c2s_event_, s2c_event_})
    if (fd >= 0) close(fd);
}

bool MemifClient::service() {
  const auto now = Clock::now();
  if (state_ == State::kDown && now >= next_try_) try_connect();
  if (sock_ >= 0) read_messages();
  if (state_ != State::kDown && state_ != State::kUp && now - handshake_since_ > kHandshakeTimeout)
    link_down("the server did not complete the handshake", true);
  return link_up();
}

bool MemifClient::wait_link_up(std::chrono::milliseconds timeout) {
  const auto until = Clock::now() + timeout;
  while (!service()) {
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void MemifClient::try_connect() {
  const auto now = Clock::now();
  next_try_ = now + kRetry;
  // The socket of the server we were linked to, still there: most likely that server is closing (its link
  // went down first, the socket goes last), and DPDK 22.11's PMD crashes when a client connects in that
  // window (its interrupt thread serves the new connection while the device is being freed). A server
  // that comes back makes a new socket file; the same one is tried again only after kSameServerRetry.
  struct stat st {};
  if (stat(cfg_.socket.c_str(), &st) != 0) return;
  const bool same = linked_ && st.st_dev == linked_dev_ && st.st_ino == linked_ino_;
  if (same && now - last_down_ < kSameServerRetry) return;
  sock_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (sock_ < 0) return;
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, cfg_.socket.c_str(), cfg_.socket.size() + 1);
  if (connect(sock_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    close(sock_);
    sock_ = -1;
    return;
  }
  state_ = State::kHello;
  handshake_since_ = now;
  linked_ = true;
  linked_dev_ = st.st_dev;
  linked_ino_ = st.st_ino;
}

bool MemifClient::read_messages() {
  // At most a few messages a call: a server that streams them must not keep the datapath here.
  for (int budget = kMessagesPerService; sock_ >= 0 && budget > 0; --budget) {
    memif::Msg m{};
    iovec iov{&m, sizeof m};
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * 4)] = {};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl;
    mh.msg_controllen = sizeof ctl;
    const ssize_t r = recvmsg(sock_, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (r <= 0) {  // no control data was written: nothing to close
      link_down(r == 0 ? "the server closed the control socket"
                       : std::string("control socket: ") + std::strerror(errno),
                false);
      return false;
    }
    // The server sends no file descriptors; any that came are closed, not leaked.
    for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < n; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        close(fd);
      }
    }
    if (r != sizeof m || (mh.msg_flags & MSG_TRUNC)) {
      link_down("a control message of " + std::to_string(r) + " bytes (memif's are 128)", true);
      return false;
    }
    if (!on_message(m)) return false;
  }
  return sock_ >= 0;
}

bool MemifClient::on_message(const memif::Msg& m) {
  if (m.type == memif::kMsgDisconnect) {
    char reason[sizeof m.disconnect.reason + 1] = {};
    std::memcpy(reason, m.disconnect.reason, sizeof m.disconnect.reason);
    link_down(std::string("the server disconnected: ") + reason, false);
    return false;
  }
  switch (state_) {
    case State::kHello: {
      if (m.type != memif::kMsgHello) break;
      const memif::Hello& h = m.hello;
      if (h.min_version > memif::kVersion || h.max_version < memif::kVersion) {
        link_down("the server speaks no memif 2.0", true);
        return false;
      }
      if (h.max_log2_ring_size < 1) {
        link_down("the server takes no ring", true);
        return false;
      }
      log2_ = std::min(cfg_.log2_ring, unsigned{h.max_log2_ring_size});
      mask_ = static_cast<uint16_t>((1u << log2_) - 1);
      for (memif::Ring* r : {c2s(), s2c()}) {
        std::memset(r, 0, memif::ring_bytes(log2_));
        r->cookie = memif::kCookie;
      }
      s2c()->flags = memif::kRingMaskInt;  // this client polls its rx ring
      memif::Msg init{};
      init.type = memif::kMsgInit;
      init.init.version = memif::kVersion;
      init.init.id = cfg_.id;
      init.init.mode = memif::kModeEthernet;
      copy_name(init.init.name, sizeof init.init.name, "uroce");
      state_ = State::kHandshake;
      handshake_step_ = 0;
      return send(init);
    }
    case State::kHandshake:
      if (m.type != memif::kMsgAck) break;
      return send_next_handshake();
    case State::kConnected:
      if (m.type == memif::kMsgAck) return true;
      if (m.type != memif::kMsgConnected) break;
      // The server zeroed both rings' indices before it answered.
      c2s_head_ = c2s_done_ = s2c_head_ = s2c_next_ = 0;
      in_chain_ = false;
      state_ = State::kUp;
      ++stats_.connects;
      refill_rx();
      return true;
    case State::kUp:
      if (m.type == memif::kMsgAck) return true;
      break;
    case State::kDown:
      return false;
  }
  link_down("an unexpected control message (type " + std::to_string(m.type) + ")", true);
  return false;
}

bool MemifClient::send_next_handshake() {
  memif::Msg m{};
  int fd = -1;
  const int step = handshake_step_++;
  switch (step) {
    case 0:
      m.type = memif::kMsgAddRegion;
      m.add_region.index = 0;
      m.add_region.size = region_size_;
      fd = mem_fd_;
      break;
    case 1:
    case 2: {
      const bool c2s_ring = step == 1;
      m.type = memif::kMsgAddRing;
      m.add_ring.flags = c2s_ring ? memif::kAddRingC2S : 0;
      m.add_ring.index = 0;
      m.add_ring.region = 0;
      m.add_ring.offset = c2s_ring ? 0 : static_cast<uint32_t>(memif::ring_bytes(log2_));
      m.add_ring.log2_ring_size = static_cast<uint8_t>(log2_);
      fd = c2s_ring ? c2s_event_ : s2c_event_;
      break;
    }
    default:
      m.type = memif::kMsgConnect;
      copy_name(m.connect.if_name, sizeof m.connect.if_name, "uroce-memif-client");
      state_ = State::kConnected;
      break;
  }
  return send(m, fd);
}

bool MemifClient::send(const memif::Msg& m, int fd) {
  iovec iov{const_cast<memif::Msg*>(&m), sizeof m};
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  if (fd >= 0) {
    mh.msg_control = ctl;
    mh.msg_controllen = sizeof ctl;
    cmsghdr* c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  if (sendmsg(sock_, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(sizeof m)) return true;
  if (m.type != memif::kMsgDisconnect)
    link_down(std::string("control socket: ") + std::strerror(errno), false);
  return false;
}

void MemifClient::link_down(const std::string& why, bool tell_server) {
  if (sock_ >= 0) {
    if (tell_server) {
      memif::Msg m{};
      m.type = memif::kMsgDisconnect;
      copy_name(m.disconnect.reason, sizeof m.disconnect.reason, why);
      send(m);
    }
    close(sock_);
    sock_ = -1;
  }
  if (state_ == State::kUp) ++stats_.disconnects;
  // Every buffer in a ring comes home; those in the caller's hands stay there.
  for (; c2s_done_ != c2s_head_; ++c2s_done_) free_.push(c2s_buf_[c2s_done_ & mask_]);
  for (; s2c_next_ != s2c_head_; ++s2c_next_) free_.push(s2c_buf_[s2c_next_ & mask_]);
  c2s_head_ = c2s_done_ = s2c_head_ = s2c_next_ = 0;
  in_chain_ = false;
  pending_answer_ = 0;
  state_ = State::kDown;
  last_down_ = Clock::now();
  next_try_ = last_down_ + kRetry;
  last_disconnect_ = why;
}

void MemifClient::reclaim_tx() {
  const uint16_t tail = load_acquire(c2s()->tail);
  if (static_cast<uint16_t>(tail - c2s_done_) > static_cast<uint16_t>(c2s_head_ - c2s_done_)) {
    link_down("the server's C2S tail ran past the frames it was given", true);
    return;
  }
  for (; c2s_done_ != tail; ++c2s_done_) free_.push(c2s_buf_[c2s_done_ & mask_]);
}

void MemifClient::refill_rx() {
  if (state_ != State::kUp) return;
  const uint16_t before = s2c_head_;
  memif::Ring* r = s2c();
  while (static_cast<uint16_t>(s2c_head_ - s2c_next_) <= mask_ && !free_.empty()) {
    const uint32_t i = free_.pop();
    const uint16_t slot = s2c_head_ & mask_;
    r->desc[slot] = memif::Desc{0, 0, cfg_.buffer_size, static_cast<uint32_t>(buffer(i) - base_), 0};
    s2c_buf_[slot] = i;
    ++s2c_head_;
  }
  if (s2c_head_ != before) store_release(r->head, s2c_head_);
}

uint16_t MemifClient::alloc_burst(PktBuf** bufs, uint16_t n) {
  if (free_.size() < n && state_ == State::kUp) reclaim_tx();
  const uint16_t k = static_cast<uint16_t>(std::min<size_t>(n, free_.size()));
  for (uint16_t j = 0; j < k; ++j) {
    PktBuf& b = pkt_[free_.pop()];
    b.len = 0;
    b.telemetry = nullptr;
    bufs[j] = &b;
  }
  return k;
}

uint16_t MemifClient::tx_burst(PktBuf** bufs, uint16_t n) {
  if (state_ != State::kUp) return 0;
  reclaim_tx();
  if (state_ != State::kUp) return 0;
  const uint16_t room = static_cast<uint16_t>(mask_ + 1 - static_cast<uint16_t>(c2s_head_ - c2s_done_));
  const uint16_t k = std::min(n, room);
  if (k < n) ++stats_.tx_ring_full;
  memif::Ring* r = c2s();
  for (uint16_t j = 0; j < k; ++j) {
    const uint32_t i = index_of(bufs[j]);
    const uint16_t slot = (c2s_head_ + j) & mask_;
    // The frame may start anywhere in its buffer, but must end inside it: the server copies `length`
    // bytes from `offset` without checking them against anything.
    const PktBuf& b = *bufs[j];
    if (b.data < buffer(i) || b.len == 0 || b.data + b.len > buffer(i) + cfg_.buffer_size) std::abort();
    r->desc[slot] = memif::Desc{0, 0, b.len, static_cast<uint32_t>(b.data - base_), 0};
    c2s_buf_[slot] = i;
    stats_.tx_bytes += b.len;
  }
  if (k == 0) return 0;
  c2s_head_ = static_cast<uint16_t>(c2s_head_ + k);
  store_release(r->head, c2s_head_);
  stats_.tx_frames += k;
  sent_since_linger_ = true;
  if (bell_)  // a server asleep on its bell wakes for these frames
    bell_->ring_if_armed([&] {
      for (uint16_t j = 0; j < k; ++j)
        if (wire::frame_is_one_sided_request(bufs[j]->data, bufs[j]->len)) return true;
      return false;
    });
  // A server that sleeps on the ring's eventfd asked for it by clearing kRingMaskInt.
  if (!(std::atomic_ref<uint16_t>(r->flags).load(std::memory_order_relaxed) & memif::kRingMaskInt)) {
    const uint64_t one = 1;
    if (write(c2s_event_, &one, sizeof one) == sizeof one) ++stats_.interrupts;
  }
  return k;
}

uint16_t MemifClient::rx_burst(PktBuf** bufs, uint16_t n) {
  // The control channel while down, and while up once a millisecond (a clock read every kServiceEvery
  // calls): a server's DISCONNECT or EOF is noticed within about that.
  if (state_ != State::kUp) {
    service();
  } else if (++rx_calls_ % kServiceEvery == 0) {
    const auto now = Clock::now();
    if (now - last_service_ >= kServiceInterval) {
      last_service_ = now;
      service();
    }
  }
  if (state_ != State::kUp) return 0;
  memif::Ring* r = s2c();
  const uint16_t tail = load_acquire(r->tail);
  uint16_t avail = static_cast<uint16_t>(tail - s2c_next_);
  if (avail > static_cast<uint16_t>(s2c_head_ - s2c_next_)) {
    link_down("the server's S2C tail ran past the buffers it was given", true);
    return 0;
  }
  uint16_t got = 0;
  for (; avail && got < n; --avail) {
    const uint16_t slot = s2c_next_++ & mask_;
    const uint32_t i = s2c_buf_[slot];
    memif::Desc d;
    std::memcpy(&d, &r->desc[slot], sizeof d);  // once: the server may write it again
    const bool rest_of_chain = in_chain_;
    in_chain_ = d.flags & memif::kDescNext;
    if (rest_of_chain || in_chain_ || d.length == 0 || d.length > cfg_.buffer_size) {
      ++stats_.rx_bad;
      free_.push(i);
      continue;
    }
    pkt_[i].len = static_cast<uint16_t>(d.length);
    pkt_[i].telemetry = nullptr;
    stats_.rx_bytes += d.length;
    ++stats_.rx_frames;
    if (take_link_frame(pkt_[i])) {
      free_.push(i);
      continue;
    }
    bufs[got++] = &pkt_[i];
  }
  refill_rx();
  // A drain query is answered after the ring was read, never from inside the loop above: sending can take
  // the link down (a broken server), which returns every ring buffer to the free list.
  if (pending_answer_ && send_link_frame(link_drain::kAnswer, pending_answer_)) {
    ++stats_.drain_answers;
    pending_answer_ = 0;
  }
  return got;
}

bool MemifClient::take_link_frame(const PktBuf& b) {
  uint16_t subtype = 0;
  uint32_t token = 0;
  if (!link_drain::parse(b.data, b.len, &subtype, &token)) return false;
  if (subtype == link_drain::kQuery) {
    pending_answer_ = token;  // sent at the end of rx_burst (and retried there until it goes)
  } else if (token == drain_token_ && token != 0) {
    drain_answered_ = true;
  }
  return true;
}

bool MemifClient::send_link_frame(uint16_t subtype, uint32_t token) {
  PktBuf* b;
  if (alloc_burst(&b, 1) != 1) return false;
  static constexpr uint8_t kSrc[6] = {0x02, 0, 0, 0, 0, 0};  // link-local: nobody forwards or answers it
  link_drain::build(b->data, kSrc, subtype, token);
  b->len = link_drain::kFrameLen;
  if (tx_burst(&b, 1) == 1) return true;
  free_burst(&b, 1);  // ring full or link down: the querier asks again
  return false;
}

bool MemifClient::enable_rx_interrupt(bool requests_only) {
  if (!bell_) return false;
  bell_->arm(requests_only ? MemifBell::kArmRequests : MemifBell::kArmAll);
  return true;
}

void MemifClient::linger() {
  if (!close_linger_ms_ || !sent_since_linger_) return;
  drain_token_ = static_cast<uint32_t>(std::random_device{}()) | 1;
  drain_answered_ = false;
  link_drain::await_answer(*this, close_linger_ms_, drain_answered_,
                           [&] { return send_link_frame(link_drain::kQuery, drain_token_); });
  drain_token_ = 0;
  sent_since_linger_ = false;  // the query itself went out since
}

PortStats MemifClient::stats() const {
  PortStats s;
  s.rx_frames = stats_.rx_frames;
  s.rx_bytes = stats_.rx_bytes;
  s.tx_frames = stats_.tx_frames;
  s.tx_bytes = stats_.tx_bytes;
  s.rx_errors = stats_.rx_bad;
  s.bell_rings = bell_ ? bell_->rings() : 0;
  return s;
}

void MemifClient::free_burst(PktBuf** bufs, uint16_t n) {
  for (uint16_t j = 0; j < n; ++j) free_.push(index_of(bufs[j]));
}

uint32_t MemifClient::index_of(const PktBuf* b) const {
  // A buffer that is not one of ours would corrupt the free list or send another's memory: a caller bug.
  if (b < pkt_.data() || b >= pkt_.data() + pkt_.size() || free_.size() >= cfg_.buffers) std::abort();
  return static_cast<uint32_t>(b - pkt_.data());
}

}  // namespace uroce::glue
