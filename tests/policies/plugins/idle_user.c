/* Evicts a fact of the user whose last request is oldest (user_last_active_ns), lowest fact id
 * among that user's facts; a user who never issued a request counts as idle longest. */
#include "resident_set.h"

static void on_insert(void* p, const inferscale_entry* e, int64_t now) {
  (void)now;
  rs_add(p, e);
}
static void on_hit(void* p, const inferscale_entry* e, int64_t now) {
  (void)p, (void)e, (void)now;
}

static uint64_t victim(const void* p, const inferscale_victim_query* q) {
  const resident_set* s = p;
  uint64_t best = INFERSCALE_NO_VICTIM;
  int64_t best_active = 0;
  for (size_t i = 0; i < s->count; ++i) {
    uint64_t id = s->members[i];
    if (q->pinned(q->run, id)) continue;
    int64_t active = q->user_last_active_ns(q->run, s->user[id]);
    if (active == INFERSCALE_NEVER) active = INT64_MIN;
    if (best == INFERSCALE_NO_VICTIM || active < best_active ||
        (active == best_active && id < best)) {
      best = id;
      best_active = active;
    }
  }
  return best;
}

static const inferscale_policy_descriptor_v2 descriptor = {INFERSCALE_POLICY_ABI_VERSION,
                                                           sizeof(inferscale_policy_descriptor_v2),
                                                           "idle_user",
                                                           "facts of the user idle longest",
                                                           rs_create,
                                                           rs_destroy,
                                                           on_insert,
                                                           on_hit,
                                                           rs_remove,
                                                           NULL,
                                                           NULL,
                                                           victim,
                                                           0,
                                                           0,
                                                           NULL};

INFERSCALE_POLICY_EXPORT const inferscale_policy_descriptor_v2* inferscale_policy_descriptor(void) {
  return &descriptor;
}
