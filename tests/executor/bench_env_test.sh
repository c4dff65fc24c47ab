#!/bin/sh
# `inferscale bench executor` with a bad INFERSCALE_SPLIT_KV_MIN_TILES, INFERSCALE_CUDA_GRAPHS or
# INFERSCALE_BLAS: exit status 2, the variable named in the error, no JSON written.
# Usage: bench_env_test.sh INFERSCALE OUT_DIR
set -u
bin=$1
out=$2/bad_split.json
mkdir -p "$2"
rm -f "$out"
for bad in 0 x 3x -1; do
  err=$(INFERSCALE_SPLIT_KV_MIN_TILES=$bad "$bin" bench executor --model smollm2-135m --device cpu \
    --batch 1 --k 0 --output 1 --reps 1 --warmup 0 --out "$out" 2>&1 >/dev/null)
  rc=$?
  [ "$rc" -eq 2 ] || { echo "'$bad': exit status $rc, expected 2"; exit 1; }
  case $err in
    *"INFERSCALE_SPLIT_KV_MIN_TILES: expected an integer >= 1, got '$bad'"*) ;;
    *) echo "'$bad': unexpected error: $err"; exit 1 ;;
  esac
  [ ! -e "$out" ] || { echo "'$bad': $out was written"; exit 1; }
done
for bad in yes 1 ON; do
  err=$(INFERSCALE_CUDA_GRAPHS=$bad "$bin" bench executor --model smollm2-135m --device cpu \
    --batch 1 --k 0 --output 1 --reps 1 --warmup 0 --out "$out" 2>&1 >/dev/null)
  rc=$?
  [ "$rc" -eq 2 ] || { echo "graphs '$bad': exit status $rc, expected 2"; exit 1; }
  case $err in
    *"INFERSCALE_CUDA_GRAPHS: expected on or off, got '$bad'"*) ;;
    *) echo "graphs '$bad': unexpected error: $err"; exit 1 ;;
  esac
  [ ! -e "$out" ] || { echo "graphs '$bad': $out was written"; exit 1; }
done
err=$(INFERSCALE_BLAS=lt "$bin" bench executor --model smollm2-135m --device cpu \
  --batch 1 --k 0 --output 1 --reps 1 --warmup 0 --out "$out" 2>&1 >/dev/null)
rc=$?
[ "$rc" -eq 2 ] || { echo "blas 'lt': exit status $rc, expected 2"; exit 1; }
case $err in
  *"INFERSCALE_BLAS: expected cublaslt or cublas, got 'lt'"*) ;;
  *) echo "blas 'lt': unexpected error: $err"; exit 1 ;;
esac
[ ! -e "$out" ] || { echo "blas 'lt': $out was written"; exit 1; }
echo "bad INFERSCALE_SPLIT_KV_MIN_TILES, INFERSCALE_CUDA_GRAPHS and INFERSCALE_BLAS values rejected"
