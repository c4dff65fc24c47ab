#include "sim/partition.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <queue>
#include <stdexcept>

#include "policies/registry.h"
#include "traces/error.h"

namespace inferscale {

std::string partition_refusal(const RunConfig& run) {
  if (run.router != RouterKind::kUserAffinity) {
    return std::string("router '") + to_string(run.router) +
           "' cannot be partitioned over processes: its choice of replica depends on the "
           "whole fleet (least_loaded reads every replica's load, round_robin counts every "
           "request); use router: user_affinity, which sends a user's requests to one replica by "
           "the user alone";
  }
  if (run.trace.kind != "file" && run.trace.options.has("arrival") &&
      run.trace.options.text("arrival", "") == "closed_loop") {
    return "a closed-loop trace cannot be partitioned over processes (a user's next request "
           "waits on the whole fleet's answers): run it in one process";
  }
  if (run.serving.mode == ServingMode::kKvInject && run.store.host.enabled &&
      run.store.host.async_loads) {
    return "store.host.async_loads cannot be partitioned over processes yet (a replica waking "
           "for a finished load is ordered by the whole fleet's events): run it in one process";
  }
  if (run.executor.kind != "cost_model" && run.executor.kind != "calibrated") {
    return "executor '" + run.executor.kind +
           "' cannot be partitioned over processes: only the cost_model and calibrated "
           "executors price a step from the plan alone";
  }
  const auto offline = [](const TierConfig& t) {
    const EvictionInfo* info = PolicyRegistry::find_eviction(t.eviction);
    return t.enabled && info != nullptr && info->offline;
  };
  if (run.serving.mode == ServingMode::kKvInject &&
      (offline(run.store.gpu) || offline(run.store.host))) {
    return "an offline eviction policy (it reads the trace's future) cannot be partitioned over "
           "processes: run it in one process";
  }
  return "";
}

int compare_order(const OrderKey& a, const OrderKey& b) {
  if (a.time != b.time) return a.time < b.time ? -1 : 1;
  // As chain_after (sim_events.h): the latest starts first; a chain at its kick comes after a
  // step end at the same time; two kicks by the records' trace order.
  const std::uint32_t n = std::min(a.depth, b.depth);
  for (std::uint32_t k = 0; k < n; ++k) {
    if (k >= kOrderDepth) {
      throw std::runtime_error(
          "two replicas' steps tie at the same times for more than " + std::to_string(kOrderDepth) +
          " steps: the order of their rows is not known to the partitioned run; run it in one "
          "process");
    }
    if (a.starts[k] != b.starts[k]) return a.starts[k] < b.starts[k] ? -1 : 1;
    const bool a_kick = k + 1 == a.depth, b_kick = k + 1 == b.depth;
    if (a_kick != b_kick) return a_kick ? 1 : -1;
  }
  return a.kick < b.kick ? -1 : 1;
}

OrderLog::OrderLog(const std::string& path) : path_(path) {
  if (path.empty()) return;
  f_ = std::fopen(path.c_str(), "wb");
  if (f_ == nullptr) throw InputError(path, std::string("cannot write: ") + std::strerror(errno));
}

OrderLog::~OrderLog() {
  if (f_ != nullptr) std::fclose(f_);
}

void OrderLog::add(SimTime time, const std::vector<SimTime>& starts, std::uint64_t kick,
                   std::uint32_t rows) {
  OrderKey k;
  k.time = time;
  k.kick = kick;
  k.depth = static_cast<std::uint32_t>(starts.size());
  k.rows = rows;
  for (std::uint32_t i = 0; i < kOrderDepth && i < k.depth; ++i) {
    k.starts[i] = starts[starts.size() - 1 - i];
  }
  if (std::fwrite(&k, sizeof k, 1, f_) != 1) {
    throw InputError(path_, std::string("write failed: ") + std::strerror(errno));
  }
}

void OrderLog::close() {
  if (f_ == nullptr) return;
  const bool bad = std::fclose(f_) != 0;
  f_ = nullptr;
  if (bad) throw InputError(path_, std::string("write failed: ") + std::strerror(errno));
}

namespace {

/// One part's rows and keys, read in step.
struct Part {
  std::ifstream rows;
  std::FILE* keys = nullptr;
  OrderKey key;
  bool have = false;
  std::string path;
  ~Part() {
    if (keys != nullptr) std::fclose(keys);
  }
  bool next_key() {
    have = std::fread(&key, sizeof key, 1, keys) == 1;
    return have;
  }
};

/// Merges the parts' rows after `header_lines` lines of each (the first part's are kept), in
/// key order; `row_end` turns a stored row into what the merged file holds before the next.
template <typename Emit>
void merge_rows(const std::vector<std::string>& parts, const std::vector<std::string>& orders,
                std::size_t header_lines, std::ofstream& out, const std::string& out_path,
                Emit&& emit) {
  std::vector<std::unique_ptr<Part>> ps;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    auto p = std::make_unique<Part>();
    p->path = parts[i];
    p->rows.open(parts[i], std::ios::binary);
    p->keys = std::fopen(orders[i].c_str(), "rb");
    if (!p->rows || p->keys == nullptr) throw InputError(parts[i], "cannot read a part's rows");
    std::string line;
    for (std::size_t h = 0; h < header_lines; ++h) {
      if (!std::getline(p->rows, line)) throw InputError(parts[i], "a part without its header");
      if (i == 0) out << line << '\n';
    }
    p->next_key();
    ps.push_back(std::move(p));
  }
  auto after = [&](std::size_t a, std::size_t b) {
    return compare_order(ps[a]->key, ps[b]->key) > 0;
  };
  std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(after)> heap(after);
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (ps[i]->have) heap.push(i);
  }
  std::string line;
  bool first = true;
  while (!heap.empty()) {
    const std::size_t i = heap.top();
    heap.pop();
    Part& p = *ps[i];
    for (std::uint32_t r = 0; r < p.key.rows; ++r) {
      if (!std::getline(p.rows, line)) throw InputError(p.path, "fewer rows than order keys");
      emit(line, first);
      first = false;
    }
    if (p.next_key()) heap.push(i);
  }
  for (const auto& p : ps) {
    if (std::getline(p->rows, line) && !line.empty() && line[0] != ']') {
      throw InputError(p->path, "more rows than order keys");
    }
  }
  if (!out) throw InputError(out_path, std::string("write failed: ") + std::strerror(errno));
}

}  // namespace

void merge_requests_csv(const std::vector<std::string>& parts,
                        const std::vector<std::string>& orders, const std::string& out_path) {
  std::ofstream out(out_path, std::ios::binary);
  merge_rows(parts, orders, 1, out, out_path,
             [&](const std::string& row, bool) { out << row << '\n'; });
  out.close();
  if (!out) throw InputError(out_path, std::string("write failed: ") + std::strerror(errno));
}

void merge_timeline(const std::vector<std::string>& parts, const std::vector<std::string>& orders,
                    const std::string& out_path) {
  std::ofstream out(out_path, std::ios::binary);
  // Each part: a header line, then a step a line (all but the last ending in ','), then "]}".
  bool any = false;
  merge_rows(parts, orders, 1, out, out_path, [&](std::string row, bool first) {
    if (!row.empty() && row.back() == ',') row.pop_back();
    out << (first ? "" : ",\n") << row;
    any = true;
  });
  out << "\n]}\n";
  (void)any;
  out.close();
  if (!out) throw InputError(out_path, std::string("write failed: ") + std::strerror(errno));
}

}  // namespace inferscale
