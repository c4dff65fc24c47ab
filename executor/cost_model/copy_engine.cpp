#include "executor/cost_model/copy_engine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace inferscale {

CopyEngineModel::CopyEngineModel(CopyEngineParams params) : params_(params) {
  if (!(params_.bytes_per_ns > 0) || !(params_.duplex > 0) || params_.duplex > 1 ||
      params_.fact_ns < 0 || params_.block_ns < 0 || params_.issue_ns < 0 ||
      params_.batch_facts == 0) {
    throw std::invalid_argument(
        "copy engine: rate and duplex must be positive (duplex at most 1), fact_ns, block_ns "
        "and issue_ns non-negative, batch_facts at least 1");
  }
}

std::uint64_t CopyEngineModel::push(Lane lane, double work_ns, SimTime issued,
                                    std::uint64_t after) {
  const std::uint64_t ticket = 2 * ++batches_ + std::uint64_t(lane);
  lanes_[lane].push_back(Batch{ticket, work_ns, issued, after});
  return ticket;
}

double CopyEngineModel::batch_ns(const std::vector<FactLoad>& facts, std::size_t begin,
                                 double* bytes) const {
  const std::size_t end = std::min(facts.size(), begin + params_.batch_facts);
  double work = 0;
  for (std::size_t j = begin; j < end; ++j) {
    work += copy_ns(facts[j]);
    if (bytes != nullptr) *bytes += double(facts[j].bytes);
  }
  return work;
}

SimTime CopyEngineModel::issue(const BatchPlan& plan, SimTime now) {
  const std::size_t n = plan.async_offloads.size() + plan.async_loads.size();
  if (n == 0) return 0;
  // A lane's past is settled up to clock_: nothing issued now runs before it.
  const SimTime at = std::max<SimTime>(now, SimTime(std::ceil(clock_)));
  const std::size_t k = params_.batch_facts;
  // The executor's thread hands a batch to its lane once it has issued the batch's copies and
  // those of every batch before it (the offloads first): the batch ending at the n-th copy may
  // start issue_ns x n after `at`.
  auto issued_at = [&](std::size_t copies) {
    return at + SimTime(std::llround(params_.issue_ns * double(copies)));
  };
  offload_ticket_.clear();
  for (std::size_t i = 0; i < plan.async_offloads.size(); i += k) {
    const double work = batch_ns(plan.async_offloads, i);
    const std::size_t end = std::min(plan.async_offloads.size(), i + k);
    const std::uint64_t ticket = push(kToHost, work, issued_at(end), 0);
    for (std::size_t j = i; j < end; ++j) {
      offload_ticket_[plan.async_offloads[j].fact] = {ticket, plan.async_offloads[j].bytes};
    }
  }
  // The blocks a load takes: the executor frees the step's evictions in reverse and its pool
  // hands out the blocks freed last first, so the loads take the evicted facts' blocks in the
  // plan's eviction order, then blocks that were free before the step. A load batch waits for
  // the offload batches of the evicted facts whose blocks it takes (the executor tracks it block
  // by block; here by bytes, a fact evicted without an offload counting as a mean load). An
  // offload of a fact that stays resident frees nothing and holds no load back.
  double load_total = 0;
  for (const FactLoad& l : plan.async_loads) load_total += double(l.bytes);
  freed_.clear();
  double freed = 0;  // bytes of evicted blocks the loads take; the rest were free before
  if (!offload_ticket_.empty() && !plan.async_loads.empty()) {
    const double mean_load = load_total / double(plan.async_loads.size());
    std::uint64_t ticket = 0;
    for (FactId f : plan.evictions) {
      if (freed >= load_total) break;
      const auto it = offload_ticket_.find(f);
      if (it != offload_ticket_.end()) ticket = std::max(ticket, it->second.first);
      freed_.emplace_back(freed, ticket);  // the blocks from `freed` on wait for `ticket`
      freed += it != offload_ticket_.end() ? double(it->second.second) : mean_load;
    }
  }
  double loaded = 0;
  std::size_t mark = 0;
  for (std::size_t i = 0; i < plan.async_loads.size(); i += k) {
    const bool takes_freed = loaded < freed;
    const double work = batch_ns(plan.async_loads, i, &loaded);
    // The last eviction whose blocks start before this batch's end.
    while (mark + 1 < freed_.size() && freed_[mark + 1].first < loaded * (1 - 1e-12)) ++mark;
    const std::uint64_t after = takes_freed ? freed_[mark].second : 0;
    const std::size_t end = std::min(plan.async_loads.size(), i + k);
    const std::uint64_t ticket =
        push(kToDevice, work, issued_at(plan.async_offloads.size() + end), after);
    for (std::size_t j = i; j < end; ++j) pending_[plan.async_loads[j].fact] = ticket;
  }
  return issued_at(n) - at;  // the host's time issuing all of them
}

bool CopyEngineModel::busy_at(SimTime t) {
  run(0, double(t));
  return !lanes_[0].empty() || !lanes_[1].empty();
}

double CopyEngineModel::run(std::uint64_t ticket, double until) {
  auto more = [&] {
    if (ticket != 0) return !done(ticket);
    return clock_ < until && (!lanes_[0].empty() || !lanes_[1].empty());
  };
  while (more()) {
    bool runs[2];
    double next_issue = std::numeric_limits<double>::infinity();
    for (int l = 0; l < 2; ++l) {
      const std::deque<Batch>& q = lanes_[l];
      runs[l] = !q.empty() && double(q.front().issued) <= clock_ && done(q.front().after);
      if (!q.empty() && double(q.front().issued) > clock_) {
        next_issue = std::min(next_issue, double(q.front().issued));
      }
    }
    if (!runs[0] && !runs[1]) {
      if (!std::isfinite(next_issue)) {
        throw std::logic_error("copy engine: a ticket waited for was never issued");
      }
      clock_ = ticket == 0 ? std::min(next_issue, until) : next_issue;
      continue;
    }
    const double rate = runs[0] && runs[1] ? params_.duplex : 1.0;
    double dt = next_issue - clock_;
    if (ticket == 0) dt = std::min(dt, until - clock_);
    for (int l = 0; l < 2; ++l) {
      if (runs[l]) dt = std::min(dt, lanes_[l].front().work_ns / rate);
    }
    clock_ += dt;
    for (int l = 0; l < 2; ++l) {
      if (!runs[l]) continue;
      Batch& b = lanes_[l].front();
      b.work_ns -= dt * rate;
      if (b.work_ns <= 1e-6) {
        last_done_[l] = b.ticket;
        lanes_[l].pop_front();
      }
    }
  }
  return clock_;
}

SimTime CopyEngineModel::ready(const BatchPlan& plan, SimTime now) {
  if (pending_.empty()) return now;
  std::uint64_t need = 0;
  for (const PrefillItem& p : plan.prefills) {
    if (!p.first_chunk) continue;
    for (std::uint32_t i = p.facts_begin; i < p.facts_end && i < plan.prompt_facts.size(); ++i) {
      const auto it = pending_.find(plan.prompt_facts[i].fact);
      if (it != pending_.end()) need = std::max(need, it->second);
    }
  }
  SimTime t = now;
  if (need != 0 && !done(need)) {
    t = std::max(now, SimTime(std::ceil(run(need))));
  }
  // The executor forgets the tickets it waited for; loads known done are forgotten too.
  const std::uint64_t forget = std::max(need, last_done_[kToDevice]);
  std::erase_if(pending_, [forget](const auto& kv) { return kv.second <= forget; });
  return t;
}

}  // namespace inferscale
