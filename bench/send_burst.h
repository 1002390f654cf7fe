// One round of the requester's work as ib_send_bw 64 B loads it, in the transport alone: `burst` SENDs of 64
// bytes (the last one signaled) posted, built and handed to a port that keeps nothing, acknowledged by one
// ACK and polled. Shared by bench_engine (BM_SendBurst) and bench_verbs (its same-run baseline).
#pragma once

#include <cstdint>

#include "tests/support/capture_port.h"

namespace uroce::bench {

// A device with one connected QP (credits lifted) on a capture port that keeps nothing it is sent.
inline void prepare_send_burst(test::ProtoEnv* env) {
  env->unlimited_credits();
  env->run();
  env->port.keep_sent = false;
}

// False if a post failed or the completion did not come. *psn: the next PSN the QP sends (env->opt.sq_psn
// before the first round).
inline bool send_burst(test::ProtoEnv& env, uint32_t burst, uint32_t* psn) {
  for (uint32_t i = 0; i < burst; ++i)
    if (env.post(WrOpcode::kSend, 64 * i, 64, i, 0, 0, i + 1 == burst ? uint32_t{kSendSignaled} : 0u) != 0)
      return false;
  while (env.dev->progress()) {
  }
  *psn = (*psn + burst - 1) & 0xFFFFFF;
  env.inject_ack(*psn);
  *psn = (*psn + 1) & 0xFFFFFF;
  env.dev->progress();
  Wc wc[16];
  return env.cq->poll(16, wc) == 1;
}

}  // namespace uroce::bench
