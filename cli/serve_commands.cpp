// `inferscale serve-executor`: hosts an executor for experiments with `executor.kind: remote`.
#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/executor_kinds.h"
#include "executor/remote/server.h"
#include "sim/config/experiment.h"
#include "sim/config/yaml_view.h"
#include "sim/executor_factory.h"
#include "traces/error.h"

namespace inferscale::cli {

namespace {

struct ServeArgs {
  std::string listen = "127.0.0.1:7070";
  std::string executor = "cost_model";
  std::string model = "llama-3.1-8b";
  std::string gpu = "h200";
  std::string pool_capacity;  // empty: 30% of the GPU's memory, as store.gpu.capacity
  std::string profile;
  std::string device = "cuda";
  bool copies_first = false;  // executor.copies_beside_pass: false
  unsigned max_sessions = 8;
  double idle_timeout_s = 600;
  double frame_timeout_s = 30;
  double handshake_timeout_s = 5;
};

/// The kinds a server can host: every executor of this build but `remote` itself.
std::vector<std::string> served_kinds() {
  std::vector<std::string> kinds;
  for (const auto& k : available_executor_kinds()) {
    if (k != "remote") kinds.push_back(k);
  }
  return kinds;
}

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(host, ec);
  return !ec && address.is_loopback();
}

/// The run configuration the served executor is made from: what the handshake compares
/// (model, GPU, GPU store bytes) plus the executor's own settings.
RunConfig served_config(const ServeArgs& a) {
  RunConfig r;
  r.replicas = 1;
  r.model = load_model(a.model, "--model");
  r.gpu = load_gpu(a.gpu, "--gpu");
  std::uint64_t pool = static_cast<std::uint64_t>(30.0 / 100.0 * double(r.gpu.memory_bytes));
  if (!a.pool_capacity.empty()) {
    YAML::Node node(YAML::NodeType::Map);
    node["pool_capacity"] = a.pool_capacity;
    pool = YamlView({YamlLayer{node, "--pool-capacity"}}, "")
               .bytes("pool_capacity", 0, r.gpu.memory_bytes);
  }
  r.store.gpu.enabled = pool > 0;
  r.store.gpu.capacity_bytes = pool;
  r.serving.mode = pool > 0 ? ServingMode::kKvInject : ServingMode::kText;
  r.executor.kind = a.executor;
  r.executor.where = "--executor";
  r.executor.profile = a.profile;
  r.executor.device = a.device;
  r.executor.copies_beside_pass = !a.copies_first;
  const auto kinds = served_kinds();
  if (std::find(kinds.begin(), kinds.end(), a.executor) == kinds.end()) {
    std::string list;
    for (const auto& k : kinds) list += (list.empty() ? "" : ", ") + k;
    throw InputError("--executor", "cannot serve executor kind '" + a.executor +
                                       "' in this build (available: " + list + ")");
  }
  check_executor(r);  // e.g. a calibrated executor's profile: fail now, not at the first client
  return r;
}

}  // namespace

void add_serve_commands(CLI::App& app, Action& action) {
  auto args = std::make_shared<ServeArgs>();
  auto* serve = app.add_subcommand("serve-executor",
                                   "Host an executor for experiments with executor.kind: remote");
  serve->add_option("--listen", args->listen, "HOST:PORT to listen on (loopback by default)")
      ->capture_default_str();
  serve->add_option("--executor", args->executor, "executor kind to host")->capture_default_str();
  serve->add_option("--model", args->model, "model preset or .yaml (must match the experiment)")
      ->capture_default_str();
  serve->add_option("--gpu", args->gpu, "GPU preset or .yaml (must match the experiment)")
      ->capture_default_str();
  serve->add_option("--pool-capacity", args->pool_capacity,
                    "GPU store bytes (40GiB, 30%); must equal the experiment's store.gpu.capacity, "
                    "0 for text mode (default 30%)");
  serve->add_option("--profile", args->profile, "calibration profile (calibrated executor)");
  serve->add_option("--device", args->device, "cuda | cpu (gpu executor)")->capture_default_str();
  serve->add_flag("--copies-first", args->copies_first,
                  "gpu and calibrated executors: issue every step's asynchronous copies before "
                  "its pass (executor.copies_beside_pass: false)");
  serve
      ->add_option("--max-sessions", args->max_sessions,
                   "sessions served at once (connections past their handshake)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 4096u));
  serve
      ->add_option("--idle-timeout", args->idle_timeout_s,
                   "seconds a session may wait for its next step before it is closed")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1e6));
  serve
      ->add_option("--frame-timeout", args->frame_timeout_s,
                   "seconds for the rest of a started frame, and each reply")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1e6));
  serve
      ->add_option("--handshake-timeout", args->handshake_timeout_s,
                   "seconds a new connection has to send its hello (it holds no session slot "
                   "until then)")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1e6));
  serve->callback([&action, args] {
    action = [args] {
      const auto listen = remote::parse_endpoint(args->listen);
      if (!listen) {
        throw InputError("--listen",
                         "'" + args->listen + "' is not HOST:PORT (e.g. 127.0.0.1:7070)");
      }
      const RunConfig served = served_config(*args);
      remote::ServerOptions options;
      options.host = listen->host;
      options.port = listen->port;
      options.max_sessions = args->max_sessions;
      options.idle_timeout_s = args->idle_timeout_s;
      options.frame_timeout_s = args->frame_timeout_s;
      options.handshake_timeout_s = args->handshake_timeout_s;
      if (!is_loopback(listen->host)) {
        std::fprintf(stderr,
                     "warning: listening on %s, beyond loopback: the protocol has no "
                     "authentication or encryption, and anyone who can reach this port can run "
                     "steps on this executor (see the README, \"Remote executor\")\n",
                     listen->text().c_str());
      }
      std::unique_ptr<remote::ExecutorServer> server;
      try {
        server = std::make_unique<remote::ExecutorServer>(
            options, executor_identity(served), [served] { return make_executor(served, 0); });
      } catch (const std::runtime_error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
      }
      server->stop_on_signals();
      server->run();
      return 0;
    };
  });
}

}  // namespace inferscale::cli
