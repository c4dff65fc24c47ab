// plugin: an eviction policy from a shared library built against policies/plugin.h, loaded by
// path (`eviction: plugin`, `params: {path: ./libmy_policy.so, ...}`; a relative path is taken
// from the working directory). Other params are passed to the library's create() as strings.
// plugin_offline loads the same way for a run that gives the policy the trace's future (the
// plugin's INFERSCALE_POLICY_OFFLINE flag asks for it). Every way to fail while loading is an
// InputError at the `path` key; a bad victim is caught by the store tier (PolicyContractError).
#include <dlfcn.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "policies/plugin.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

using Handle = std::shared_ptr<void>;

class PluginPolicy final : public EvictionPolicy {
 public:
  PluginPolicy(Handle handle, const inferscale_policy_descriptor_v2* d, void* state)
      : handle_(std::move(handle)), d_(d), state_(state) {}
  ~PluginPolicy() override { d_->destroy(state_); }
  PluginPolicy(const PluginPolicy&) = delete;
  PluginPolicy& operator=(const PluginPolicy&) = delete;

  void on_insert(const CacheEntry& e, SimTime now) override {
    const auto c = convert(e);
    d_->on_insert(state_, &c, now);
  }
  void on_hit(const CacheEntry& e, SimTime now) override {
    const auto c = convert(e);
    d_->on_hit(state_, &c, now);
  }
  void on_access(const CacheEntry& e, SimTime now) override {
    if (d_->on_access == nullptr) return;
    const auto c = convert(e);
    d_->on_access(state_, &c, now);
  }
  void on_remove(FactId id) override { d_->on_remove(state_, id); }
  bool needs_last_access() const override { return true; }  // the ABI promises it
  void attach(const RunView* view) override {
    if (d_->attach == nullptr) return;
    attached_ = inferscale_victim_query{};
    set_run(attached_, view);
    d_->attach(state_, &attached_);
  }
  void on_evict(FactId id, const EvictionContext& ctx) override {
    if (d_->on_evict == nullptr) {
      d_->on_remove(state_, id);
      return;
    }
    inferscale_entry incoming{};
    const auto q = query(ctx, incoming);
    d_->on_evict(state_, id, &q);
  }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    inferscale_entry incoming{};
    const auto q = query(ctx, incoming);
    const std::uint64_t v = d_->victim(state_, &q);
    if (v == INFERSCALE_NO_VICTIM) return std::nullopt;
    return FactId{v};
  }

 private:
  static inferscale_victim_query query(const EvictionContext& ctx, inferscale_entry& incoming) {
    inferscale_victim_query q{};
    q.now_ns = ctx.now;
    q.bytes_needed = ctx.bytes_needed;
    if (ctx.incoming != nullptr) {
      incoming = convert(*ctx.incoming);
      q.incoming = &incoming;
    }
    set_run(q, ctx.run);
    return q;
  }
  static void set_run(inferscale_victim_query& q, const RunView* run) {
    q.pinned = &pinned;
    q.user_in_flight = &user_in_flight;
    q.user_last_active_ns = &user_last_active_ns;
    q.next_access = &next_access;
    q.position = &position;
    q.run = run;
  }
  static inferscale_entry convert(const CacheEntry& e) {
    inferscale_entry c{};
    c.fact = e.id;
    c.user = e.user;
    c.bytes = e.bytes;
    c.tokens = e.tokens;
    c.recompute_cost_ns = e.recompute_cost_ns;
    c.created_ns = e.created;
    c.last_access_ns = e.last_access;
    return c;
  }
  static int pinned(const void* run, std::uint64_t fact) {
    return run != nullptr && static_cast<const RunView*>(run)->pinned(fact) ? 1 : 0;
  }
  static int user_in_flight(const void* run, std::uint64_t user) {
    return run != nullptr && static_cast<const RunView*>(run)->user_in_flight(user) ? 1 : 0;
  }
  // kNever and INFERSCALE_NEVER are both the largest int64_t.
  static std::int64_t user_last_active_ns(const void* run, std::uint64_t user) {
    return run != nullptr ? static_cast<const RunView*>(run)->user_last_active(user) : kNever;
  }
  static std::int64_t next_access(const void* run, std::uint64_t fact) {
    return run != nullptr ? static_cast<const RunView*>(run)->next_access(fact) : kNever;
  }
  static std::int64_t position(const void* run) {
    return run != nullptr ? static_cast<const RunView*>(run)->position() : 0;
  }

  Handle handle_;  // keeps the library loaded while the instance lives
  const inferscale_policy_descriptor_v2* d_;
  void* state_;
  inferscale_victim_query attached_{};  // what attach() handed the plugin
};
static_assert(kNever == INFERSCALE_NEVER);

