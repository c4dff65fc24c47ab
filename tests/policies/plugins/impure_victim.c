/* A FIFO whose victim() changes its state: each call moves on to the next unpinned fact. */
#include "common.h"

static uint64_t victim(const void* p, const inferscale_victim_query* q) {
  fifo* f = (fifo*)p; /* casts away const: the contract violation under test */
  size_t live = f->tail - f->head;
  for (size_t tries = 0; tries < live; ++tries) {
    uint64_t id = f->ids[(f->head + (f->calls++ % live)) % 1024];
    if (!q->pinned(q->run, id)) return id;
  }
  return INFERSCALE_NO_VICTIM;
}

/* Removes `fact` wherever it is in the queue. */
static void remove_any(void* p, uint64_t fact) {
  fifo* f = p;
  for (size_t i = f->head; i < f->tail; ++i) {
    if (f->ids[i % 1024] == fact) {
      for (size_t j = i; j + 1 < f->tail; ++j) f->ids[j % 1024] = f->ids[(j + 1) % 1024];
      f->tail--;
      return;
    }
  }
}

static const inferscale_policy_descriptor_v2 descriptor = {INFERSCALE_POLICY_ABI_VERSION,
                                                           sizeof(inferscale_policy_descriptor_v2),
                                                           "impure_victim",
                                                           "",
                                                           fifo_create,
                                                           fifo_destroy,
                                                           fifo_insert,
                                                           fifo_hit,
                                                           remove_any,
                                                           NULL,
                                                           NULL,
                                                           victim,
                                                           0,
                                                           0,
                                                           NULL};

INFERSCALE_POLICY_EXPORT const inferscale_policy_descriptor_v2* inferscale_policy_descriptor(void) {
  return &descriptor;
}
