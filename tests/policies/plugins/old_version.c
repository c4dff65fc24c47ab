/* A plugin built against ABI version 1 (before victim() saw the user's last activity and the
 * trace's future): its table is the shorter version 1 one. */
#include "common.h"

typedef struct v1_table {
  uint32_t abi_version, struct_size;
  const char *name, *description;
  void* create;
  void* destroy;
  void* on_insert;
  void* on_hit;
  void* on_remove;
  void* on_evict;
  void* on_access;
  void* victim;
} v1_table;

static uint64_t victim(const void* p, const inferscale_victim_query* q) {
  (void)p, (void)q;
  return INFERSCALE_NO_VICTIM;
}

static v1_table descriptor;

INFERSCALE_POLICY_EXPORT const inferscale_policy_descriptor_v2* inferscale_policy_descriptor(void) {
  descriptor.abi_version = 1;
  descriptor.struct_size = sizeof(v1_table);
  descriptor.name = "old_version";
  descriptor.description = "";
  descriptor.victim = (void*)victim;
  return (const inferscale_policy_descriptor_v2*)(const void*)&descriptor;
}
