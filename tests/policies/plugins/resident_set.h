/* Shared by the test plugins that scan their resident facts: a set of fact ids below
 * RS_MAX_FACTS with per-fact keys, in fixed arrays (enough for the tests). */
#include <stdlib.h>

#include "plugin.h"

#define RS_MAX_FACTS 4096

typedef struct resident_set {
  uint64_t members[RS_MAX_FACTS];
  uint32_t index[RS_MAX_FACTS]; /* position in members + 1; 0: not resident */
  uint64_t user[RS_MAX_FACTS];
  int64_t key[RS_MAX_FACTS];
  size_t count;
  const inferscale_victim_query* run; /* from attach */
} resident_set;

static inline void* rs_create(const inferscale_param* params, size_t n, uint64_t capacity,
                              uint64_t seed, char* error, size_t error_size) {
  (void)params, (void)n, (void)capacity, (void)seed, (void)error, (void)error_size;
  return calloc(1, sizeof(resident_set));
}
static inline void rs_destroy(void* p) {
  free(p);
}
static inline void rs_attach(void* p, const inferscale_victim_query* run) {
  ((resident_set*)p)->run = run;
}
static inline void rs_add(resident_set* s, const inferscale_entry* e) {
  if (e->fact >= RS_MAX_FACTS) abort();
  s->members[s->count++] = e->fact;
  s->index[e->fact] = (uint32_t)s->count;
  s->user[e->fact] = e->user;
}
static inline void rs_remove(void* p, uint64_t fact) {
  resident_set* s = p;
  uint32_t i = s->index[fact] - 1;
  uint64_t last = s->members[--s->count];
  s->members[i] = last;
  s->index[last] = i + 1;
  s->index[fact] = 0;
}
