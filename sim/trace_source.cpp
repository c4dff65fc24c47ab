#include "sim/trace_source.h"

#include <filesystem>
#include <memory>
#include <sstream>

#include "sim/config/yaml_view.h"
#include "sim/router.h"
#include "sim/warm_window.h"
#include "traces/arrival_replay.h"
#include "traces/locomo.h"
#include "traces/locomo_import.h"
#include "traces/synthetic.h"
#include "traces/writer.h"

namespace inferscale {

namespace fs = std::filesystem;

namespace {

void read_arrival(const YamlView& v, ArrivalOptions& a) {
  const auto mode = v.choice("arrival", a.mode == ArrivalMode::kOpen ? "poisson" : "closed_loop",
                             {"poisson", "gamma", "closed_loop"});
  a.mode = mode == "closed_loop" ? ArrivalMode::kClosedLoop : ArrivalMode::kOpen;
  a.cv = mode == "gamma" ? v.number("cv", 1.0, 0, 100) : 1.0;
  if (mode != "gamma" && v.has("cv")) v.fail("cv", "cv applies to 'arrival: gamma'");
  a.rate_per_s = v.number("rate", a.rate_per_s, 1e-9, 1e12);
  a.concurrency = static_cast<std::uint32_t>(v.integer("concurrency", a.concurrency, 0, 1 << 30));
  a.think_time_s = v.number("think_time_s", a.think_time_s, 0, 1e9);
}

SyntheticOptions synthetic_options(const YamlView& v, std::uint64_t seed) {
  v.reject_unknown({"users",
                    "requests",
                    "facts_per_user",
                    "facts_per_user_spread",
                    "fact_words",
                    "fact_words_sd",
                    "sessions_min",
                    "sessions_max",
                    "live_sessions",
                    "query_words",
                    "query_words_sd",
                    "output_tokens",
                    "k",
                    "tokens_per_word",
                    "user_zipf",
                    "fact_zipf",
                    "context_turns",
                    "turns_per_session",
                    "turn_words",
                    "turn_words_sd",
                    "arrival",
                    "rate",
                    "concurrency",
                    "think_time_s",
                    "start_s",
                    "seed",
                    "write_trace",
                    "cv",
                    "replay",
                    "replay_speedup"});
  SyntheticOptions o;
  o.users = static_cast<std::uint64_t>(v.integer("users", std::int64_t(o.users), 1, INT64_MAX));
  o.requests =
      static_cast<std::uint64_t>(v.integer("requests", std::int64_t(o.requests), 0, INT64_MAX));
  o.facts_per_user = v.number("facts_per_user", o.facts_per_user, 1, 1e9);
  o.facts_per_user_spread = v.number("facts_per_user_spread", o.facts_per_user_spread, 0, 1e9);
  o.fact_words = v.number("fact_words", o.fact_words, 1, 1e6);
  o.fact_words_sd = v.number("fact_words_sd", o.fact_words_sd, 0, 1e6);
  o.sessions_min =
      static_cast<std::uint32_t>(v.integer("sessions_min", o.sessions_min, 1, 1 << 20));
  o.sessions_max =
      static_cast<std::uint32_t>(v.integer("sessions_max", o.sessions_max, 1, 1 << 20));
  o.live_sessions =
      static_cast<std::uint32_t>(v.integer("live_sessions", o.live_sessions, 0, 1 << 20));
  o.query_words = v.number("query_words", o.query_words, 1, 1e6);
  o.query_words_sd = v.number("query_words_sd", o.query_words_sd, 0, 1e6);
  o.output_tokens =
      static_cast<std::uint32_t>(v.integer("output_tokens", o.output_tokens, 1, 1 << 24));
  o.k = static_cast<std::uint32_t>(v.integer("k", o.k, 0, 1 << 16));
  o.tokens_per_word = v.number("tokens_per_word", o.tokens_per_word, 1e-3, 100);
  o.user_zipf = v.number("user_zipf", o.user_zipf, 0, 10);
  o.fact_zipf = v.number("fact_zipf", o.fact_zipf, 0, 10);
  o.context_turns =
      static_cast<std::uint32_t>(v.integer("context_turns", o.context_turns, 0, 1 << 16));
  o.turns_per_session = v.number("turns_per_session", o.turns_per_session, 1, 1e6);
  o.turn_words = v.number("turn_words", o.turn_words, 1, 1e6);
  o.turn_words_sd = v.number("turn_words_sd", o.turn_words_sd, 0, 1e6);
  read_arrival(v, o.arrival);
  o.start_s = v.number("start_s", o.start_s, 0, 1e12);
  o.seed = static_cast<std::uint64_t>(v.integer("seed", std::int64_t(seed), 0, INT64_MAX));
  if (v.has("replay")) {
    const std::string path = v.text("replay", "");
    if (!path_exists(path, v.where("replay"))) {
      v.fail("replay", "arrival trace '" + path + "' not found");
    }
    o.replay = std::make_shared<const std::vector<ReplayedRequest>>(read_arrival_csv(path));
    o.replay_speedup = v.number("replay_speedup", 1, 1e-9, 1e9);
  } else if (v.has("replay_speedup")) {
    v.fail("replay_speedup", "replay_speedup applies to 'replay: FILE.csv'");
  }
  try {
    validate_synthetic_options(o);
  } catch (const InputError& e) {
    throw InputError(v.where(), e.what());
  }
  return o;
}

LocomoImportOptions locomo_options(const YamlView& v, std::uint64_t seed, std::string& data) {
  v.reject_unknown({"data", "users", "questions_per_user", "k", "tokens_per_word", "output_tokens",
                    "max_context_turns", "categories", "history_span_s", "start_s", "arrival",
                    "rate", "concurrency", "think_time_s", "seed", "text", "initial_memory", "cv"});
  LocomoImportOptions o;
  data = v.text("data", "");
  o.users = static_cast<std::uint64_t>(v.integer("users", std::int64_t(o.users), 1, 1 << 30));
  o.questions_per_user =
      static_cast<std::uint32_t>(v.integer("questions_per_user", o.questions_per_user, 0, 1 << 30));
  o.k = static_cast<std::uint32_t>(v.integer("k", o.k, 0, 1 << 16));
  o.tokens_per_word = v.number("tokens_per_word", o.tokens_per_word, 1e-3, 100);
  o.output_tokens =
      static_cast<std::uint32_t>(v.integer("output_tokens", o.output_tokens, 1, 1 << 24));
  o.max_context_turns =
      static_cast<std::uint32_t>(v.integer("max_context_turns", o.max_context_turns, 0, 1 << 16));
  if (v.is_sequence("categories")) {
    o.categories.clear();
    for (const auto& c : v.node("categories")) o.categories.push_back(c.as<int>());
  }
  o.history_span_s = v.number("history_span_s", o.history_span_s, 0, 1e12);
  o.start_s = v.number("start_s", o.start_s, -1, 1e12);
  read_arrival(v, o.arrival);
  o.seed = static_cast<std::uint64_t>(v.integer("seed", std::int64_t(seed), 0, INT64_MAX));
  o.text = v.boolean("text", false);
  o.initial_memory = v.boolean("initial_memory", false);
  try {
    validate_locomo_options(o);
  } catch (const InputError& e) {
    throw InputError(v.where(), e.what());
  }
  return o;
}

std::string options_key(const RunConfig& run) {
  // The options as they resolve (every layer's keys, first layer wins), plus the seed.
  std::string text = run.trace.kind;
  const YamlView& v = run.trace.options;
  for (const auto& k : v.keys()) {
    if (k == "write_trace") continue;  // how, not what
    YAML::Emitter e;
    e << YAML::Flow << v.node(k);
    text += ";" + k + "=" + e.c_str();
  }
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a: stable across builds
  for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  std::ostringstream os;
  os << run.trace.kind << "-" << std::hex << mix64(h ^ run.seed);
  return os.str();
}

}  // namespace

std::function<std::unique_ptr<RecordStream>()> streamed_trace(
    const RunConfig& run, bool eager_facts, std::function<bool(std::uint64_t user)> keep_user) {
  if (run.trace.kind != "generate") return {};
  const YamlView& v = run.trace.options;
  if (v.boolean("write_trace", false)) return {};
  const auto o = synthetic_options(v, run.seed);
  std::shared_ptr<const WarmWindow> window;
  if (eager_facts) {
    if (auto w = warm_window(run, o)) window = std::make_shared<const WarmWindow>(std::move(*w));
  }
  return [o, eager_facts, keep_user, window]() -> std::unique_ptr<RecordStream> {
    auto stream = std::make_unique<SyntheticStream>(o, !eager_facts || window, keep_user);
    if (window) {
      stream->declare_at_start([window](std::uint64_t u) { return window->inserted(u); },
                               window->first);
    }
    return stream;
  };
}

void check_trace_source(const RunConfig& run) {
  if (run.trace.kind == "file") return;
  const YamlView& v = run.trace.options;
  if (run.trace.kind == "generate") {
    synthetic_options(v, run.seed);
  } else {
    std::string data;
    locomo_options(v, run.seed, data);
    find_locomo(locomo_search(data), v.where("data"));
  }
}

namespace {
/// The generated or imported trace in `cache_dir` (made now unless it is there).
std::string materialize_into(const RunConfig& run, const std::string& cache_dir);
}  // namespace

TraceFolder::TraceFolder(const fs::path& dir) : dir_(dir) {
  std::error_code ec;
  for (fs::path p = dir; !p.empty() && !fs::exists(p, ec) && !ec; p = p.parent_path()) {
    made_ = p;
    if (p == p.parent_path()) break;
  }
  fs::create_directories(dir, ec);
  if (ec) {
    const std::string why = ec.message();
    remove_made();  // those made before the one that failed
    throw InputError(dir.string(), "cannot create the trace folder: " + why);
  }
}

TraceFolder::~TraceFolder() {
  remove_made();
}

void TraceFolder::remove_made() {
  if (made_.empty()) return;
  std::error_code ec;
  for (fs::path p = dir_; fs::remove(p, ec) && p != made_; p = p.parent_path()) {
  }
}

std::string materialize_trace(const RunConfig& run, const std::string& cache_dir) {
  if (run.trace.kind == "file") return run.trace.path;
  TraceFolder folder(cache_dir);  // a plan's <out>/<plan>/.traces/ is made here, before any result
  const std::string path = materialize_into(run, cache_dir);
  folder.keep();
  return path;
}

namespace {

std::string materialize_into(const RunConfig& run, const std::string& cache_dir) {
  const YamlView& v = run.trace.options;
  const std::string path = cache_dir + "/" + options_key(run) + ".jsonl";
  if (run.trace.kind == "generate") {
    const auto o = synthetic_options(v, run.seed);
    if (path_exists(path, cache_dir)) return path;
    TraceWriter w(path);
    generate_synthetic(o, w);
    w.close();
  } else {
    std::string data;
    const auto o = locomo_options(v, run.seed, data);
    if (path_exists(path, cache_dir)) return path;
    const LocomoData d = load_locomo(find_locomo(locomo_search(data), v.where("data")));
    TraceWriter w(path);
    import_locomo(d, o, w);
    w.close();
  }
  return path;
}

}  // namespace

}  // namespace inferscale
