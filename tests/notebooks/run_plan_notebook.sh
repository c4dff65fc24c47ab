#!/usr/bin/env bash
# Executes notebooks/plan.ipynb headless on a small capacity curve so it cannot rot.
# Usage: run_plan_notebook.sh INFERSCALE_BINARY NOTEBOOK PLAN WORKDIR USERS
set -euo pipefail
bin=$1 notebook=$2 plan=$3 work=$4 users=$5
rm -rf "$work" && mkdir -p "$work"
"$bin" plan "$plan" --out "$work/results" --users "$users" --jobs 2 -q > "$work/plan.txt"
name=$(ls "$work/results")
INFERSCALE_RESULTS="$work/results/$name" INFERSCALE_FIGURES="$work/figures" \
  python3 -m jupyter nbconvert --to notebook --execute "$notebook" --output-dir "$work" \
  --output executed.ipynb
test -s "$work/figures/plan_frontier.png" && test -s "$work/figures/plan_curve.png"
