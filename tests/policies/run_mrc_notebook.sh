#!/usr/bin/env bash
# Executes notebooks/policy_mrc.ipynb headless on the committed MRC CSVs; the figures go to WORKDIR.
# Usage: run_mrc_notebook.sh SOURCE_DIR WORKDIR
set -euo pipefail
src=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
INFERSCALE_MRC_DIR="$src/bench/results" INFERSCALE_FIGURES="$work" \
  python3 -m jupyter nbconvert --to notebook --execute "$src/notebooks/policy_mrc.ipynb" \
  --output-dir "$work" --output executed.ipynb
for csv in "$src"/bench/results/mrc_*.csv; do
  name=$(basename "$csv" .csv)
  test -s "$work/$name.png" || { echo "missing $work/$name.png" >&2; exit 1; }
done
