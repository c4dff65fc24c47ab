#pragma once
// @brief The state of one request inside the simulator, and a pool that recycles them.

#include <cstdint>
#include <vector>

#include "traces/types.h"

namespace inferscale {

enum class FactSource : std::uint8_t { kGpuHit, kHostHit, kEncoded, kText, kDiskHit, kRemoteHit };

/// 20 bytes: a request's layout is written at each admission, and on a busy replica its lines
/// have left the cache since the pool slot's previous request. Dense ids fit 32 bits (a run's
/// facts are counted in 32 bits).
struct RequestFact {
  std::uint32_t global = 0;
  std::uint32_t local = 0;  // the replica's dense id
  std::uint32_t tokens = 0;
  std::uint32_t position = 0;  // composed position of its first token
  FactSource source = FactSource::kText;
  bool pinned = false;      // holds a pin on the replica's GPU tier
  bool private_kv = false;  // encoded/loaded straight into this request's cache (not stored)
};
static_assert(sizeof(RequestFact) == 20);

struct Request {
  RequestId id = 0;
  UserId user = 0;
  SimTime arrival = 0;
  std::uint32_t query_tokens = 0;
  std::uint32_t output_tokens = 0;
  std::vector<std::uint32_t> facts;  // global dense ids, best last (a run counts facts in 32 bits)
  std::int64_t trace_position = 0;   // index among the trace's requests
  int replica = -1;

  // Set when admitted (again after a preemption).
  std::vector<RequestFact> layout;
  /// Local ids of the layout's facts that hold a pin (RequestFact::pinned), in pin order: what
  /// a release reads, 4 bytes a fact instead of the layout's 32.
  std::vector<std::uint32_t> pins;
  std::uint32_t prompt_tokens = 0;   // header + facts + footer + query
  std::uint32_t computed_total = 0;  // tokens that go through the model (incl. recompute)
  std::uint32_t computed_done = 0;
  std::uint32_t present_base = 0;     // KV present without computing (cached header, injected)
  std::uint32_t shared_tokens = 0;    // of those, the replica's shared header (not in own blocks)
  std::uint32_t context = 0;          // KV tokens present now
  std::uint32_t pending_encodes = 0;  // this request's fact encodes not yet planned
  SimTime loads_ready = 0;            // its asynchronous host loads are done (0: none)
  std::uint32_t kv_blocks = 0;        // request-KV blocks held
  bool injected = false;              // first chunk planned
  bool admitted = false;

  std::uint32_t generated = 0;
  SimTime first_scheduled = -1;
  SimTime first_token = -1;
  SimTime finish = -1;
  std::uint32_t preemptions = 0;
  std::uint32_t gpu_hits = 0, host_hits = 0, disk_hits = 0, remote_hits = 0, misses = 0;
  std::uint32_t prefill_tokens = 0;  // computed tokens of the prompt (first admission)

  bool prefill_done() const { return admitted && injected && computed_done == computed_total; }
};

/// Slab of requests; indices stay valid until release(), vectors keep their capacity.
class RequestPool {
 public:
  std::uint32_t acquire() {
    if (!free_.empty()) {
      const auto i = free_.back();
      free_.pop_back();
      return i;
    }
    slab_.emplace_back();
    return static_cast<std::uint32_t>(slab_.size() - 1);
  }
  void release(std::uint32_t i) {
    auto facts = std::move(slab_[i].facts);
    auto layout = std::move(slab_[i].layout);
    auto pins = std::move(slab_[i].pins);
    facts.clear();
    layout.clear();
    pins.clear();
    slab_[i] = Request{};
    slab_[i].facts = std::move(facts);
    slab_[i].layout = std::move(layout);
    slab_[i].pins = std::move(pins);
    free_.push_back(i);
  }
  Request& operator[](std::uint32_t i) { return slab_[i]; }
  const Request& operator[](std::uint32_t i) const { return slab_[i]; }
  std::size_t in_use() const { return slab_.size() - free_.size(); }

 private:
  std::vector<Request> slab_;
  std::vector<std::uint32_t> free_;
};

}  // namespace inferscale
