/* @brief The C ABI of out-of-tree eviction policies: a shared library exports one function,
 * inferscale_policy_descriptor(), returning a table of callbacks. Plain C, no project header
 * needed besides this one.
 *
 * Versioning: the table starts with abi_version and struct_size. The loader refuses a library
 * whose abi_version differs from INFERSCALE_POLICY_ABI_VERSION (rebuild it against this header),
 * or whose struct_size is smaller than the table it knows. Versions append fields: a plugin's
 * source for an older version needs only its descriptor type renamed and a rebuild.
 *   1: the callbacks; victim() sees pins and users in flight.
 *   2: victim() also sees the user's last activity and, for offline plugins, the trace's future
 *      (next_access, position); attach() hands the same functions to the other callbacks; flags
 *      (INFERSCALE_POLICY_OFFLINE). The descriptor type is inferscale_policy_descriptor_v2.
 *
 * Contract (as for in-tree policies, see policies/policy.h): the callbacks other than victim
 * are the only ones that may change the policy's state; victim must not change it, must skip
 * pinned facts (query->pinned) and must return a resident fact or INFERSCALE_NO_VICTIM. The
 * store checks every victim: a pinned or non-resident one stops the run with an error.
 * Fact ids are dense in a run (0 .. facts-1), so arrays indexed by id are fine.
 * Callbacks run on one thread per policy instance; they must not throw or longjmp. */
#ifndef INFERSCALE_POLICIES_PLUGIN_H
#define INFERSCALE_POLICIES_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INFERSCALE_POLICY_ABI_VERSION 2u
#define INFERSCALE_NO_VICTIM UINT64_MAX
/* What next_access and user_last_active_ns answer for "never". */
#define INFERSCALE_NEVER INT64_MAX
/* flags: the plugin reads the trace's future (next_access); it is selected as
 * `eviction: plugin_offline`, which gives the run an access oracle. */
#define INFERSCALE_POLICY_OFFLINE 1u

/* One fact as the store tier sees it. Times are virtual nanoseconds. */
typedef struct inferscale_entry {
  uint64_t fact;             /* dense fact id */
  uint64_t user;             /* owner */
  uint64_t bytes;            /* KV bytes on the tier */
  uint32_t tokens;           /* fact tokens */
  uint32_t reserved;         /* 0 */
  int64_t recompute_cost_ns; /* encode time of this fact */
  int64_t created_ns;        /* when the fact appeared */
  int64_t last_access_ns;    /* previous access on this tier (on_hit only; else 0) */
} inferscale_entry;

/* What victim() may look at: the request for room and the run. Every function takes `run` as
 * its first argument and answers for the moment of the call. */
typedef struct inferscale_victim_query {
  int64_t now_ns;
  uint64_t bytes_needed;            /* free bytes the tier is trying to reach */
  const inferscale_entry* incoming; /* the fact room is made for, or NULL */
  /* Nonzero while a running request uses the fact: never return such a fact. */
  int (*pinned)(const void* run, uint64_t fact);
  /* Nonzero while the user has a request queued or running. */
  int (*user_in_flight)(const void* run, uint64_t user);
  const void* run; /* pass to the functions of this query */
  /* ABI 2. Last time the user issued a request, or INFERSCALE_NEVER. */
  int64_t (*user_last_active_ns)(const void* run, uint64_t user);
  /* ABI 2, offline plugins only (INFERSCALE_POLICY_OFFLINE): trace position (request index) of
   * the next request naming the fact after the one being processed, or INFERSCALE_NEVER. */
  int64_t (*next_access)(const void* run, uint64_t fact);
  /* ABI 2, offline plugins only: trace position of the request being processed. */
  int64_t (*position)(const void* run);
} inferscale_victim_query;

/* A parameter from the YAML `params` map (all values as written, as strings). */
typedef struct inferscale_param {
  const char* name;
  const char* value;
} inferscale_param;

typedef struct inferscale_policy_descriptor_v2 {
  uint32_t abi_version; /* INFERSCALE_POLICY_ABI_VERSION */
  uint32_t struct_size; /* sizeof(inferscale_policy_descriptor_v2) */
  const char* name;     /* short name, for messages */
  const char* description;

  /* Creates one instance (one per store tier). On failure returns NULL and writes a message
   * (NUL-terminated, at most error_size bytes) to `error`; the run stops with it. */
  void* (*create)(const inferscale_param* params, size_t param_count, uint64_t capacity_bytes,
                  uint64_t seed, char* error, size_t error_size);
  void (*destroy)(void* policy);

  void (*on_insert)(void* policy, const inferscale_entry* entry, int64_t now_ns);
  void (*on_hit)(void* policy, const inferscale_entry* entry, int64_t now_ns);
  /* The fact left the tier without being evicted (invalidated or moved). */
  void (*on_remove)(void* policy, uint64_t fact);
  /* The tier evicted the fact returned by the victim() call just before, which saw the same
   * query. May be NULL: then on_remove is called. */
  void (*on_evict)(void* policy, uint64_t fact, const inferscale_victim_query* query);
  /* Every lookup, hit or miss, before on_hit. May be NULL. */
  void (*on_access)(void* policy, const inferscale_entry* entry, int64_t now_ns);
  /* The fact to evict, or INFERSCALE_NO_VICTIM (then the incoming fact is not inserted). */
  uint64_t (*victim)(const void* policy, const inferscale_victim_query* query);

  /* ABI 2. INFERSCALE_POLICY_OFFLINE or 0. */
  uint32_t flags;
  uint32_t reserved; /* 0 */
  /* ABI 2. The run, before the first access and whenever it changes, for the callbacks other
   * than victim: a query whose functions and `run` are set (now_ns, bytes_needed and incoming
   * are not). The pointer stays valid until the next attach or destroy. May be NULL. */
  void (*attach)(void* policy, const inferscale_victim_query* run);
} inferscale_policy_descriptor_v2;

/* The one symbol a policy library exports. */
typedef const inferscale_policy_descriptor_v2* (*inferscale_policy_descriptor_fn)(void);
#define INFERSCALE_POLICY_DESCRIPTOR_SYMBOL "inferscale_policy_descriptor"

#if defined(_WIN32)
#define INFERSCALE_POLICY_EXPORT __declspec(dllexport)
#else
#define INFERSCALE_POLICY_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
}
#endif

#endif /* INFERSCALE_POLICIES_PLUGIN_H */
