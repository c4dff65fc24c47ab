#include "sim/config/fleet_config.h"

#include <string>

#include "traces/error.h"

namespace inferscale {

const char* to_string(WritePolicy w) {
  switch (w) {
    case WritePolicy::kNone:
      return "none";
    case WritePolicy::kThrough:
      return "through";
    case WritePolicy::kBack:
      return "back";
  }
  return "?";
}

namespace {

NodeConfig parse_node(const YamlView& v) {
  v.reject_unknown({"name", "gpu", "gpus", "dram", "nvme_drives", "nvme_drive_capacity",
                    "nvme_drive_read_gbps", "nvme_drive_write_gbps", "nvme_latency_us",
                    "nvme_queue_depth", "nic_gbps", "network_latency_us", "dram_price_per_gb_month",
                    "nvme_price_per_gb_month", "remote_price_per_gb_month", "price_source"});
  for (const char* k : {"gpus", "dram"}) {
    if (!v.has(k)) v.fail("", std::string("node: missing key '") + k + "'");
  }
  NodeConfig n;
  n.where = v.where();
  n.name = v.text("name", "custom");
  n.gpu = v.text("gpu", "");
  n.gpus = static_cast<std::uint32_t>(v.integer("gpus", 8, 1, 64));
  n.dram_bytes = v.bytes("dram", 0);
  n.nvme_drives = static_cast<std::uint32_t>(v.integer("nvme_drives", 0, 0, 256));
  n.nvme_drive_bytes = v.bytes("nvme_drive_capacity", 0);
  n.nvme_drive_read_gbps = v.number("nvme_drive_read_gbps", 0, 0, 1e6);
  n.nvme_drive_write_gbps = v.number("nvme_drive_write_gbps", 0, 0, 1e6);
  n.nvme_latency_us = v.number("nvme_latency_us", 0, 0, 1e7);
  n.nvme_queue_depth = static_cast<std::uint32_t>(v.integer("nvme_queue_depth", 0, 0, 1 << 20));
  n.nic_gbps = v.number("nic_gbps", 0, 0, 1e6);
  n.network_latency_us = v.number("network_latency_us", 0, 0, 1e7);
  n.dram_price_per_gb_month = v.number("dram_price_per_gb_month", 0, 0, 1e6);
  n.nvme_price_per_gb_month = v.number("nvme_price_per_gb_month", 0, 0, 1e6);
  n.remote_price_per_gb_month = v.number("remote_price_per_gb_month", 0, 0, 1e6);
  n.price_source = v.text("price_source", "");
  return n;
}

std::string gb(std::uint64_t bytes) {
  std::string s = std::to_string(double(bytes) / 1e9);
  return s.substr(0, s.find('.') + 2) + " GB";
}

}  // namespace

NodeConfig node_of(const YamlView& top) {
  if (!top.has("node")) return NodeConfig{};
  if (top.is_map("node")) return parse_node(top.child("node"));
  const std::string name = top.text("node", "");
  const std::string where = top.where("node");
  const auto path = preset_path(name, "nodes");
  if (!path_exists(path, where)) {
    std::string known;
    for (const auto& n : preset_names("nodes")) known += (known.empty() ? "" : ", ") + n;
    throw InputError(where, "unknown node '" + name + "' (presets: " + known +
                                "; or give a path to a .yaml file)");
  }
  NodeConfig n = parse_node(YamlView({{load_yaml_file(path), path}}, ""));
  n.where = where;
  return n;
}

void parse_tier_fleet_keys(const YamlView& tier, const char* key, const NodeConfig& node,
                           TierConfig& t) {
  const std::string k = key;
  if (tier.has("write")) {
    const auto w = tier.choice("write", "back", {"none", "through", "back"});
    t.write = w == "through" ? WritePolicy::kThrough
              : w == "back"  ? WritePolicy::kBack
                             : WritePolicy::kNone;
    t.write_where = tier.where("write");
  } else {
    t.write_where = "";  // resolved by resolve_fleet: kBack when a tier lies below
  }
  if (k == "disk") {
    t.read_gbps = tier.number("read_gbps", node.nvme_drives * node.nvme_drive_read_gbps, 0, 1e6);
    t.write_gbps = tier.number("write_gbps", node.nvme_drives * node.nvme_drive_write_gbps, 0, 1e6);
    t.latency_us = tier.number("latency_us", node.nvme_latency_us, 0, 1e7);
    t.queue_depth =
        static_cast<std::uint32_t>(tier.integer("queue_depth", node.nvme_queue_depth, 0, 1 << 20));
  } else if (k == "remote") {
    t.read_gbps = tier.number("gbps", node.nic_gbps, 0, 1e6);
    t.write_gbps = t.read_gbps;
    t.latency_us = tier.number("latency_us", node.network_latency_us, 0, 1e7);
  }
  const double node_price = k == "host"     ? node.dram_price_per_gb_month
                            : k == "disk"   ? node.nvme_price_per_gb_month
                            : k == "remote" ? node.remote_price_per_gb_month
                                            : 0.0;
  t.price_per_gb_month = tier.number("price_per_gb_month", node_price, 0, 1e6);
  t.price_source = tier.has("price_per_gb_month")
                       ? tier.text("price_source", "set in the experiment")
                       : (node_price > 0 ? "node " + node.name + ": " + node.price_source : "");
}

void resolve_fleet(const YamlView& top, RunConfig& r) {
  const NodeConfig& n = r.node;
  // Replicas and nodes.
  if (n.gpus > 0) {
    if (r.tp > n.gpus) {
      top.fail("tp", "tp " + std::to_string(r.tp) + " is more GPUs than node '" + n.name +
                         "' has (" + std::to_string(n.gpus) + ")");
    }
    const std::uint32_t per_node = r.replicas_per_node();
    if (top.has("nodes")) {
      r.nodes = static_cast<std::uint32_t>(top.integer("nodes", 1, 1, 4096));
      if (top.has("replicas") && r.replicas != r.nodes * per_node) {
        top.fail("replicas", std::to_string(r.nodes) + " nodes of " + std::to_string(per_node) +
                                 " replicas are " + std::to_string(r.nodes * per_node) +
                                 " replicas, not " + std::to_string(r.replicas) +
                                 " (give one of nodes and replicas)");
      }
      r.replicas = r.nodes * per_node;
    } else {
      r.nodes = r.nodes_for(r.replicas);
    }
  } else {
    if (top.has("nodes")) top.fail("nodes", "'nodes' needs a 'node' preset (configs/nodes/)");
    r.nodes = r.replicas;  // a node per replica
  }
  // A real executor keeps host copies per replica: a host tier shared by a node's replicas is
  // the cost models' only.
  if (r.replicas_per_node() > 1 && r.store.host.enabled && r.executor.kind != "cost_model" &&
      r.executor.kind != "calibrated") {
    throw InputError(n.where, "node '" + n.name + "' runs " +
                                  std::to_string(r.replicas_per_node()) +
                                  " replicas sharing one host tier: that needs executor kind "
                                  "'cost_model' or 'calibrated' (the '" +
                                  r.executor.kind + "' executor keeps host copies per replica)");
  }
  // Write policies: what lies below each tier.
  TierConfig* tiers[] = {&r.store.gpu, &r.store.host, &r.store.disk, &r.store.remote};
  const char* names[] = {"gpu", "host", "disk", "remote"};
  for (int i = 0; i < 4; ++i) {
    TierConfig& t = *tiers[i];
    bool below = false;
    for (int j = i + 1; j < 4; ++j) below = below || tiers[j]->enabled;
    if (t.write_where.empty()) {
      t.write = below ? WritePolicy::kBack : WritePolicy::kNone;
      continue;
    }
    if (t.write != WritePolicy::kNone && !below) {
      throw InputError(t.write_where, std::string("write: ") + to_string(t.write) + " on the " +
                                          names[i] + " tier needs an enabled tier below it");
    }
  }
  // Capacities within the node's hardware; bandwidths where a tier moves data.
  if (n.gpus > 0 && r.store.host.enabled && r.store.host.capacity_bytes > n.dram_bytes) {
    throw InputError(r.store.host.where, "the host tier (" + gb(r.store.host.capacity_bytes) +
                                             ") is larger than node '" + n.name + "' DRAM (" +
                                             gb(n.dram_bytes) + ")");
  }
  if (r.store.disk.enabled) {
    if (n.gpus > 0 && r.store.disk.capacity_bytes > n.nvme_bytes()) {
      throw InputError(r.store.disk.where, "the disk tier (" + gb(r.store.disk.capacity_bytes) +
                                               ") is larger than node '" + n.name + "' NVMe (" +
                                               gb(n.nvme_bytes()) + ")");
    }
    if (r.store.disk.read_gbps <= 0 || r.store.disk.write_gbps <= 0) {
      throw InputError(r.store.disk.where,
                       "the disk tier needs positive read_gbps and write_gbps (no node preset "
                       "gives them)");
    }
  }
  if (r.store.remote.enabled && r.store.remote.read_gbps <= 0) {
    throw InputError(r.store.remote.where,
                     "the remote tier needs a positive gbps (no node preset gives one)");
  }
  // Prices: the GPU preset's unless the experiment sets one.
  r.prices.gpu_per_hour = r.gpu.price_per_hour;
  r.prices.gpu_source = "gpu " + r.gpu.name + ": " + r.gpu.price_source;
  if (top.has("prices")) {
    const auto p = top.child("prices");
    p.reject_unknown({"gpu_per_hour", "source"});
    if (p.has("gpu_per_hour")) {
      r.prices.gpu_per_hour = p.number("gpu_per_hour", 0, 0, 1e6);
      r.prices.gpu_source = p.text("source", "set in the experiment");
    }
  }
}

}  // namespace inferscale
