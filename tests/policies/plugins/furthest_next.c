/* Belady's rule as an offline plugin (INFERSCALE_POLICY_OFFLINE): the fact needed furthest
 * ahead goes, and an incoming fact needed later than every resident is not inserted. Reads the
 * future through attach() in on_insert/on_hit and through the query in victim(). */
#include "resident_set.h"

static void on_insert(void* p, const inferscale_entry* e, int64_t now) {
  resident_set* s = p;
  (void)now;
  rs_add(s, e);
  s->key[e->fact] = s->run->next_access(s->run->run, e->fact);
}
static void on_hit(void* p, const inferscale_entry* e, int64_t now) {
  resident_set* s = p;
  (void)now;
  s->key[e->fact] = s->run->next_access(s->run->run, e->fact);
}

static uint64_t victim(const void* p, const inferscale_victim_query* q) {
  const resident_set* s = p;
  uint64_t best = INFERSCALE_NO_VICTIM;
  for (size_t i = 0; i < s->count; ++i) {
    uint64_t id = s->members[i];
    if (q->pinned(q->run, id)) continue;
    if (best == INFERSCALE_NO_VICTIM || s->key[id] > s->key[best] ||
        (s->key[id] == s->key[best] && id < best)) {
      best = id;
    }
  }
  if (best != INFERSCALE_NO_VICTIM && q->incoming &&
      q->next_access(q->run, q->incoming->fact) >= s->key[best]) {
    return INFERSCALE_NO_VICTIM;
  }
  return best;
}

static const inferscale_policy_descriptor_v2 descriptor = {INFERSCALE_POLICY_ABI_VERSION,
                                                           sizeof(inferscale_policy_descriptor_v2),
                                                           "furthest_next",
                                                           "Belady's rule, offline",
                                                           rs_create,
                                                           rs_destroy,
                                                           on_insert,
                                                           on_hit,
                                                           rs_remove,
                                                           NULL,
                                                           NULL,
                                                           victim,
                                                           INFERSCALE_POLICY_OFFLINE,
                                                           0,
                                                           rs_attach};

INFERSCALE_POLICY_EXPORT const inferscale_policy_descriptor_v2* inferscale_policy_descriptor(void) {
  return &descriptor;
}
