#!/usr/bin/env bash
# The memory hierarchy of a fleet: a LoCoMo-shaped generated population (about 127 facts of
# about 19 tokens per user), k = 50, Llama-3.1-8B on 8 x H200 HGX nodes (configs/nodes/
# hgx-h200-8.yaml), user-affinity routing. Nine runs: text mode, then kv_inject with the fact
# store on the GPU only, + host DRAM, + local NVMe, + a remote KV store, each with fact KV in
# bf16 and in fp8. Prints a Markdown table on stdout; bench/results/memory_hierarchy.md
# records its output.
#
# Usage: bench/memory_hierarchy.sh [INFERSCALE]   (default: build/inferscale)
# Environment:
#   USERS (1000000), REQUESTS_PER_USER_PER_DAY (10): the rate is USERS x that / 86,400 s
#     (1 M users: 115.7 requests/s);
#   REQUESTS (1000000): requests simulated (at 115.7 requests/s, 2.4 hours);
#   NODES (2): 8 x H200 nodes (16 replicas of one GPU);
#   WARM (true): every user's facts exist at t = 0 and are placed down the hierarchy, GPU first,
#     as the store's policies would have left them (free of cost); false: a fact is encoded at
#     its user's first request (a cold start);
#   CSV (none): also write the table's rows there as CSV (notebooks/memory_hierarchy.ipynb
#     reads it);
#   RUNS (all nine, in the order below: text gpu_bf16 host_bf16 nvme_bf16 remote_bf16 gpu_fp8
#     host_fp8 nvme_fp8 remote_fp8), SEED (1), OUT (a temporary folder: the runs' results),
#     MEM_LIMIT_KB (20000000: a run past it fails rather than pushing the machine into swap).
set -euo pipefail

BIN=${1:-build/inferscale}
USERS=${USERS:-1000000}
PER_DAY=${REQUESTS_PER_USER_PER_DAY:-10}
REQUESTS=${REQUESTS:-1000000}
NODES=${NODES:-2}
WARM=${WARM:-true}
SEED=${SEED:-1}
MEM_LIMIT_KB=${MEM_LIMIT_KB:-20000000}

