#!/usr/bin/env bash
# Population scale: peak resident memory and time of `inferscale run` on generated populations
# streamed into the simulator (no trace file), KV injection at k = 50 with a GPU and a host tier,
# Llama-3.1-8B on H200s, over users x requests x replicas. Prints a Markdown table on stdout;
# bench/results/population_scale.md records its output.
#
# Usage: bench/population_scale.sh [INFERSCALE] [USERS:REQUESTS:REPLICAS ...]
#        (default: build/inferscale and the scaling grid below)
# Environment: WARM (false: facts derived per user when first asked; true: every fact declared
#              at t=0 for the warm store), RATE_PER_REPLICA (8 requests/s, the issue's 2,000 for
#              256 replicas), SEED (1),
#              MEM_LIMIT_KB (virtual memory cap per run, default 20000000: a run past it fails
#              rather than pushing the machine into swap), HOST_TIER (the host tier's capacity a
#              node, 64GB; none: a GPU tier alone), MODE (serving mode: kv_inject, or text: facts
#              pasted as text, no store work, which times the generator and the scheduler alone)
set -euo pipefail

BIN=${1:-build/inferscale}
shift || true
WARM=${WARM:-false}
RATE_PER_REPLICA=${RATE_PER_REPLICA:-8}
SEED=${SEED:-1}
MEM_LIMIT_KB=${MEM_LIMIT_KB:-20000000}
HOST_TIER=${HOST_TIER:-64GB}
MODE=${MODE:-kv_inject}
GRID=("$@")
if ((${#GRID[@]} == 0)); then
  GRID=(10000:100000:8 100000:100000:8 10000:1000000:8 10000:100000:64 10000:100000:256)
fi

[[ -x "$BIN" ]] || { echo "no executable at $BIN (build it, or pass its path)" >&2; exit 2; }
case "$MODE" in
  kv_inject | text) ;;
  *) echo "MODE must be kv_inject or text, not '$MODE'" >&2; exit 2 ;;
esac
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (Debian: time)" >&2; exit 2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "- CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB"
echo "- load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- serving: $MODE, store.warm: $WARM, host tier: $HOST_TIER, $RATE_PER_REPLICA requests/s per replica, seed $SEED"
echo
echo "| users | requests | replicas | status | wall s | user CPU s | req/s (per CPU s) | peak RSS MiB |"
echo "|---:|---:|---:|---|---:|---:|---:|---:|"
for cell in "${GRID[@]}"; do
  IFS=: read -r users requests replicas <<<"$cell"
  rate=$((RATE_PER_REPLICA * replicas))
  host="  host: {capacity: $HOST_TIER, eviction: lru}"
  [[ "$HOST_TIER" == none ]] && host=""
  cat >"$TMP/pop.yaml" <<YAML
experiment: pop
seed: $SEED
trace: {generate: {users: $users, requests: $requests, k: 50, arrival: poisson, rate: $rate}}
model: llama-3.1-8b
gpu: h200
replicas: $replicas
scheduler: {max_batch_tokens: 8192, max_seqs: 256}
serving: {mode: $MODE, k: 50, header_tokens: 64, footer_tokens: 16}
store:
  warm: $WARM
  gpu: {capacity: 30%, eviction: lru}
$host
output: {requests_csv: true}
YAML
  status=ok
  (ulimit -v "$MEM_LIMIT_KB"; /usr/bin/time -f "%e %U %M" -o "$TMP/time" \
     "$BIN" run "$TMP/pop.yaml" --out "$TMP/results" --no-progress >"$TMP/log" 2>&1) || status=failed
  # The last line: a failed run's first says "Command exited with non-zero status N".
  read -r wall user rss_kb < <(tail -n 1 "$TMP/time") || true
  [[ "$status" == ok ]] || { wall=${wall:--}; user=${user:--}; }
  rate_cpu=$(awk -v r="$requests" -v u="${user:-0}" 'BEGIN{ if (u > 0) printf "%.0f", r / u; else print "-" }')
  rss_mib=$(awk -v k="${rss_kb:-0}" 'BEGIN{ printf "%.0f", k / 1024 }')
  echo "| $users | $requests | $replicas | $status | $wall | $user | $rate_cpu | $rss_mib |"
  rm -rf "$TMP/results"
done
