/* Refuses to be created, with a reason. */
#include <stdio.h>

#include "common.h"

static void* create(const inferscale_param* params, size_t n, uint64_t capacity, uint64_t seed,
                    char* error, size_t error_size) {
  (void)params, (void)capacity, (void)seed;
  snprintf(error, error_size, "needs the parameter 'mode' (got %zu parameters)", n);
  return NULL;
}

static uint64_t victim(const void* p, const inferscale_victim_query* q) {
  (void)p, (void)q;
  return INFERSCALE_NO_VICTIM;
}

static const inferscale_policy_descriptor_v2 descriptor = {INFERSCALE_POLICY_ABI_VERSION,
                                                           sizeof(inferscale_policy_descriptor_v2),
                                                           "refuses_params",
                                                           "",
                                                           create,
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
