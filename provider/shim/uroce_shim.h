/* What liburoce-preload.so exports for the provider. The provider must not link against the shim (a
 * program may run without it): it looks the function up at run time,
 *
 *   auto notify = reinterpret_cast<uroce_comp_channel_notify_fn>(
 *       dlsym(RTLD_DEFAULT, UROCE_COMP_CHANNEL_NOTIFY_SYMBOL));
 *
 * and gets NULL when the shim is not preloaded (then ibv_create_comp_channel on a uroce context fails,
 * as libibverbs' own version writes to the cmd_fd). */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

struct ibv_comp_channel;
struct ibv_cq;

/* Queues one completion event for `cq` on a channel that ibv_create_comp_channel made for a uroce
 * context: writes the 8-byte struct ib_uverbs_comp_event_desc {cq_handle = (uintptr_t)cq} that the
 * unmodified ibv_get_cq_event reads back and turns into the struct ibv_cq *. Thread-safe (one pipe write
 * of 8 bytes is atomic) and never blocks. Returns 0, -EINVAL for a channel that is not a uroce one, or
 * -EAGAIN when the pipe is full (64 KiB: 8192 unread events). Leaves errno unchanged. */
int uroce_comp_channel_notify(struct ibv_comp_channel* channel, struct ibv_cq* cq);

typedef int (*uroce_comp_channel_notify_fn)(struct ibv_comp_channel* channel, struct ibv_cq* cq);
#define UROCE_COMP_CHANNEL_NOTIFY_SYMBOL "uroce_comp_channel_notify"

#ifdef __cplusplus
}
#endif
