#!/usr/bin/env bash
# Executes notebooks/memory_hierarchy.ipynb headless on a table's CSV so it cannot rot.
# Usage: run_memory_hierarchy_notebook.sh NOTEBOOK CSV WORKDIR
set -euo pipefail
notebook=$1 csv=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
INFERSCALE_HIERARCHY_CSV="$csv" INFERSCALE_FIGURES="$work/figures" \
  python3 -m jupyter nbconvert --to notebook --execute "$notebook" --output-dir "$work" \
  --output executed.ipynb
test -s "$work/figures/memory_hierarchy.png"