std::unique_ptr<EvictionPolicy> load_plugin(const PolicyArgs& a, bool offline_run) {
  const Params& p = a.params;
  const std::string policy = offline_run ? "plugin_offline" : "plugin";
  if (!p.has("path")) {
    throw InputError(p.where(),
                     "eviction policy '" + policy +
                         "' needs the parameter 'path' (the "
                         "shared library built against policies/plugin.h)");
  }
  std::string path = p.text("path", "");
  const std::string where = p.values().at("path").where;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw InputError(where, "plugin library '" + path + "' not found");
  }
  if (path.find('/') == std::string::npos) path = "./" + path;  // not a library search
  void* raw = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (raw == nullptr) {
    const char* why = dlerror();
    throw InputError(where, "cannot load plugin library '" + path + "': " + (why ? why : "?"));
  }
  Handle handle(raw, [](void* h) { dlclose(h); });
  auto fn = reinterpret_cast<inferscale_policy_descriptor_fn>(
      dlsym(raw, INFERSCALE_POLICY_DESCRIPTOR_SYMBOL));
  if (fn == nullptr) {
    throw InputError(where, "plugin library '" + path + "' does not export " +
                                INFERSCALE_POLICY_DESCRIPTOR_SYMBOL + "() (see policies/plugin.h)");
  }
  const inferscale_policy_descriptor_v2* d = fn();
  if (d == nullptr) throw InputError(where, "plugin library '" + path + "' returned no descriptor");
  if (d->abi_version != INFERSCALE_POLICY_ABI_VERSION) {
    throw InputError(where, "plugin library '" + path + "' has policy ABI version " +
                                std::to_string(d->abi_version) + ", this build supports " +
                                std::to_string(INFERSCALE_POLICY_ABI_VERSION) +
                                ": rebuild it against this version's policies/plugin.h");
  }
  if (d->struct_size < sizeof(inferscale_policy_descriptor_v2)) {
    throw InputError(where, "plugin library '" + path + "' has a descriptor of " +
                                std::to_string(d->struct_size) + " bytes, expected at least " +
                                std::to_string(sizeof(inferscale_policy_descriptor_v2)));
  }
  const std::pair<const char*, bool> required[] = {
      {"create", d->create != nullptr},       {"destroy", d->destroy != nullptr},
      {"on_insert", d->on_insert != nullptr}, {"on_hit", d->on_hit != nullptr},
      {"on_remove", d->on_remove != nullptr}, {"victim", d->victim != nullptr}};
  for (const auto& [name, present] : required) {
    if (!present) {
      throw InputError(where,
                       "plugin library '" + path + "' leaves the callback '" + name + "' empty");
    }
  }
  if ((d->flags & INFERSCALE_POLICY_OFFLINE) != 0 && !offline_run) {
    throw InputError(where, "plugin library '" + path +
                                "' reads the trace's future (INFERSCALE_POLICY_OFFLINE): select "
                                "it as 'plugin_offline'");
  }
  std::vector<inferscale_param> params;
  for (const auto& [name, value] : p.values()) {
    if (name == "path") continue;
    p.text(name, "");  // marks it read: every parameter goes to the library
    params.push_back(inferscale_param{name.c_str(), value.text.c_str()});
  }
  char error[512] = {0};
  void* state =
      d->create(params.data(), params.size(), a.capacity_bytes, a.seed, error, sizeof(error));
  if (state == nullptr) {
    error[sizeof(error) - 1] = 0;
    throw InputError(p.where(),
                     std::string("plugin '") + (d->name ? d->name : path) +
                         "' refused its parameters: " + (error[0] ? error : "no reason given"));
  }
  return std::make_unique<PluginPolicy>(std::move(handle), d, state);
}

}  // namespace

INFERSCALE_REGISTER_EVICTION(
    plugin, "an out-of-tree policy loaded from a shared library (policies/plugin.h)",
    {ParamInfo{"path", "(required)", "the shared library; other params are passed to it"}},
    [](const PolicyArgs& a) { return load_plugin(a, false); });

INFERSCALE_REGISTER_OFFLINE_EVICTION(
    plugin_offline,
    "an out-of-tree policy that reads the trace's future (INFERSCALE_POLICY_OFFLINE), from a "
    "shared library",
    {ParamInfo{"path", "(required)", "the shared library; other params are passed to it"}},
    [](const PolicyArgs& a) { return load_plugin(a, true); });

}  // namespace inferscale
