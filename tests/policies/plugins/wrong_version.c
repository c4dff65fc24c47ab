/* A plugin built against a different ABI version. */
#include "common.h"

static uint64_t victim(const void* p, const inferscale_victim_query* q) {
  (void)p, (void)q;
  return INFERSCALE_NO_VICTIM;
}

static const inferscale_policy_descriptor_v2 descriptor = {999,
                                                           sizeof(inferscale_policy_descriptor_v2),
                                                           "wrong_version",
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
