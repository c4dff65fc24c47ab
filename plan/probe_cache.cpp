#include "plan/probe_cache.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "traces/error.h"

namespace inferscale::plan {

namespace fs = std::filesystem;
using nlohmann::json;

std::string probe_hash(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

json probe_result_json(const ProbeResult& r) {
  return json{{"pass", r.pass},
              {"stopped_early", r.stopped_early},
              {"measured", r.measured},
              {"ttft_p50_ms", r.ttft_p50_ms},
              {"ttft_p99_ms", r.ttft_p99_ms},
              {"tpot_p99_ms", r.tpot_p99_ms},
              {"e2e_p99_ms", r.e2e_p99_ms},
              {"gpu_hit", r.gpu_hit},
              {"wall_s", r.wall_s},
              {"missed", r.missed},
              {"turned_over", r.turned_over}};
}

ProbeResult probe_result_from_json(const json& j) {
  ProbeResult r;
  r.pass = j.at("pass");
  r.stopped_early = j.at("stopped_early");
  r.measured = j.at("measured");
  r.ttft_p50_ms = j.at("ttft_p50_ms");
  r.ttft_p99_ms = j.at("ttft_p99_ms");
  r.tpot_p99_ms = j.at("tpot_p99_ms");
  r.e2e_p99_ms = j.at("e2e_p99_ms");
  r.gpu_hit = j.at("gpu_hit");
  r.wall_s = j.at("wall_s");
  r.missed = j.at("missed");
  r.turned_over = j.at("turned_over");
  return r;
}

ProbeCache::ProbeCache(fs::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().filename().string().find(".tmp.") != std::string::npos) fs::remove(e.path(), ec);
  }
}

std::optional<ProbeResult> ProbeCache::find(const ProbeTask& task) const {
  std::ifstream f(dir_ / (task.key + ".json"));
  if (!f) return std::nullopt;
  try {
    const json j = json::parse(f);
    if (j.at("config").get<std::string>() != task.key_text) return std::nullopt;  // a collision
    ProbeResult r = probe_result_from_json(j);
    r.cached = true;
    return r;
  } catch (const std::exception&) {
    return std::nullopt;  // unreadable: run the probe again and replace it
  }
}

void ProbeCache::store(const ProbeTask& task, const ProbeResult& r) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw InputError(dir_.string(), "cannot create the probe cache: " + ec.message());
  json j = probe_result_json(r);
  j["config"] = task.key_text;
  std::ostringstream name;
  name << task.key << ".json.tmp." << getpid() << "."
       << std::hash<std::thread::id>{}(std::this_thread::get_id());
  const fs::path tmp = dir_ / name.str();
  {
    std::ofstream f(tmp, std::ios::binary);
    f << j.dump(1) << "\n";
    f.close();
    if (!f) throw InputError(tmp.string(), "cannot write the probe cache entry");
  }
  fs::rename(tmp, dir_ / (task.key + ".json"), ec);
  if (ec) throw InputError(tmp.string(), "cannot rename the probe cache entry: " + ec.message());
}

}  // namespace inferscale::plan
