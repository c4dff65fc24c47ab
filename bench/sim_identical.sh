#!/usr/bin/env bash
# Results unchanged: runs two builds of `inferscale` (a baseline and a candidate) on the cases
# below and checks that requests.csv and summary.json are byte-identical, but for the
# simulator's own timing (summary.json's "simulator" object: wall_s, events_per_s).
#
# Usage: bench/sim_identical.sh BASELINE CANDIDATE
# Environment: LOCOMO (folder of the LoCoMo data for configs/headline.yaml; that case is
#              skipped when unset), CASES (space-separated case names; default: all)
# Prints one line per case (identical / DIFFERENT) and exits 1 when any case differs.
set -euo pipefail

BASE=${1:?usage: bench/sim_identical.sh BASELINE CANDIDATE}
NEW=${2:?usage: bench/sim_identical.sh BASELINE CANDIDATE}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
for b in "$BASE" "$NEW"; do
  [[ -x "$b" ]] || { echo "no executable at $b" >&2; exit 2; }
done

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# The 200k-request trace of sim_throughput.md, and a 20k one for the policy variants.
"$BASE" trace generate --users 2000 --requests 200000 --rate 50 --seed 1 \
  --out "$TMP/t200k.jsonl" >/dev/null
"$BASE" trace generate --users 500 --requests 20000 --rate 50 --seed 2 \
  --out "$TMP/t20k.jsonl" >/dev/null

bench_yaml() {  # $1: trace, $2: store block
  cat <<EOF
experiment: identical
seed: 1
trace: $1
model: llama-3.1-8b
gpu: h200
scheduler: {max_batch_tokens: 8192, max_seqs: 256}
serving: {mode: kv_inject, k: 50, header_tokens: 64, footer_tokens: 16}
store:
$2
EOF
}
bench_yaml "$TMP/t200k.jsonl" "  gpu: {capacity: 30%, eviction: lru}" >"$TMP/lru200k.yaml"
bench_yaml "$TMP/t20k.jsonl" "  gpu: {capacity: 10%, eviction: fifo}
  host: {capacity: 4GB, eviction: lru}" >"$TMP/fifo_host.yaml"
bench_yaml "$TMP/t20k.jsonl" "  gpu: {capacity: 10%, eviction: slru}" >"$TMP/slru.yaml"

# name | config | extra arguments
CASE_LIST=(
  "quickstart|$ROOT/configs/quickstart.yaml|"
  "headline|$ROOT/configs/headline.yaml|--set trace.locomo.users=50"
  "lru200k_1|$TMP/lru200k.yaml|--set replicas=1"
  "lru200k_8ll|$TMP/lru200k.yaml|--set replicas=8 --set router=least_loaded"
  "lru200k_8ua|$TMP/lru200k.yaml|--set replicas=8 --set router=user_affinity"
  "lru200k_3rr|$TMP/lru200k.yaml|--set replicas=3 --set router=round_robin"
  "fifo_host|$TMP/fifo_host.yaml|"
  "fifo_host_8ua|$TMP/fifo_host.yaml|--set replicas=8 --set router=user_affinity"
  "slru|$TMP/slru.yaml|"
)

status=0
for entry in "${CASE_LIST[@]}"; do
  IFS='|' read -r name cfg extra <<<"$entry"
  if [[ -n "${CASES:-}" && " $CASES " != *" $name "* ]]; then continue; fi
  args=()
  [[ -n "$extra" ]] && read -r -a args <<<"$extra"
  if [[ $name == headline ]]; then
    [[ -n "${LOCOMO:-}" ]] || { echo "$name: skipped (LOCOMO unset)"; continue; }
    args+=(--set "trace.locomo.data=$LOCOMO")
  fi
  for side in base new; do
    bin=$BASE
    [[ $side == new ]] && bin=$NEW
    rm -rf "$TMP/out" "$TMP/$side"
    # One trace cache for both sides, so generated traces (and the config echo) are the same.
    (cd "$TMP" && "$bin" run "$cfg" "${args[@]}" --out "$TMP/out" --no-progress >/dev/null)
    mkdir -p "$TMP/$side"
    while IFS= read -r f; do
      rel=${f#"$TMP/out/"}
      mkdir -p "$TMP/$side/$(dirname "$rel")"
      if [[ $f == */summary.json ]]; then
        # The simulator's timing is the only field allowed to differ.
        sed -E 's/"(wall_s|events_per_s)": *[-0-9.eE+]+/"\1": 0/' "$f" >"$TMP/$side/$rel"
      else
        cp "$f" "$TMP/$side/$rel"
      fi
    done < <(find "$TMP/out" -type f \( -name requests.csv -o -name summary.json \))
  done
  n=$(find "$TMP/base" -type f | wc -l)
  if [[ $n -gt 0 ]] && diff -r "$TMP/base" "$TMP/new" >/dev/null; then
    echo "$name: identical ($n files)"
  else
    echo "$name: DIFFERENT ($n files)"
    status=1
  fi
done
exit $status
