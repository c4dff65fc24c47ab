#!/usr/bin/env python3
"""The GPU presets' `attention_mbu_curve` from a calibration's measured decode steps.

A decode step reads every sequence's KV cache once. For the decode-only points of a
`inferscale calibrate --points` CSV (no prefill, encode or load beside them) that share a
decode count B, the steps differ only in their contexts, so the slope of the measured time
over the bytes the step reads (the `hbm_bytes` column) is the time per byte of KV read at that
B: the weights, the step overhead and the per-sequence overhead are the same at every context
and drop out. The rate 1 / slope over the preset's HBM rate (hbm_gbps x mbu) is the factor of
mbu at B; capped so that mbu x factor is at most 1. At small B the KV bytes are a few per cent
of the step and each slope is noisy, so the factors are then made non-decreasing in B by
pooling adjacent violators (weighted by their points): more sequences give the attention kernel
more blocks to spread over the GPU, never fewer. Equal neighbours collapse into the first and
last of their run.

    python3 bench/fit_attention_mbu.py bench/results/calibration_h200.csv --gpu configs/gpus/h200.yaml
"""
import argparse
import csv
import math
import re

import yaml


def slope(xs, ys):
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("points", help="calibration points CSV (inferscale calibrate --points)")
    ap.add_argument("--gpu", required=True, help="the GPU preset the points were measured on")
    ap.add_argument("--min-contexts", type=int, default=3,
                    help="decode counts measured at fewer contexts are left out")
    args = ap.parse_args()
    gpu = yaml.safe_load(open(args.gpu))
    rate = gpu["hbm_gbps"] * 1e9 * gpu["mbu"]  # bytes per second
    by_decodes = {}
    for r in csv.DictReader(open(args.points)):
        m = re.fullmatch(r"decode (\d+)@(\d+)", r["label"])
        if not m:
            continue
        by_decodes.setdefault(int(m.group(1)), []).append(
            (float(r["hbm_bytes"]), float(r["measured_ns"])))
    points = []
    for b in sorted(by_decodes):
        xs = [x for x, _ in by_decodes[b]]
        ys = [y for _, y in by_decodes[b]]
        if len(xs) < args.min_contexts:
            continue
        achieved = 1e9 / slope(xs, ys)  # bytes per second
        factor = min(achieved / rate, math.floor(100 / gpu["mbu"]) / 100)
        print(f"# {b:4d} decodes: {len(xs)} contexts, KV read at {achieved / 1e12:.2f} TB/s, "
              f"factor {factor:.2f}")
        points.append([b, factor, len(xs)])
    # Pool adjacent violators: [B values, factor, weight] blocks, merged while one falls.
    blocks = []
    for b, f, w in points:
        blocks.append([[b], f, w])
        while len(blocks) > 1 and blocks[-2][1] > blocks[-1][1]:
            (b1, f1, w1), (b2, f2, w2) = blocks[-2], blocks[-1]
            blocks[-2:] = [[b1 + b2, (f1 * w1 + f2 * w2) / (w1 + w2), w1 + w2]]
    points = []
    for bs, f, _ in blocks:
        points += [(bs[0], f)] + ([(bs[-1], f)] if len(bs) > 1 else [])
    print("attention_mbu_curve: [" + ", ".join(f"[{b}, {f:.2f}]" for b, f in points) + "]")


if __name__ == "__main__":
    main()
