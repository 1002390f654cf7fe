#include "provider/engine.h"

#include <fcntl.h>
#include <poll.h>
#include <rdma/ib_user_verbs.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "pmd_glue/loopback.h"

namespace uroce::provider {

namespace {

constexpr uint64_t kSpinNs = 20'000;  // keep polling this long after the last work before sleeping

bool parse_gid(const std::string& text, Gid* gid) {
  unsigned g[8];
  if (std::sscanf(text.c_str(), "%4x:%4x:%4x:%4x:%4x:%4x:%4x:%4x", &g[0], &g[1], &g[2], &g[3], &g[4], &g[5],
                  &g[6], &g[7]) != 8)
    return false;
  for (int i = 0; i < 8; ++i) {
    (*gid)[2 * i] = static_cast<uint8_t>(g[i] >> 8);
    (*gid)[2 * i + 1] = static_cast<uint8_t>(g[i]);
  }
  return true;
}

}  // namespace

std::string load_engine_config(const std::string& ibdev, EngineConfig* cfg) {
  const char* sysfs = std::getenv("SYSFS_PATH");
  if (!sysfs)
    return "SYSFS_PATH is not set: start the program with 'uroce run -- PROGRAM' (or eval \"$(uroce env)\")";
  const std::string gid_file = std::string(sysfs) + "/class/infiniband/" + ibdev + "/ports/1/gids/0";
  std::ifstream in(gid_file);
  std::string text;
  if (!in || !std::getline(in, text) || !parse_gid(text, &cfg->device.gid))
    return "cannot read GID 0 of " + ibdev + " from " + gid_file;
  cfg->device.name = ibdev;
  cfg->device.mac = mac_for_gid(cfg->device.gid);

  if (const char* mtu = std::getenv("UROCE_MTU")) {
    const std::string v = mtu;
    const Mtu table[] = {Mtu::k256, Mtu::k512, Mtu::k1024, Mtu::k2048, Mtu::k4096};
    bool ok = false;
    for (Mtu m : table)
      if (v == std::to_string(mtu_bytes(m))) {
        cfg->device.port_mtu = m;
        ok = true;
      }
    if (!ok) return "UROCE_MTU=" + v + ": must be 256, 512, 1024, 2048 or 4096";
  }
  if (const char* cc = std::getenv("UROCE_CC")) cfg->device.cc = cc;
  if (const char* port = std::getenv("UROCE_PORT")) cfg->port = port;
  if (cfg->port != "loopback") return "UROCE_PORT=" + cfg->port + ": unknown port (this build has: loopback)";
  return "";
}

Engine::Engine(const EngineConfig& cfg) {
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw std::runtime_error("out of file descriptors");
  port_ =
      std::make_unique<glue::LoopbackPort>(glue::LoopbackHub::instance(), cfg.device.mac, [this] { wake(); });
  dev_ = std::make_unique<Device>(cfg.device, port_.get(), &clock_);  // throws on a bad CC setting
  dev_->on_async_event = [this] { deliver_async_events(); };
  thread_ = std::thread([this] { run(); });
}

Engine::~Engine() {
  stop_ = true;
  wake();
  thread_.join();
  dev_.reset();
  port_.reset();
  close(wake_fd_);
}

void Engine::wake() {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

// Called by the device (lock held) as it raises events. Each becomes the record ibv_get_async_event reads
// from the async fd of the context that owns the object.
void Engine::deliver_async_events() {
  AsyncEvent ev;
  while (dev_->get_async_event(&ev)) {
    const auto& map = ev.type == EventType::kCqErr                                                ? cq_events
                      : (ev.type == EventType::kSrqErr || ev.type == EventType::kSrqLimitReached) ? srq_events
                                                                                                  : qp_events;
    auto it = map.find(ev.element);
    if (it == map.end()) continue;  // its object is already destroyed
    ib_uverbs_async_event_desc desc{};
    desc.element = reinterpret_cast<uintptr_t>(it->second.element);
    desc.event_type = static_cast<uint32_t>(ev.type);
    (void)!write(it->second.fd, &desc, sizeof(desc));  // non-blocking: a full pipe drops the event
  }
}

std::shared_ptr<Engine> Engine::acquire(const std::string& ibdev, std::string* err) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::weak_ptr<Engine>> engines;
  std::lock_guard lock(mu);
  if (auto e = engines[ibdev].lock()) return e;
  EngineConfig cfg;
  *err = load_engine_config(ibdev, &cfg);
  if (!err->empty()) return nullptr;
  try {
    auto e = std::make_shared<Engine>(cfg);
    engines[ibdev] = e;
    return e;
  } catch (const std::exception& ex) {
    *err = ex.what();
    return nullptr;
  }
}

void Engine::run() {
  uint64_t last_work = clock_.now_ns();
  while (!stop_.load(std::memory_order_relaxed)) {
    uint64_t deadline;
    uint32_t work;
    {
      std::lock_guard lock(mu_);
      work = dev_->progress();
      deadline = dev_->next_deadline();
    }
    const uint64_t now = clock_.now_ns();
    if (work || deadline <= now) {
      last_work = now;
      continue;
    }
    if (now - last_work < kSpinNs) continue;
    pollfd pfd{wake_fd_, POLLIN, 0};
    timespec ts{};
    timespec* tsp = nullptr;
    if (deadline != kNever) {
      const uint64_t dt = deadline - now;
      ts.tv_sec = static_cast<time_t>(dt / 1'000'000'000);
      ts.tv_nsec = static_cast<long>(dt % 1'000'000'000);
      tsp = &ts;
    }
    if (ppoll(&pfd, 1, tsp, nullptr) > 0) {
      uint64_t v;
      (void)!read(wake_fd_, &v, sizeof(v));
    }
    last_work = clock_.now_ns();
  }
}

}  // namespace uroce::provider