[[ -x "$BIN" ]] || { echo "no executable at $BIN (build it, or pass its path)" >&2; exit 2; }
command -v jq >/dev/null || { echo "needs jq" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
OUT=${OUT:-$TMP/results}

RATE=$(awk -v u="$USERS" -v d="$PER_DAY" 'BEGIN{ printf "%.4f", u * d / 86400 }')
# The remote store holds the whole population's fact KV: about 466 MB a user in bf16 (127 facts
# of 1.75 16-token blocks of 128 KiB), 241 MB in fp8 (67,584 bytes a token); 10 % headroom.
REMOTE_BF16=$(awk -v u="$USERS" 'BEGIN{ printf "%.0fGB", u * 0.466 * 1.1 }')
REMOTE_FP8=$(awk -v u="$USERS" 'BEGIN{ printf "%.0fGB", u * 0.241 * 1.1 }')

cat >"$TMP/hierarchy.yaml" <<YAML
experiment: memory_hierarchy
seed: $SEED
trace: {generate: {users: $USERS, requests: $REQUESTS, k: 50, arrival: poisson, rate: $RATE}}
model: llama-3.1-8b
node: hgx-h200-8
nodes: $NODES
router: user_affinity
scheduler: {max_batch_tokens: 8192, max_seqs: 256}
serving: {mode: kv_inject, k: 50, header_tokens: 64, footer_tokens: 16}
store:
  warm: $WARM
  gpu: {capacity: 30%, eviction: lru}
output: {requests_csv: false}
runs:
  - {name: text, serving: {mode: text}}
YAML
for dtype in bf16 fp8; do
  remote=$REMOTE_BF16
  [[ $dtype == fp8 ]] && remote=$REMOTE_FP8
  host="host: {capacity: 1.5TB, eviction: lru, async_loads: true}"
  disk="disk: {capacity: 30TB, eviction: lru}"
  rem="remote: {capacity: $remote, eviction: lru}"
  cat >>"$TMP/hierarchy.yaml" <<YAML
  - {name: gpu_$dtype, store: {kv_dtype: $dtype}}
  - {name: host_$dtype, store: {kv_dtype: $dtype, $host}}
  - {name: nvme_$dtype, store: {kv_dtype: $dtype, $host, $disk}}
  - {name: remote_$dtype, store: {kv_dtype: $dtype, $host, $disk, $rem}}
YAML
done

echo "- $USERS users, $REQUESTS requests, Poisson arrivals at $RATE requests/s ($PER_DAY a user a day), $NODES x hgx-h200-8 ($((NODES * 8)) replicas), store.warm: $WARM, seed $SEED"
echo "- remote store: $REMOTE_BF16 (bf16), $REMOTE_FP8 (fp8); host tier 1.5 TB and disk tier 30 TB per node"
echo "- CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| run | TTFT p50 ms | TTFT p99 ms | hit GPU | hit host | hit disk | hit remote | miss | GB in host / disk / remote | GB out host / disk / remote | load wait ms (mean) host / disk / remote | USD/hour | USD per 1M req | user CPU s | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|---:|---:|---:|---:|"
CSV=${CSV:-}
if [[ -n $CSV ]]; then
  echo "run,ttft_p50_ms,ttft_p99_ms,hit_gpu,hit_host,hit_disk,hit_remote,miss,gb_in_host,gb_in_disk,gb_in_remote,gb_out_host,gb_out_disk,gb_out_remote,load_wait_ms_host,load_wait_ms_disk,load_wait_ms_remote,usd_per_hour,usd_per_million_requests,user_cpu_s,peak_rss_mib" >"$CSV"
fi
read -r -a runs <<<"${RUNS:-text gpu_bf16 host_bf16 nvme_bf16 remote_bf16 gpu_fp8 host_fp8 nvme_fp8 remote_fp8}"
for run in "${runs[@]}"; do
  status=ok
  (ulimit -v "$MEM_LIMIT_KB"; /usr/bin/time -f "%U %M" -o "$TMP/time" \
     "$BIN" run "$TMP/hierarchy.yaml" --runs "$run" --out "$OUT" --no-progress >"$TMP/log" 2>&1) ||
    status=failed
  read -r user rss_kb <"$TMP/time" || true
  rss=$(awk -v k="${rss_kb:-0}" 'BEGIN{ printf "%.0f", k / 1024 }')
  s="$OUT/memory_hierarchy/$run/summary.json"
  if [[ $status != ok || ! -f $s ]]; then
    echo "| $run | failed: $(tail -1 "$TMP/log") |"
    continue
  fi
  jq -r --arg run "$run" --arg cpu "$user" --arg rss "$rss" '
    def r(x): (x * 1000 | round) / 1000;
    def gb(x): ((x // 0) / 1e9 | . * 10 | round / 10);
    def t(n): .tiers[n] // {};
    def pct(x): (x * 1000 | round) / 10 | tostring + " %";
    "| \($run) | \(r(.ttft_ms.p50)) | \(r(.ttft_ms.p99)) | \(pct(.hit_ratio.gpu_object)) | \(pct(.hit_ratio.host_object)) | \(pct(.hit_ratio.disk_object)) | \(pct(.hit_ratio.remote_object)) | \(pct(.hit_ratio.miss_object)) | \(gb(t("host").bytes_in)) / \(gb(t("disk").bytes_in)) / \(gb(t("remote").bytes_in)) | \(gb(t("host").bytes_out)) / \(gb(t("disk").bytes_out)) / \(gb(t("remote").bytes_out)) | \(r(t("host").load_wait_ms_mean // 0)) / \(r(t("disk").load_wait_ms_mean // 0)) / \(r(t("remote").load_wait_ms_mean // 0)) | \(.cost_usd.per_hour | . * 100 | round / 100) | \(.cost_usd.per_million_requests | round) | \($cpu) | \($rss) |"' "$s"
  if [[ -n $CSV ]]; then
    jq -r --arg run "$run" --arg cpu "$user" --arg rss "$rss" '
      def t(n): .tiers[n] // {};
      def gb(x): ((x // 0) / 1e9 | . * 10 | round / 10);
      def r(x): (x * 1000 | round) / 1000;
      def h(x): (x * 10000 | round) / 10000;
      [$run, r(.ttft_ms.p50), r(.ttft_ms.p99), h(.hit_ratio.gpu_object), h(.hit_ratio.host_object),
       h(.hit_ratio.disk_object), h(.hit_ratio.remote_object), h(.hit_ratio.miss_object),
       gb(t("host").bytes_in), gb(t("disk").bytes_in), gb(t("remote").bytes_in),
       gb(t("host").bytes_out), gb(t("disk").bytes_out), gb(t("remote").bytes_out),
       r(t("host").load_wait_ms_mean // 0), r(t("disk").load_wait_ms_mean // 0),
       r(t("remote").load_wait_ms_mean // 0), (.cost_usd.per_hour | . * 100 | round / 100),
       (.cost_usd.per_million_requests | round), $cpu, $rss] | @csv' "$s" | tr -d '"' >>"$CSV"
  fi
done
