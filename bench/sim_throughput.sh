#!/usr/bin/env bash
# Simulator throughput: requests simulated per second of wall time, and peak RSS, of
# `inferscale run` with the cost-model executor, for one replica and fleets of 8 replicas, with
# and without requests.csv. Generates its synthetic trace (fixed seed) in a temporary folder and
# prints a Markdown report on stdout; bench/results/sim_throughput.md is its output.
#
# Usage: bench/sim_throughput.sh [INFERSCALE]      (default: build/inferscale)
# Environment: USERS (10000), REQUESTS (1000000), RATE (50 requests/s), SEED (1),
#              REPEATS (3 runs per row; the table gives the fastest and the median)
set -euo pipefail

BIN=${1:-build/inferscale}
USERS=${USERS:-10000}
REQUESTS=${REQUESTS:-1000000}
RATE=${RATE:-50}
SEED=${SEED:-1}
REPEATS=${REPEATS:-3}
TARGET=200000  # requests per second of wall time

[[ -x "$BIN" ]] || { echo "no executable at $BIN (build it, or pass its path)" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (Debian: apt-get install time)" >&2; exit 2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

GEN=(trace generate --no-progress --users "$USERS" --requests "$REQUESTS" --rate "$RATE"
     --seed "$SEED" --out "$TMP/trace.jsonl")
"$BIN" "${GEN[@]}" >/dev/null

# The defaults of the simulator, spelled out: KV injection at k=50, Llama-3.1-8B on H200s, a
# GPU store of 30 % of GPU memory under LRU.
cat >"$TMP/bench.yaml" <<EOF
experiment: sim_throughput
seed: 1
trace: $TMP/trace.jsonl
model: llama-3.1-8b
gpu: h200
scheduler: {max_batch_tokens: 8192, max_seqs: 256}
serving: {mode: kv_inject, k: 50, header_tokens: 64, footer_tokens: 16}
store:
  gpu: {capacity: 30%, eviction: lru}
EOF

echo "## Machine"
echo
echo "- CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
echo "- OS: $(. /etc/os-release && echo "$PRETTY_NAME")"
echo "- load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "## Trace"
echo
echo '```sh'
echo "inferscale ${GEN[*]/#$TMP\//}"
echo '```'
echo
echo "## Config (bench.yaml)"
echo
echo '```yaml'
sed "s#$TMP/##" "$TMP/bench.yaml"
echo '```'
echo
echo "## Runs"
echo
echo '```sh'
echo "/usr/bin/time inferscale run bench.yaml --set replicas=R --set router=ROUTER \\"
echo "    --set output.requests_csv=CSV --no-progress    # $REPEATS runs per row"
echo '```'
echo
echo "| replicas | router | requests.csv | requests | wall s (fastest / median) | user s | req/s of wall (fastest / median) | x target | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|"

for row in "1 user_affinity" "8 user_affinity" "8 least_loaded"; do
  read -r replicas router <<<"$row"
  for csv in true false; do
    walls=()
    users=()
    rss=0
    for ((i = 0; i < REPEATS; ++i)); do
      rm -rf "$TMP/results"
      /usr/bin/time -f "%e %U %M" -o "$TMP/time" "$BIN" run "$TMP/bench.yaml" \
        --set replicas="$replicas" --set router="$router" --set output.requests_csv="$csv" \
        --out "$TMP/results" --no-progress >/dev/null
      read -r wall user kb <"$TMP/time"
      walls+=("$wall")
      users+=("$user")
      ((kb > rss)) && rss=$kb
    done
    done_requests=$(grep -m1 -o '"requests": [0-9]*' "$TMP/results/sim_throughput/default/summary.json" |
                    grep -o '[0-9]*$')
    mapfile -t sorted < <(printf '%s\n' "${walls[@]}" | sort -g)
    mapfile -t sorted_user < <(printf '%s\n' "${users[@]}" | sort -g)
    fastest=${sorted[0]}
    median=${sorted[$((REPEATS / 2))]}
    awk -v r="$replicas" -v ro="$router" -v c="$csv" -v n="$done_requests" -v f="$fastest" \
        -v m="$median" -v u="${sorted_user[$((REPEATS / 2))]}" -v kb="$rss" -v t="$TARGET" 'BEGIN {
      printf "| %s | %s | %s | %d | %.2f / %.2f | %.2f | %.0f / %.0f | %.2f | %.0f |\n",
             r, ro, (c == "true" ? "yes" : "no"), n, f, m, u, n / f, n / m, n / f / t, kb / 1024
    }'
  done
done
