/* cheapest_first: an example out-of-tree eviction policy, in C against policies/plugin.h only.
 *
 * It evicts the resident fact that is cheapest to recompute per byte of KV (recompute cost /
 * bytes), least recently used first on ties, and spares facts accessed within the last
 * `recent_ms` milliseconds while anything else is evictable. victim() scans every resident fact
 * (O(n)): simple to read; the in-tree policies show O(1)/O(log n) structures.
 *
 * Build:  cmake -S policies/examples -B build-example && cmake --build build-example
 * Use:    eviction: plugin
 *         params: {path: ./build-example/libcheapest_first.so, recent_ms: "50"} */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.h"

typedef struct fact_state {
  double cost_per_byte;
  int64_t last_access_ns;
  uint32_t member; /* index in members, or NOT_RESIDENT */
} fact_state;

#define NOT_RESIDENT UINT32_MAX

typedef struct policy {
  fact_state* facts; /* by dense fact id */
  size_t fact_slots;
  uint64_t* members; /* resident fact ids, unordered */
  size_t member_count, member_slots;
  int64_t recent_ns;
} policy;

/* Grows an array to at least `need` items; returns the (possibly moved) array, NULL if out of
 * memory. */
static void* grow(void* array, size_t* slots, size_t need, size_t item) {
  if (need <= *slots) return array;
  size_t n = *slots ? *slots : 64;
  while (n < need) n *= 2;
  void* p = realloc(array, n * item);
  if (p) *slots = n;
  return p;
}

static void* create(const inferscale_param* params, size_t param_count, uint64_t capacity_bytes,
                    uint64_t seed, char* error, size_t error_size) {
  (void)capacity_bytes;
  (void)seed;
  double recent_ms = 0;
  for (size_t i = 0; i < param_count; ++i) {
    if (strcmp(params[i].name, "recent_ms") == 0) {
      char* end = NULL;
      recent_ms = strtod(params[i].value, &end);
      if (end == params[i].value || *end != '\0' || recent_ms < 0) {
        snprintf(error, error_size, "recent_ms: expected a number >= 0, got '%s'", params[i].value);
        return NULL;
      }
    } else {
      snprintf(error, error_size, "unknown parameter '%s' (known: recent_ms)", params[i].name);
      return NULL;
    }
  }
  policy* p = calloc(1, sizeof(policy));
  if (!p) {
    snprintf(error, error_size, "out of memory");
    return NULL;
  }
  p->recent_ns = (int64_t)(recent_ms * 1e6);
  return p;
}

static void destroy(void* self) {
  policy* p = self;
  free(p->facts);
  free(p->members);
  free(p);
}

static void touch(policy* p, const inferscale_entry* e, int64_t now_ns) {
  p->facts[e->fact].last_access_ns = now_ns;
}

static void on_insert(void* self, const inferscale_entry* e, int64_t now_ns) {
  policy* p = self;
  size_t old = p->fact_slots;
  p->facts = grow(p->facts, &p->fact_slots, e->fact + 1, sizeof(fact_state));
  p->members = grow(p->members, &p->member_slots, p->member_count + 1, sizeof(uint64_t));
  if (!p->facts || !p->members) abort(); /* a real policy would degrade; kept short here */
  for (size_t i = old; i < p->fact_slots; ++i) p->facts[i].member = NOT_RESIDENT;
  fact_state* f = &p->facts[e->fact];
  f->cost_per_byte = (double)e->recompute_cost_ns / (double)(e->bytes ? e->bytes : 1);
  f->member = (uint32_t)p->member_count;
  p->members[p->member_count++] = e->fact;
  touch(p, e, now_ns);
}

static void on_hit(void* self, const inferscale_entry* e, int64_t now_ns) {
  touch(self, e, now_ns);
}

static void on_remove(void* self, uint64_t fact) {
  policy* p = self;
  uint32_t i = p->facts[fact].member;
  uint64_t last = p->members[--p->member_count];
  p->members[i] = last;
  p->facts[last].member = i;
  p->facts[fact].member = NOT_RESIDENT;
}

/* Is a better victim than b (b may be INFERSCALE_NO_VICTIM)? */
static int better(const policy* p, uint64_t a, uint64_t b) {
  if (b == INFERSCALE_NO_VICTIM) return 1;
  const fact_state* x = &p->facts[a];
  const fact_state* y = &p->facts[b];
  if (x->cost_per_byte != y->cost_per_byte) return x->cost_per_byte < y->cost_per_byte;
  if (x->last_access_ns != y->last_access_ns) return x->last_access_ns < y->last_access_ns;
  return a < b;
}

static uint64_t victim(const void* self, const inferscale_victim_query* q) {
  const policy* p = self;
  uint64_t best = INFERSCALE_NO_VICTIM, best_recent = INFERSCALE_NO_VICTIM;
  for (size_t i = 0; i < p->member_count; ++i) {
    uint64_t id = p->members[i];
    if (q->pinned(q->run, id)) continue;
    if (q->now_ns - p->facts[id].last_access_ns < p->recent_ns) {
      if (better(p, id, best_recent)) best_recent = id;
    } else if (better(p, id, best)) {
      best = id;
    }
  }
  return best != INFERSCALE_NO_VICTIM ? best : best_recent;
}

static const inferscale_policy_descriptor_v2 descriptor = {
    INFERSCALE_POLICY_ABI_VERSION,
    sizeof(inferscale_policy_descriptor_v2),
    "cheapest_first",
    "lowest recompute cost per byte first, sparing recently used facts",
    create,
    destroy,
    on_insert,
    on_hit,
    on_remove,
    NULL, /* on_evict: same as on_remove */
    NULL, /* on_access: not needed */
    victim,
    0,    /* flags: an online policy */
    0,    /* reserved */
    NULL, /* attach: the run is read in victim() alone */
};

INFERSCALE_POLICY_EXPORT const inferscale_policy_descriptor_v2* inferscale_policy_descriptor(void) {
  return &descriptor;
}
