#!/bin/sh
# `inferscale bench executor` with a bad INFERSCALE_SPLIT_KV_MIN_TILES, INFERSCALE_CUDA_GRAPHS,
# INFERSCALE_BLAS, INFERSCALE_SPLIT_KV or INFERSCALE_PDL: exit status 2, the variable named in the error, no JSON written.
# Usage: bench_env_test.sh INFERSCALE OUT_DIR
set -u
bin=$1
out=$2/bad_env.json
mkdir -p "$2"
rm -f "$out"

# rejects VAR VALUE EXPECTED: the bench with VAR=VALUE fails as it should, saying EXPECTED.
rejects() {
  err=$(env "$1=$2" "$bin" bench executor --model smollm2-135m --device cpu \
    --batch 1 --k 0 --output 1 --reps 1 --warmup 0 --out "$out" 2>&1 >/dev/null)
  rc=$?
  [ "$rc" -eq 2 ] || { echo "$1='$2': exit status $rc, expected 2"; exit 1; }
  case $err in
    *"$1: $3, got '$2'"*) ;;
    *) echo "$1='$2': unexpected error: $err"; exit 1 ;;
  esac
  [ ! -e "$out" ] || { echo "$1='$2': $out was written"; exit 1; }
}

for bad in 0 x 3x -1; do rejects INFERSCALE_SPLIT_KV_MIN_TILES "$bad" "expected an integer >= 1"; done
for bad in yes 1 ON; do rejects INFERSCALE_CUDA_GRAPHS "$bad" "expected on or off"; done
rejects INFERSCALE_BLAS lt "expected cublas, cublaslt or cublaslt_few_rows"
rejects INFERSCALE_SPLIT_KV maybe "expected on or off"
rejects INFERSCALE_PDL true "expected on or off"
echo "bad INFERSCALE_SPLIT_KV_MIN_TILES, INFERSCALE_CUDA_GRAPHS, INFERSCALE_BLAS, INFERSCALE_SPLIT_KV, and INFERSCALE_PDL values rejected"
