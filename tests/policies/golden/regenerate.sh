#!/usr/bin/env bash
# Golden hit and miss counts: every built-in eviction policy replayed over trace.jsonl (12 users,
# 426 facts, 300 requests of k 8) at four capacities, exact counts in misses.csv. Any change in a
# policy's decisions shows as a diff of misses.csv.
#
#   regenerate:  tests/policies/golden/regenerate.sh build/inferscale
#   check:       tests/policies/golden/regenerate.sh build/inferscale --check OUT_DIR   (CTest)
#
# trace.jsonl is kept as written once (so a change of the generator does not move it) by:
#   inferscale trace generate --out trace.jsonl --users 12 --requests 300 --facts-per-user 40 \
#     --facts-per-user-spread 20 --k 8 --user-zipf 0.8 --fact-zipf 0.8 --seed 31 --live-sessions 1
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$1
out=$here
if [ "${2:-}" = --check ]; then
  out=$3
  mkdir -p "$out"
fi
"$bin" policy mrc "$here/trace.jsonl" --policies all --capacities 2%,5%,10%,25% \
  --kv-bytes-per-token 1 --name golden --threads 2 --out "$out/misses.csv" 2>/dev/null
if [ "${2:-}" = --check ]; then
  diff -u "$here/misses.csv" "$out/misses.csv"
fi
