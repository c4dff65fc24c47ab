#!/usr/bin/env bash
# The planner's benchmark: a 270-candidate search for 100,000 LoCoMo-shaped users
# (configs/plan_locomo_100k.yaml), from an empty probe cache, then the same plan resumed.
#   bench/plan_bench.sh [BUILD_DIR] [JOBS]      # results in bench/results/plan.md
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$here/build}"
jobs="${2:-$(nproc)}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cd "$here"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "command: inferscale plan configs/plan_locomo_100k.yaml --jobs $jobs -q"
/usr/bin/time -f "wall %e s, user %U s, max RSS %M KiB" \
  "$build/inferscale" plan configs/plan_locomo_100k.yaml --jobs "$jobs" --out "$out" -q
echo "resumed (every probe from the cache):"
/usr/bin/time -f "wall %e s" \
  "$build/inferscale" plan configs/plan_locomo_100k.yaml --jobs "$jobs" --out "$out" -q --resume |
  tail -2
