// `inferscale trace ...`: import, generate and describe traces. Options are parsed here; the
// work is in traces/ (locomo_import, synthetic, stats).
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "sim/config/experiment.h"
#include "sim/progress.h"
#include "traces/binary_trace.h"
#include "traces/error.h"
#include "traces/locomo_import.h"
#include "traces/stats.h"
#include "traces/synthetic.h"

namespace inferscale::cli {

namespace {

/// "1,2,3" -> {1, 2, 3}.
std::vector<int> parse_categories(const std::string& text) {
  std::vector<int> out;
  std::size_t i = 0;
  while (i <= text.size()) {
    const auto comma = text.find(',', i);
    const auto piece = text.substr(i, comma == std::string::npos ? std::string::npos : comma - i);
    if (piece.size() != 1 || piece[0] < '1' || piece[0] > '5') {
      throw InputError("--categories",
                       "expected a comma-separated list of categories 1..5, got '" + text + "'");
    }
    out.push_back(piece[0] - '0');
    if (comma == std::string::npos) break;
    i = comma + 1;
  }
  return out;
}

ArrivalMode arrival_mode(const std::string& name) {
  return name == "closed_loop" ? ArrivalMode::kClosedLoop : ArrivalMode::kOpen;
}

/// Options every producer shares: arrivals and tokens.
struct Common {
  std::string out;
  std::string arrival = "poisson";
};

void add_arrival_options(CLI::App* cmd, Common& c, ArrivalOptions& a) {
  cmd->add_option("--arrival", c.arrival,
                  "poisson (open loop at --rate), gamma (open loop, gaps of CV --cv) or "
                  "closed_loop")
      ->check(CLI::IsMember({"poisson", "gamma", "closed_loop"}))
      ->capture_default_str();
  cmd->add_option("--cv", a.cv, "gamma: coefficient of variation of the gaps (0: constant)")
      ->capture_default_str();
  cmd->add_option("--rate", a.rate_per_s, "open loop: total requests per second")
      ->capture_default_str();
  cmd->add_option("--concurrency", a.concurrency,
                  "closed loop: users with a request in flight (default: every user)");
  cmd->add_option("--think-time-s", a.think_time_s,
                  "closed loop: seconds between an answer and the user's next question")
      ->capture_default_str();
}

FILE* report_stream(const std::string& out) {
  return out == "-" ? stderr : stdout;
}

/// The progress line of a command that streams a trace into a file: `phase`, counting records.
/// `work` runs with the function that tells it how far it is.
template <class Work>
auto with_progress(bool enabled, const char* phase, Work work) {
  Progress progress(enabled);
  progress.phase(phase, "records");
  auto result = work(
      [&progress](double fraction, std::uint64_t records) { progress.update(fraction, records); });
  progress.finish();
  return result;
}

void add_no_progress(CLI::App* cmd, bool& no_progress) {
  cmd->add_flag("--no-progress", no_progress, "no progress line on stderr");
}

void add_import_locomo(CLI::App* trace, Action& action) {
  auto o = std::make_shared<LocomoImportOptions>();
  auto c = std::make_shared<Common>();
  auto data = std::make_shared<std::string>();
  auto categories = std::make_shared<std::string>("1,2,3,4,5");
  auto start_s = std::make_shared<double>(-1);
  auto no_text = std::make_shared<bool>(false);
  auto* cmd = trace->add_subcommand(
      "import-locomo",
      "Build a trace from LoCoMo: users replicate its speakers, facts become memory writes, "
      "questions become requests retrieving BM25 top-k facts");
  cmd->add_option("--data", *data,
                  "LoCoMo: a directory of <id>.json files or one locomo10.json (default: "
                  "$INFERSCALE_LOCOMO, else data/locomo10/ in the repository, else "
                  "../shared/data/locomo10 beside it)");
  cmd->add_option("--out", c->out, "trace file to write ('-': stdout)")->required();
  cmd->add_option("--users", o->users,
                  "users; user i replays conversation i % C, speaker (i / C) % 2")
      ->capture_default_str();
  cmd->add_option("--questions-per-user", o->questions_per_user,
                  "questions per user (0: all of its questions; else a seeded choice, cycling)")
      ->capture_default_str();
  cmd->add_option("--k", o->k, "facts retrieved per request")->capture_default_str();
  cmd->add_option("--tokens-per-word", o->tokens_per_word, "token counts = words * this")
      ->capture_default_str();
  cmd->add_option("--output-tokens", o->output_tokens, "answer tokens per request")
      ->capture_default_str();
  cmd->add_option("--max-context-turns", o->max_context_turns,
                  "preceding turns' token counts kept per fact (context_tokens)")
      ->capture_default_str();
  cmd->add_option("--categories", *categories, "QA categories to ask, comma-separated")
      ->capture_default_str();
  cmd->add_option("--history-span-s", o->history_span_s,
                  "memory writes: each conversation's session dates mapped onto [0, this]")
      ->capture_default_str();
  auto* start_opt =
      cmd->add_option("--start-s", *start_s, "first request time (default: --history-span-s)");
  cmd->add_option("--seed", o->seed, "seed of every random choice")->capture_default_str();
  cmd->add_flag("--no-text", *no_text, "leave fact and question text out of the trace");
  cmd->add_flag("--initial-memory", o->initial_memory,
                "facts as `fact` records at t=0 (memory that exists before the trace) instead "
                "of memory writes at the sessions' dates");
  o->arrival.rate_per_s = 10;
  add_arrival_options(cmd, *c, o->arrival);
  cmd->callback([&action, o, c, data, categories, start_s, start_opt, no_text] {
    action = [o, c, data, categories, start_s, given = start_opt->count() > 0, no_text] {
      o->categories = parse_categories(*categories);
      o->arrival.mode = arrival_mode(c->arrival);
      if (given && !(*start_s >= 0)) throw InputError("--start-s", "expected seconds >= 0");
      o->start_s = given ? *start_s : -1;
      o->text = !*no_text;
      validate_locomo_options(*o);
      const auto locomo = load_locomo(find_locomo(locomo_search(*data), "--data"));
      TraceWriter w(c->out);
      const auto r = import_locomo(locomo, *o, w);
      w.close();
      std::fprintf(report_stream(c->out),
                   "wrote %s: %zu conversations, %llu users, %llu %s, %llu requests\n",
                   c->out.c_str(), locomo.conversations.size(),
                   static_cast<unsigned long long>(r.users),
                   static_cast<unsigned long long>(r.facts),
                   o->initial_memory ? "facts at t=0" : "memory writes",
                   static_cast<unsigned long long>(r.requests));
      if (r.users_without_questions > 0) {
        std::fprintf(report_stream(c->out), "note: %llu users have no question to ask\n",
                     static_cast<unsigned long long>(r.users_without_questions));
      }
      return 0;
    };
  });
}

void add_stats(CLI::App* trace, Action& action) {
  auto file = std::make_shared<std::string>();
  auto o = std::make_shared<StatsOptions>();
  auto json = std::make_shared<bool>(false);
  auto model = std::make_shared<std::string>();
  auto* cmd = trace->add_subcommand(
      "stats",
      "Describe a trace: users, facts, requests, k, tokens, fact KV per user, arrival "
      "rate, BM25 recall@k against LoCoMo evidence");
  cmd->add_option("FILE", *file, "trace (JSONL)")->required();
  auto* bytes = cmd->add_option("--kv-bytes-per-token", o->kv_bytes_per_token,
                                "fact KV bytes per token (default: Llama-3.1-8B in bf16)")
                    ->capture_default_str();
  cmd->add_option("--model", *model,
                  "take the KV bytes per token from a model: a preset of configs/models/ "
                  "(llama-3.1-8b, mistral-7b, qwen2.5-7b, smollm2-135m) or a model YAML")
      ->excludes(bytes);
  cmd->add_flag("--json", *json, "print one JSON object instead of text");
  cmd->callback([&action, file, o, json, model] {
    action = [file, o, json, model] {
      if (!model->empty())
        o->kv_bytes_per_token = load_model(*model, "--model").kv_bytes_per_token();
      if (o->kv_bytes_per_token == 0) {
        throw InputError("--kv-bytes-per-token", "expected a positive number of bytes");
      }
      const auto s = trace_stats(*file, *o);
      const auto text = *json ? stats_json(s) : stats_text(s);
      std::fwrite(text.data(), 1, text.size(), stdout);
      return 0;
    };
  });
}

void add_generate(CLI::App* trace, Action& action) {
  auto o = std::make_shared<SyntheticOptions>();
  auto c = std::make_shared<Common>();
  auto* cmd =
      trace->add_subcommand("generate",
                            "Generate a synthetic LoCoMo-shaped trace at any scale (streamed, "
                            "deterministic given --seed)");
  cmd->add_option("--out", c->out, "trace file to write ('-': stdout)")->required();
  cmd->add_option("--users", o->users, "users")->capture_default_str();
  cmd->add_option("--requests", o->requests, "requests")->capture_default_str();
  cmd->add_option("--facts-per-user", o->facts_per_user,
                  "mean facts per user (uniform in mean +- spread)")
      ->capture_default_str();
  cmd->add_option("--facts-per-user-spread", o->facts_per_user_spread, "half-width of that range")
      ->capture_default_str();
  cmd->add_option("--fact-words", o->fact_words, "mean words per fact")->capture_default_str();
  cmd->add_option("--fact-words-sd", o->fact_words_sd, "standard deviation of words per fact")
      ->capture_default_str();
  cmd->add_option("--sessions-min", o->sessions_min, "fewest sessions per user")
      ->capture_default_str();
  cmd->add_option("--sessions-max", o->sessions_max, "most sessions per user")
      ->capture_default_str();
  cmd->add_option("--live-sessions", o->live_sessions,
                  "last sessions of each user written during the run (memory writes)")
      ->capture_default_str();
  cmd->add_option("--query-words", o->query_words, "mean words per question")
      ->capture_default_str();
  cmd->add_option("--query-words-sd", o->query_words_sd, "standard deviation of words per question")
      ->capture_default_str();
  cmd->add_option("--output-tokens", o->output_tokens, "answer tokens per request")
      ->capture_default_str();
  cmd->add_option("--k", o->k, "facts retrieved per request")->capture_default_str();
  cmd->add_option("--tokens-per-word", o->tokens_per_word, "token counts = words * this")
      ->capture_default_str();
  cmd->add_option("--user-zipf", o->user_zipf, "Zipf exponent over users (0: uniform)")
      ->capture_default_str();
  cmd->add_option("--fact-zipf", o->fact_zipf,
                  "Zipf exponent over a user's facts by recency (0: uniform)")
      ->capture_default_str();
  cmd->add_option("--context-turns", o->context_turns, "context_tokens entries per fact (0: none)")
      ->capture_default_str();
  cmd->add_option("--turns-per-session", o->turns_per_session,
                  "mean conversation turns per session")
      ->capture_default_str();
  cmd->add_option("--turn-words", o->turn_words, "mean words per turn")->capture_default_str();
  cmd->add_option("--turn-words-sd", o->turn_words_sd, "standard deviation of words per turn")
      ->capture_default_str();
  cmd->add_option("--start-s", o->start_s, "time the requests start at")->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of every random choice")->capture_default_str();
  add_arrival_options(cmd, *c, o->arrival);
  auto replay = std::make_shared<std::string>();
  auto no_progress = std::make_shared<bool>(false);
  add_no_progress(cmd, *no_progress);
  cmd->add_option("--replay", *replay,
                  "replay arrival times and token counts from a CSV in the Azure LLM inference "
                  "trace layout (traces/README.md)");
  cmd->add_option("--replay-speedup", o->replay_speedup, "the replay's time axis runs this fast")
      ->capture_default_str();
  cmd->callback([&action, o, c, replay, no_progress] {
    action = [o, c, replay, no_progress] {
      o->arrival.mode = arrival_mode(c->arrival);
      if (c->arrival != "gamma" && o->arrival.cv != 1.0) {
        throw InputError("--cv", "applies to --arrival gamma");
      }
      if (!replay->empty()) {
        o->replay = std::make_shared<const std::vector<ReplayedRequest>>(read_arrival_csv(*replay));
      }
      validate_synthetic_options(*o);
      TraceWriter w(c->out);
      const auto r = with_progress(!*no_progress, "generation", [&](const auto& tell) {
        auto result = generate_synthetic(*o, w, tell);
        w.close();
        return result;
      });
      std::fprintf(report_stream(c->out),
                   "wrote %s: %llu users, %llu facts, %llu memory writes, %llu requests\n",
                   c->out.c_str(), static_cast<unsigned long long>(o->users),
                   static_cast<unsigned long long>(r.facts),
                   static_cast<unsigned long long>(r.memory_writes),
                   static_cast<unsigned long long>(r.requests));
      return 0;
    };
  });
}

void add_convert(CLI::App* trace, Action& action) {
  auto in = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto* cmd = trace->add_subcommand(
      "convert",
      "Convert a JSONL trace to the binary format (zstd-compressed), or a binary one back to "
      "JSONL; every command that reads a trace reads both");
  cmd->add_option("in", *in, "trace to read (JSONL or binary)")->required();
  cmd->add_option("out", *out, "file to write, in the other format")->required();
  auto no_progress = std::make_shared<bool>(false);
  add_no_progress(cmd, *no_progress);
  cmd->callback([&action, in, out, no_progress] {
    action = [in, out, no_progress] {
      const ConvertResult r = with_progress(!*no_progress, "conversion", [&](const auto& tell) {
        return convert_trace(*in, *out, tell);
      });
      std::printf("wrote %s: %llu records, %s\n", out->c_str(),
                  static_cast<unsigned long long>(r.records), r.to_binary ? "binary" : "JSONL");
      return 0;
    };
  });
}

}  // namespace

void add_trace_commands(CLI::App& app, Action& action) {
  auto* trace = app.add_subcommand("trace", "Import, generate and describe traces");
  trace->require_subcommand(1);
  add_import_locomo(trace, action);
  add_stats(trace, action);
  add_generate(trace, action);
  add_convert(trace, action);
}

}  // namespace inferscale::cli
