#!/usr/bin/env bash
# Executes a notebook headless on a small run so it cannot rot.
# Usage: run_notebook.sh INFERSCALE_BINARY NOTEBOOK CONFIG WORKDIR [--set ...]
set -euo pipefail
bin=$1 notebook=$2 config=$3 work=$4
shift 4
rm -rf "$work" && mkdir -p "$work"
"$bin" run "$config" --out "$work/results" --no-progress "$@" > "$work/run.txt"
experiment=$(ls "$work/results")
INFERSCALE_RESULTS="$work/results/$experiment" INFERSCALE_FIGURES="$work/figures" \
  python3 -m jupyter nbconvert --to notebook --execute "$notebook" --output-dir "$work" \
  --output executed.ipynb
test -s "$work/figures/ttft_cdf.png" && test -s "$work/figures/ttft_vs_k.png"
