// Stands in for libibverbs behind the preload shim in shim_test: the shim must forward
// ibv_create_comp_channel / ibv_destroy_comp_channel for non-uroce contexts to the next definition,
// which is this one. Records the calls it gets.
#include <infiniband/verbs.h>

extern "C" {

__attribute__((visibility("default"))) int uroce_fake_verbs_calls = 0;
__attribute__((visibility("default"))) ibv_comp_channel uroce_fake_verbs_channel = {};

__attribute__((visibility("default"))) ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  ++uroce_fake_verbs_calls;
  uroce_fake_verbs_channel.context = context;
  uroce_fake_verbs_channel.fd = -1;
  return &uroce_fake_verbs_channel;
}

__attribute__((visibility("default"))) int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  ++uroce_fake_verbs_calls;
  return channel == &uroce_fake_verbs_channel ? 4242 : -1;
}

}  // extern "C"
