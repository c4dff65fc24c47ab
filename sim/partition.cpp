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
  if (run.serving.mode == ServingMode::kKvInject &&
      (run.node.gpus > 0 || run.store.disk.enabled || run.store.remote.enabled)) {
    return "nodes (node:) and the disk and remote tiers cannot be partitioned over processes "
           "yet (a node's tiers are shared by its replicas, the remote store by the fleet): run "
           "it in one process";
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

int compare_order(SimTime ta, std::span<const SimTime> a, std::uint64_t kick_a, SimTime tb,
                  std::span<const SimTime> b, std::uint64_t kick_b) {
  if (ta != tb) return ta < tb ? -1 : 1;
  std::size_t i = a.size(), j = b.size();
  while (i > 0 && j > 0) {
    --i;
    --j;
    if (a[i] != b[j]) return a[i] < b[j] ? -1 : 1;
    if ((i == 0) != (j == 0)) return i == 0 ? 1 : -1;
  }
  return kick_a < kick_b ? -1 : 1;
}

namespace {

/// A group's fixed part in an order file; `added` chain starts follow it.
struct GroupHead {
  SimTime time;
  std::uint64_t kick;
  std::uint32_t replica;
  std::uint32_t rows;
  std::uint32_t restart;  // 1: the chain is the `added` starts; 0: they extend the last one
  std::uint32_t added;
};

}  // namespace

OrderLog::OrderLog(const std::string& path) : path_(path) {
  if (path.empty()) return;
  f_ = std::fopen(path.c_str(), "wb");
  if (f_ == nullptr) throw InputError(path, std::string("cannot write: ") + std::strerror(errno));
}

OrderLog::~OrderLog() {
  if (f_ != nullptr) std::fclose(f_);
}

void OrderLog::add(SimTime time, int replica, const std::vector<SimTime>& starts,
                   std::uint64_t kick, std::uint32_t rows) {
  if (std::size_t(replica) >= logged_.size()) logged_.resize(std::size_t(replica) + 1);
  Logged& l = logged_[std::size_t(replica)];
  // A chain grows until its replica is idle; the next one starts at another kick.
  const bool restart = l.kick != kick || l.length > starts.size();
  const std::size_t from = restart ? 0 : l.length;
  const GroupHead h{time,
                    kick,
                    static_cast<std::uint32_t>(replica),
                    rows,
                    restart ? 1u : 0u,
                    static_cast<std::uint32_t>(starts.size() - from)};
  const bool ok =
      std::fwrite(&h, sizeof h, 1, f_) == 1 &&
      (h.added == 0 || std::fwrite(starts.data() + from, sizeof(SimTime), h.added, f_) == h.added);
  if (!ok) throw InputError(path_, std::string("write failed: ") + std::strerror(errno));
  l.kick = kick;
  l.length = starts.size();
}

void OrderLog::close() {
  if (f_ == nullptr) return;
  const bool bad = std::fclose(f_) != 0;
  f_ = nullptr;
  if (bad) throw InputError(path_, std::string("write failed: ") + std::strerror(errno));
}

namespace {

/// One part's rows and order file, read in step, with its replicas' chains rebuilt.
struct Part {
  std::ifstream rows;
  std::FILE* keys = nullptr;
  GroupHead head{};
  std::vector<std::vector<SimTime>> chains;  // by replica
  bool have = false;
  std::string path;
  ~Part() {
    if (keys != nullptr) std::fclose(keys);
  }
  const std::vector<SimTime>& chain() const { return chains[head.replica]; }
  bool next_key() {
    have = std::fread(&head, sizeof head, 1, keys) == 1;
    if (!have) return false;
    if (head.replica >= chains.size()) chains.resize(std::size_t(head.replica) + 1);
    auto& c = chains[head.replica];
    if (head.restart != 0) c.clear();
    const std::size_t at = c.size();
    c.resize(at + head.added);
    if (head.added > 0 &&
        std::fread(c.data() + at, sizeof(SimTime), head.added, keys) != head.added) {
      throw InputError(path, "its order file is cut short");
    }
    return true;
  }
};

/// Merges the parts' rows after `header_lines` lines of each (the first part's are kept), in
/// the fleet's order; `emit` writes a row (told whether it is the first).
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
    const Part& x = *ps[a];
    const Part& y = *ps[b];
    return compare_order(x.head.time, x.chain(), x.head.kick, y.head.time, y.chain(), y.head.kick) >
           0;
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
    for (std::uint32_t r = 0; r < p.head.rows; ++r) {
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
