/* Shared by the deliberately broken test plugins: a minimal FIFO state whose victim the tests
 * corrupt on purpose. */
#include <stdlib.h>

#include "plugin.h"

typedef struct fifo {
  uint64_t ids[1024];
  size_t head, tail;
  size_t calls; /* impure_victim's state */
} fifo;

static inline void* fifo_create(const inferscale_param* params, size_t n, uint64_t capacity,
                                uint64_t seed, char* error, size_t error_size) {
  (void)params, (void)n, (void)capacity, (void)seed, (void)error, (void)error_size;
  return calloc(1, sizeof(fifo));
}
static inline void fifo_destroy(void* p) {
  free(p);
}
static inline void fifo_insert(void* p, const inferscale_entry* e, int64_t now) {
  (void)now;
  fifo* f = p;
  f->ids[f->tail++ % 1024] = e->fact;
}
static inline void fifo_hit(void* p, const inferscale_entry* e, int64_t now) {
  (void)p, (void)e, (void)now;
}
static inline void fifo_remove(void* p, uint64_t fact) {
  fifo* f = p;
  if (f->head < f->tail && f->ids[f->head % 1024] == fact) f->head++;
}
