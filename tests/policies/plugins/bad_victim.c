/* Returns a fact that is not resident. */
#include "common.h"

static uint64_t victim(const void* p, const inferscale_victim_query* q) {
  (void)p, (void)q;
  return 123456789u;
}

static const inferscale_policy_descriptor_v2 descriptor = {INFERSCALE_POLICY_ABI_VERSION,
                                                           sizeof(inferscale_policy_descriptor_v2),
                                                           "bad_victim",
                                                           "",
                                                           fifo_create,
                                                           fifo_destroy,
                                                           fifo_insert,
                                                           fifo_hit,
                                                           fifo_remove,
                                                           NULL,
                                                           NULL,
                                                           victim,
                                                           0,
                                                           0,
                                                           NULL};

INFERSCALE_POLICY_EXPORT const inferscale_policy_descriptor_v2* inferscale_policy_descriptor(void) {
  return &descriptor;
}
