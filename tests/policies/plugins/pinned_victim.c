/* A FIFO that ignores pins. */
#include "common.h"

static uint64_t victim(const void* p, const inferscale_victim_query* q) {
  (void)q;
  const fifo* f = p;
  return f->head < f->tail ? f->ids[f->head % 1024] : INFERSCALE_NO_VICTIM;
}

static const inferscale_policy_descriptor_v2 descriptor = {INFERSCALE_POLICY_ABI_VERSION,
                                                           sizeof(inferscale_policy_descriptor_v2),
                                                           "pinned_victim",
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
