#pragma once
// @brief The warm window: the users of a generated population whose facts a warm start must
// insert for every tier to end as it would after inserting the whole population's.

#include <cstdint>
#include <optional>
#include <vector>

#include "sim/config/experiment.h"
#include "sim/router.h"
#include "traces/synthetic.h"

namespace inferscale {

/// @brief By home replica, the first user (in declaration order) whose facts the warm start
/// inserts; the facts of the users before it are declared when the user first asks, as with a
/// cold store.
///
/// Why a suffix suffices: a warm start inserts each replica's facts in declaration order, with
/// no hits. A tier under LRU that admits everything then holds, after each insertion, the
/// longest suffix of what it was given that fits its capacity, and evicts in the order it was
/// given; what a GPU tier evicts goes down to the node's tiers (write-back) in that order, and
/// so on down. Once a replica has been given its tiers' capacities' worth of facts, its GPU
/// tier holds what it would hold had it been given every earlier fact too, and from then on it
/// evicts the same facts at the same points; what it evicted earlier is followed by at least
/// the node's tiers' capacities' worth of later evictions, which push it out of them. Three
/// times the capacities of the replica's GPU tier and of its node's host and disk tiers leaves
/// a margin over both (and over facts that straddle a boundary).
struct WarmWindow {
  HashRing home;                     // the warm start's home replica of a user (Simulator's)
  std::vector<std::uint64_t> start;  // by replica: its first user inserted
  std::uint64_t first = 0;           // the least of `start`: no user before it is inserted
  bool inserted(std::uint64_t user) const { return user >= start[home.owner(user)]; }
};

/// The warm window of `run` over the generated population `o`; none when the warm start must
/// insert every fact: a tier with another policy than LRU or an admission policy that may
/// refuse, a remote tier (one for the whole fleet), or the fast paths off (the reference).
/// Takes time and memory O(users inserted), deriving their facts' sizes; users of replicas
/// already covered cost one hash each.
std::optional<WarmWindow> warm_window(const RunConfig& run, const SyntheticOptions& o);

}  // namespace inferscale
