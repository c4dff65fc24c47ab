#!/usr/bin/env bash
# Executes notebooks/fidelity.ipynb headless on a fidelity CSV so it cannot rot.
# Usage: run_fidelity_notebook.sh NOTEBOOK CSV WORKDIR
set -euo pipefail
notebook=$1 csv=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
INFERSCALE_FIDELITY_CSV="$csv" INFERSCALE_FIGURES="$work/figures" \
  python3 -m jupyter nbconvert --to notebook --execute "$notebook" --output-dir "$work" \
  --output executed.ipynb
test -s "$work/figures/fidelity_vs_k.png" && test -s "$work/figures/recompute_tradeoff.png"
