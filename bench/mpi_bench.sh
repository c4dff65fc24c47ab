#!/usr/bin/env bash
# MPI speedup: 2 ranks against 1 process, on a 100-candidate plan (bench/mpi_plan_100.yaml) and
# on a partitioned fleet run (population_scale.sh's setup with router: user_affinity and
# requests.csv on). Prints wall time, each rank's user CPU and peak RSS, and checks that the
# outputs are the same. bench/results/mpi.md records its output.
#
# Usage: bench/mpi_bench.sh [INFERSCALE] [plan|fleet|both] [USERS:REQUESTS:REPLICAS]
#        (default: build/inferscale, both, 1000000:10000000:256)
# Environment: RANKS (2), RATE_PER_REPLICA (8 requests/s), MPIEXEC (mpirun), KEEP (a folder:
#              the 1-process plan's probes.csv and progress log, and the fleet run's requests
#              per replica go there, for the projection).
set -euo pipefail
BIN=$(realpath "${1:-build/inferscale}")
WHAT=${2:-both}
CELL=${3:-1000000:10000000:256}
RANKS=${RANKS:-2}
RATE_PER_REPLICA=${RATE_PER_REPLICA:-8}
MPIEXEC=${MPIEXEC:-mpirun}
here=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mpi=("$MPIEXEC" -n "$RANKS")
"$MPIEXEC" --version 2>&1 | grep -qiE "open ?(mpi|rte)" && mpi+=(--oversubscribe)

echo "- CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB"
echo "- commit: $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)"

# timed LABEL RANKS COMMAND...: wall time of the whole, and per rank (process) user CPU and peak
# RSS from /usr/bin/time around each rank.
timed() {
  local label=$1 n=$2
  shift 2
  local start end
  echo "  load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  start=$(date +%s.%N)
  if [ "$n" = 1 ]; then
    /usr/bin/time -f "%U %M" -o "$TMP/time.0" "$@" >"$TMP/$label.log" 2>&1
  else
    "${mpi[@]}" sh -c '/usr/bin/time -f "%U %M" -o "$0.$OMPI_COMM_WORLD_RANK" "$@"' \
      "$TMP/time" "$@" >"$TMP/$label.log" 2>&1
  fi
  end=$(date +%s.%N)
  local ranks=""
  for r in $(seq 0 $((n - 1))); do
    read -r user rss <"$TMP/time.$r"
    ranks+=" rank $r: ${user} s user CPU, $((rss / 1024)) MiB peak RSS;"
  done
  printf '| %s | %d | %.1f |%s |\n' "$label" "$n" "$(echo "$end - $start" | bc)" "$ranks"
  echo "  load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  rm -f "$TMP"/time.*
}

if [ "$WHAT" = plan ] || [ "$WHAT" = both ]; then
  echo
  echo "plan: inferscale plan bench/mpi_plan_100.yaml (100 candidates), --jobs 1 per process"
  echo
  echo "| run | processes | wall s | per rank |"
  echo "|---|---:|---:|---|"
  timed plan-1 1 "$BIN" plan "$here/mpi_plan_100.yaml" --out "$TMP/p1" --jobs 1
  timed plan-$RANKS "$RANKS" "$BIN" plan "$here/mpi_plan_100.yaml" --out "$TMP/p2" --jobs 1 -q
  timed plan-threads-$RANKS 1 "$BIN" plan "$here/mpi_plan_100.yaml" --out "$TMP/p3" \
    --jobs "$RANKS" -q
  grep -a 'candidates:' "$TMP/plan-1.log" | tail -1 | sed 's/^/  /'
  if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP"
    cp "$TMP/plan-1.log" "$KEEP/plan-1.log"
    cp "$TMP/p1/mpi_plan_100/probes.csv" "$KEEP/probes.csv"
  fi
  for f in plan.csv frontier.csv; do
    cmp -s "$TMP/p1/mpi_plan_100/$f" "$TMP/p2/mpi_plan_100/$f" && echo "  $f: identical" ||
      echo "  $f: DIFFERS"
  done
fi

if [ "$WHAT" = fleet ] || [ "$WHAT" = both ]; then
  IFS=: read -r users requests replicas <<<"$CELL"
  cat >"$TMP/fleet.yaml" <<YAML
experiment: fleet
seed: 1
trace: {generate: {users: $users, requests: $requests, k: 50, arrival: poisson,
                   rate: $((RATE_PER_REPLICA * replicas))}}
model: llama-3.1-8b
gpu: h200
replicas: $replicas
router: user_affinity
scheduler: {max_batch_tokens: 8192, max_seqs: 256}
serving: {mode: kv_inject, k: 50, header_tokens: 64, footer_tokens: 16}
store:
  warm: false
  gpu: {capacity: 30%, eviction: lru}
  host: {capacity: 64GB, eviction: lru}
output: {requests_csv: true}
YAML
  echo
  echo "fleet: $users users, $requests requests, $replicas replicas, user_affinity, requests.csv on"
  echo
  echo "| run | processes | wall s | per rank |"
  echo "|---|---:|---:|---|"
  timed fleet-1 1 "$BIN" run "$TMP/fleet.yaml" --out "$TMP/f1" --no-progress
  timed fleet-$RANKS "$RANKS" "$BIN" run "$TMP/fleet.yaml" --out "$TMP/f2" --no-progress
  if [ -n "${KEEP:-}" ]; then  # requests per replica, for the projection's load imbalance
    mkdir -p "$KEEP"
    awk -F, 'NR > 1 { n[$3]++ } END { for (r in n) print r, n[r] }' \
      "$TMP/f1/fleet/default/requests.csv" | sort -n >"$KEEP/replica_requests.txt"
  fi
  cmp -s "$TMP/f1/fleet/default/requests.csv" "$TMP/f2/fleet/default/requests.csv" &&
    echo "  requests.csv: identical" || echo "  requests.csv: DIFFERS"
  cmp -s <(grep -v -e '"wall_s"' -e events_per_s "$TMP/f1/fleet/default/summary.json") \
    <(grep -v -e '"wall_s"' -e events_per_s "$TMP/f2/fleet/default/summary.json") &&
    echo "  summary.json (but wall time): identical" || echo "  summary.json: DIFFERS"
  grep -h '"wall_s"' "$TMP/f1/fleet/default/summary.json" "$TMP/f2/fleet/default/summary.json" |
    sed 's/^ */  simulator /'
fi
