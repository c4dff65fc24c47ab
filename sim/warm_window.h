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
/// no hits. A tier under LRU that admits everything evicts them in the order it was given them
/// (oldest first) and holds, after each insertion, the longest suffix of what it was given that
/// fits its capacity. So a fact leaves a replica's GPU tier at the same insertion whether or
/// not the facts before it were given (it leaves when the facts after it no longer fit with
/// it), and the GPU tiers of a node send down to its host tier the facts of the window's users
/// (as they leave, written back, or as they enter, written through) in the same order at the
/// same times as with every user. The host tier holds
/// the longest suffix of that stream that fits; it is the same as with every user when each
/// replica's part of it, after the facts its GPU tier keeps, comes to more than the host
/// tier's capacity and a fact: the suffix and the fact before it then hold no fact of an
/// earlier user. The same goes for what the host tier passes to the disk tier. A replica given
/// more than the capacity of its GPU tier, of its node's host and disk tiers and a fact has
/// them all end as after the whole population; the window gives each replica that and four of
/// its largest facts more (a test runs the chain both ways, and fails with a window short of
/// the bound).
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
