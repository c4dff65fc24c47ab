#!/usr/bin/env bash
# Runs the commands of README.md on a fresh clone of this repository, as a new user on a CPU
# machine would, in the README's order, and prints a Markdown table: each command, its exit
# status, its wall time and the last line it printed. The GPU-only commands are expected to stop
# at once with an input error (status 2) naming what is missing; the rest must succeed.
#
# Usage: bench/readme_commands.sh [CLONE_DIR]   (default: a new folder under /tmp; removed after)
# Environment: INFERSCALE_LOCOMO (where LoCoMo is, for the two commands that read it; README.md,
#              "Data"), CMAKE_ARGS (passed to the build, e.g. a compiler launcher), MPI_RANKS (4)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${1:-}
if [[ -z $DIR ]]; then
  DIR=$(mktemp -d /tmp/inferscale-readme.XXXXXX)
  trap 'rm -rf "$DIR"' EXIT
fi
RANKS=${MPI_RANKS:-4}
git clone -q "$ROOT" "$DIR/clone" || { echo "cannot clone $ROOT" >&2; exit 2; }
cd "$DIR/clone" || exit 2

echo "- machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- clone of $(git -C "$ROOT" rev-parse --short HEAD)"
echo
echo "| command | expected | status | wall s | last line |"
echo "|---|---|---:|---:|---|"

# expect: 0 (must succeed) or 2 (must stop with an input error: a GPU-only command here).
run() {
  local expect=$1
  shift
  local cmd="$*" start end status last
  start=$(date +%s.%N)
  bash -c "$cmd" >"$DIR/out" 2>&1
  status=$?
  end=$(date +%s.%N)
  last=$(grep -v '^\s*$' "$DIR/out" | tail -1 | cut -c1-160 | sed 's/|/\\|/g')
  local verdict=ok
  [[ $status == "$expect" ]] || verdict="NOT AS EXPECTED"
  printf '| `%s` | %s | %s (%s) | %.1f | %s |\n' "$cmd" "$expect" "$status" "$verdict" \
    "$(echo "$end - $start" | bc)" "$last"
}

# "Two commands"
run 0 scripts/quickstart.sh
# "Using it"
run 0 build/inferscale run configs/quickstart.yaml --set serving.k=20 --runs kv_inject
run 0 build/inferscale validate configs/locomo.yaml
run 0 build/inferscale trace generate --users 1000 --requests 10000 --out pop.jsonl
run 0 build/inferscale trace import-locomo --users 10 --out locomo.jsonl
run 0 build/inferscale trace convert pop.jsonl pop.trace
run 0 build/inferscale policy mrc pop.jsonl --policies lru,s3fifo,belady --capacities 1%,5%,20% --out mrc.csv
run 2 build/inferscale run configs/headline.yaml --set executor.kind=gpu
run 2 build/inferscale calibrate --executor gpu --out my-profile.yaml
run 2 build/inferscale bench executor --model llama-3.1-8b --device cuda
run 2 timeout 10 build/inferscale serve-executor --listen 127.0.0.1:7070 --executor gpu
# "Capacity planning"
run 0 build/inferscale plan configs/plan_h200_50k.yaml --jobs 2
# "Several processes or machines (MPI)": needs the MPI packages, which scripts/test.sh installs
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  run 0 mpirun --oversubscribe -n "$RANKS" build/inferscale plan configs/plan_locomo_100k.yaml
  run 0 mpirun --oversubscribe -n "$RANKS" build/inferscale run configs/quickstart.yaml
fi
# "Two commands", the second
run 0 scripts/test.sh
