#include "mpi/plan_ranks.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mpi/world.h"
#include "plan/planner.h"
#include "plan/probe_cache.h"
#include "traces/error.h"

namespace inferscale::mpi {

namespace {

using nlohmann::json;

// Messages (JSON text): a worker's ready (one per idle thread), result and error; rank 0's task
// and stop.
enum Tag : int { kReady = 1, kResult = 2, kError = 3, kTask = 4, kStop = 5 };

constexpr auto kPoll = std::chrono::milliseconds(1);

void send_text(const std::string& text, int to, int tag) {
  MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD);
}

/// A message waiting from `from` (MPI_ANY_SOURCE: anyone), if any: its source, tag and text.
bool poll_text(int from, int& source, int& tag, std::string& text) {
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(from, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
  if (flag == 0) return false;
  int n = 0;
  MPI_Get_count(&st, MPI_CHAR, &n);
  text.assign(static_cast<std::size_t>(n), '\0');
  MPI_Recv(text.data(), n, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  source = st.MPI_SOURCE;
  tag = st.MPI_TAG;
  return true;
}

std::string describe(const plan::ProbeTask& t) {
  char b[160];
  std::snprintf(b, sizeof b, "(candidate %zu, %u replicas, load x%.6g, key %s)", t.spec.candidate,
                t.spec.replicas, t.spec.load_factor, t.key.c_str());
  return "probe '" + (t.label.empty() ? t.run_name : t.label) + "' " + b;
}

json task_json(std::uint64_t id, const plan::ProbeTask& t) {
  return json{{"id", id},
              {"run", t.run_name},
              {"sets", t.sets},
              {"users", t.users},
              {"candidate", t.spec.candidate},
              {"replicas", t.spec.replicas},
              {"factor", t.spec.load_factor},
              {"store_bytes_per_gpu", t.store_bytes_per_gpu},
              {"kv_bytes_per_token_per_gpu", t.kv_bytes_per_token_per_gpu},
              {"label", t.label},
              {"key", t.key}};
}

class Runner final : public RankRunner {
 public:
  explicit Runner(unsigned jobs) : jobs_(std::max(1u, jobs)) {
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    working_.assign(static_cast<std::size_t>(size_), "");
  }

  std::vector<plan::ProbeResult> run(const std::vector<const plan::ProbeTask*>& tasks,
                                     const Done& done) override {
    std::vector<plan::ProbeResult> results(tasks.size());
    if (tasks.empty()) return results;
    std::atomic<std::size_t> next{0};
    std::atomic<std::size_t> finished{0};
    std::atomic<bool> failed{false};
    std::mutex failure_mutex;
    std::string failure;
    bool failure_input = false;
    auto fail = [&](const std::string& what, bool input) {
      std::lock_guard lock(failure_mutex);
      if (failed.exchange(true)) return;
      failure = what;
      failure_input = input;
    };
    auto local = [&] {
      for (std::size_t i; !failed && (i = next.fetch_add(1)) < tasks.size();) {
        set_doing("running " + describe(*tasks[i]));
        try {
          results[i] = plan::run_probe(*tasks[i]);
          if (done) done(*tasks[i], results[i]);
        } catch (const InputError& e) {
          fail("rank 0 failed while running " + describe(*tasks[i]) + ": " + e.what(), true);
        } catch (const std::exception& e) {
          fail("rank 0 failed while running " + describe(*tasks[i]) + ": " + e.what(), false);
        }
        ++finished;
      }
    };
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < jobs_; ++t) threads.emplace_back(local);

    // Coordinates: a ready worker gets the next probe; results count as ready.
    const std::uint64_t first_id = next_id_;
    auto hand_out = [&](int worker) {
      const std::size_t i = failed ? tasks.size() : next.fetch_add(1);
      if (i >= tasks.size()) {
        idle_.push_back(worker);
        return;
      }
      working_[std::size_t(worker)] = "running " + describe(*tasks[i]);
      note_workers();
      send_text(task_json(first_id + i, *tasks[i]).dump(), worker, kTask);
    };
    next_id_ += tasks.size();
    std::deque<int> ready;
    ready.swap(idle_);
    for (const int w : ready) hand_out(w);
    set_doing("coordinating the plan's probes");
    while (finished < tasks.size() && !failed) {
      int source = 0, tag = 0;
      std::string text;
      if (!poll_text(MPI_ANY_SOURCE, source, tag, text)) {
        std::this_thread::sleep_for(kPoll);
        continue;
      }
      if (tag == kResult) {
        const json j = json::parse(text);
        const std::size_t i = j.at("id").get<std::uint64_t>() - first_id;
        results.at(i) = plan::probe_result_from_json(j.at("result"));
        if (done) done(*tasks[i], results[i]);
        ++finished;
      } else if (tag == kError) {
        const json j = json::parse(text);
        fail("rank " + std::to_string(source) + " failed while " + working_[std::size_t(source)] +
                 ": " + j.at("what").get<std::string>(),
             j.at("input").get<bool>());
        break;
      }
      if (tag == kResult || tag == kReady) {
        working_[std::size_t(source)].clear();
        note_workers();
        hand_out(source);
      }
    }
    for (auto& t : threads) t.join();
    if (failed) {
      if (failure_input) throw InputError("", failure);
      throw std::runtime_error(failure);
    }
    return results;
  }

  /// For the note printed if this rank is stopped: what each worker was doing.
  void note_workers() {
    std::string text;
    for (int r = 1; r < size_; ++r) {
      if (working_[std::size_t(r)].empty()) continue;
      text += (text.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " was " +
              working_[std::size_t(r)];
    }
    set_others_doing(text);
  }

  void stop_workers() override {
    for (int r = 1; r < size_; ++r) send_text("{}", r, kStop);
  }

 private:
  unsigned jobs_;
  int size_ = 1;
  std::uint64_t next_id_ = 0;
  std::deque<int> idle_;              // workers that asked when nothing was left
  std::vector<std::string> working_;  // by rank: the probe it runs
};

}  // namespace

std::unique_ptr<RankRunner> make_rank_runner(unsigned jobs) {
  return std::make_unique<Runner>(jobs);
}

int run_plan_worker(const plan::PlanConfig& plan, unsigned jobs) {
  jobs = std::max(1u, jobs);
  const RankFault fault = test_rank_fault();
  const int rank = world().rank;
  std::mutex m;
  std::condition_variable cv;
  std::deque<json> inbox;
  std::deque<std::pair<int, std::string>> outbox;  // tag, text
  bool stop = false;
  std::atomic<long> started{0};
  auto work = [&] {
    while (true) {
      json task;
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return stop || !inbox.empty(); });
        if (inbox.empty()) return;
        task = std::move(inbox.front());
        inbox.pop_front();
      }
      std::pair<int, std::string> reply;
      char what[160];
      std::snprintf(what, sizeof what, "starting probe '%s' (candidate %zu, %u replicas)",
                    task.value("label", std::string()).c_str(),
                    task.value("candidate", std::size_t{0}), task.value("replicas", 0u));
      set_doing(what);
      try {
        fault.fail_if_due(rank, started++, "probes");
        plan::Candidate c;
        c.run = task.at("run");
        c.sets = task.at("sets").get<std::vector<std::string>>();
        c.label = task.at("label");
        c.store_bytes_per_gpu = task.at("store_bytes_per_gpu");
        c.kv_bytes_per_token_per_gpu = task.at("kv_bytes_per_token_per_gpu");
        plan::ProbeSpec spec{task.at("candidate").get<std::size_t>(),
                             task.at("replicas").get<std::uint32_t>(),
                             task.at("factor").get<double>()};
        const plan::ProbeTask t =
            plan::make_probe_task(plan, c, task.at("users").get<std::uint64_t>(), spec);
        set_doing("running " + describe(t));
        if (t.key != task.at("key").get<std::string>()) {
          throw InputError(plan.file, "rank " + std::to_string(rank) +
                                          " resolves this probe to another configuration: are "
                                          "the plan and its files the same on every node?");
        }
        const plan::ProbeResult r = plan::run_probe(t);
        reply = {kResult,
                 json{{"id", task.at("id")}, {"result", plan::probe_result_json(r)}}.dump()};
      } catch (const InputError& e) {
        reply = {kError, json{{"what", e.what()}, {"input", true}}.dump()};
      } catch (const std::exception& e) {
        reply = {kError, json{{"what", e.what()}, {"input", false}}.dump()};
      }
      set_doing("waiting for a probe");
      std::lock_guard lock(m);
      outbox.push_back(std::move(reply));
    }
  };
  set_doing("waiting for a probe");
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < jobs; ++t) threads.emplace_back(work);
  for (unsigned t = 0; t < jobs; ++t) send_text("{}", 0, kReady);
  bool stopping = false;
  while (!stopping) {
    bool busy = false;
    {
      std::deque<std::pair<int, std::string>> out;
      {
        std::lock_guard lock(m);
        out.swap(outbox);
      }
      for (const auto& [tag, text] : out) send_text(text, 0, tag);
      busy = !out.empty();
    }
    int source = 0, tag = 0;
    std::string text;
    if (poll_text(0, source, tag, text)) {
      busy = true;
      std::lock_guard lock(m);
      if (tag == kTask) {
        inbox.push_back(json::parse(text));
      } else if (tag == kStop) {
        stop = true;
        stopping = true;
      }
      cv.notify_all();
    }
    if (!busy) std::this_thread::sleep_for(kPoll);
  }
  for (auto& t : threads) t.join();
  return 0;
}

}  // namespace inferscale::mpi
