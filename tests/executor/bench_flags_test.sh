#!/bin/sh
# `inferscale bench executor` and its A/B flags (--split-kv, --split-kv-min-tiles, --cuda-graphs,
# --blas, --pdl): a bad value exits with status 2, the flag named in the error, no JSON written;
# good values reach the executor (the results' settings record them).
# Usage: bench_flags_test.sh INFERSCALE OUT_DIR
set -u
bin=$1
out=$2/bench_flags.json
mkdir -p "$2"
rm -f "$out"

bench() {
  "$bin" bench executor --model smollm2-135m --device cpu --batch 1 --k 0 --output 1 --reps 1 \
    --warmup 0 --out "$out" "$@"
}

# rejects FLAG VALUE EXPECTED: the bench with FLAG VALUE fails as it should: status 2, an error
# naming the flag and the value, then EXPECTED.
rejects() {
  err=$(bench "$1" "$2" 2>&1 >/dev/null)
  rc=$?
  [ "$rc" -eq 2 ] || { echo "$1 '$2': exit status $rc, expected 2"; exit 1; }
  case $err in
    *"$1: "*"$2 not in $3"*) ;;
    *) echo "$1 '$2': unexpected error: $err"; exit 1 ;;
  esac
  [ ! -e "$out" ] || { echo "$1 '$2': $out was written"; exit 1; }
}

for bad in 0 x 3x -1; do rejects --split-kv-min-tiles "$bad" "range 1 to 1048576"; done
for bad in yes 1 ON; do rejects --cuda-graphs "$bad" "{on,off}"; done
rejects --blas lt "{cublas,cublaslt,cublaslt_few_rows}"
rejects --split-kv maybe "{on,off}"
rejects --pdl true "{on,off}"
echo "bad --split-kv-min-tiles, --cuda-graphs, --blas, --split-kv and --pdl values rejected"

# Good values: every one lands in the results' settings.
bench --split-kv off --split-kv-min-tiles 3 --cuda-graphs off --blas cublas --pdl off \
  >/dev/null 2>&1 || { echo "the bench with good flags failed"; exit 1; }
python3 - "$out" <<'PY' || exit 1
import json, sys
s = json.load(open(sys.argv[1]))["settings"]
got = (s["split_kv"]["enabled"], s["split_kv"]["min_chunk_tiles"], s["cuda_graphs"]["enabled"],
       s["blas"]["library"], s["programmatic_launch"]["enabled"])
want = (False, 3, False, "cublas", False)
if got != want:
    sys.exit(f"settings {got}, expected {want}")
PY
echo "good flag values recorded in the results"
