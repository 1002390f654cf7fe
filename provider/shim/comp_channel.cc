// Completion channels for uroce contexts. libibverbs creates a channel by writing a command to the
// context's cmd_fd, which for uroce is /dev/full, so it cannot. The shim makes a pipe instead: the read
// end is the channel fd the application polls and the unmodified ibv_get_cq_event reads; the provider
// writes completion events into the other end through uroce_comp_channel_notify. Contexts of other
// devices go to libibverbs' own functions.
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <rdma/ib_user_verbs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "provider/shim/next.h"
#include "provider/shim/uroce_shim.h"

namespace uroce::shim {
namespace {

constexpr char kDevicePrefix[] = "uroce";
constexpr uint32_t kChannelMagic = 0x75636368;  // "ucch"

// `base` first: applications and libibverbs only ever see &base. base.refcnt counts the CQs using the
// channel; libibverbs changes it under context->mutex when it creates and destroys CQs.
struct UroceChannel {
  ibv_comp_channel base;
  int write_fd;  // O_NONBLOCK: the provider must never block in notify
  uint32_t magic;
};

static_assert(sizeof(ib_uverbs_comp_event_desc) == 8, "ibv_get_cq_event reads exactly 8 bytes");

constinit NextSym s_create{"ibv_create_comp_channel"}, s_destroy{"ibv_destroy_comp_channel"};

bool is_uroce(const ibv_context* ctx) {
  return ctx != nullptr && ctx->device != nullptr &&
         std::strncmp(ctx->device->name, kDevicePrefix, sizeof kDevicePrefix - 1) == 0;
}

// Only channels of uroce contexts can be ours: libibverbs cannot create one for them.
UroceChannel* as_uroce(ibv_comp_channel* ch) {
  if (ch == nullptr || !is_uroce(ch->context)) return nullptr;
  auto* u = reinterpret_cast<UroceChannel*>(ch);
  return u->magic == kChannelMagic ? u : nullptr;
}

void close_keep_errno(int fd) {
  const int err = errno;
  close(fd);
  errno = err;
}

ibv_comp_channel* create_uroce_channel(ibv_context* ctx) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  auto* ch = static_cast<UroceChannel*>(std::calloc(1, sizeof(UroceChannel)));
  if (ch == nullptr || fcntl(fds[1], F_SETFL, O_NONBLOCK) != 0) {
    if (ch == nullptr) errno = ENOMEM;
    std::free(ch);
    close_keep_errno(fds[0]);
    close_keep_errno(fds[1]);
    return nullptr;
  }
  ch->base.context = ctx;
  ch->base.fd = fds[0];
  ch->base.refcnt = 0;
  ch->write_fd = fds[1];
  ch->magic = kChannelMagic;
  return &ch->base;
}

}  // namespace
}  // namespace uroce::shim

extern "C" {

UROCE_EXPORT ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  using namespace uroce::shim;
  if (is_uroce(context)) return create_uroce_channel(context);
  auto* real = next<decltype(ibv_create_comp_channel)>(s_create);
  if (real == nullptr) {
    errno = ENOSYS;
    return nullptr;
  }
  return real(context);
}

// libibverbs semantics: EBUSY (returned, not set in errno) while a CQ still uses the channel.
UROCE_EXPORT int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  using namespace uroce::shim;
  UroceChannel* ch = as_uroce(channel);
  if (ch == nullptr) {
    auto* real = next<decltype(ibv_destroy_comp_channel)>(s_destroy);
    return real != nullptr ? real(channel) : ENOSYS;
  }
  pthread_mutex_lock(&channel->context->mutex);
  const bool busy = channel->refcnt != 0;
  pthread_mutex_unlock(&channel->context->mutex);
  if (busy) return EBUSY;
  ch->magic = 0;
  close(ch->base.fd);
  close(ch->write_fd);
  std::free(ch);
  return 0;
}

UROCE_EXPORT int uroce_comp_channel_notify(ibv_comp_channel* channel, ibv_cq* cq) {
  using namespace uroce::shim;
  UroceChannel* ch = as_uroce(channel);
  if (ch == nullptr) return -EINVAL;
  ib_uverbs_comp_event_desc ev{};
  ev.cq_handle = reinterpret_cast<uintptr_t>(cq);
  const int saved = errno;
  int ret = 0;
  for (;;) {
    const ssize_t n = write(ch->write_fd, &ev, sizeof ev);
    if (n == static_cast<ssize_t>(sizeof ev)) break;
    if (n < 0 && errno == EINTR) continue;
    ret = n < 0 ? -errno : -EIO;  // a short write cannot happen below PIPE_BUF
    break;
  }
  errno = saved;
  return ret;
}

}  // extern "C"
