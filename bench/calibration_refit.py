#!/usr/bin/env python3
"""Refits of the committed calibration points with other feature sets (exploration: what the
features alone can reach). The same fit as `inferscale calibrate`: non-negative least squares on
relative errors over the training points; error on the held-out ones.

    python3 bench/calibration_refit.py [bench/results/calibration_h200.csv] [--families]
    python3 bench/calibration_refit.py POINTS.csv --against OTHER.csv [--skip N]
    python3 bench/calibration_refit.py POINTS.csv --trend

--families prints instead the committed fit's error by family of points (prefill, decode +
prefill, ...: the label's kinds of work), from the CSV's measured and predicted times.
--against compares two calibrations' measurements point by point (same labels): the grid's
first N points (default 12) one by one, then the ratio's median and 10th / 90th percentiles over
the points after them (two machines, or one machine before and after a change).
--trend prints, by family, how each point's timed samples (in the order they were taken, after
the warm-up steps) move from the first to the last: the median over the family's points of last
/ first, and how many points fell by more than 2 % (not settled when timed).
"""
import csv
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def nnls(a, b, iterations=500):
    """Lawson-Hanson non-negative least squares."""
    n = a.shape[1]
    x, active = np.zeros(n), []
    w = a.T @ (b - a @ x)
    for _ in range(iterations):
        free = [j for j in range(n) if j not in active]
        if not free or max(w[free]) <= 1e-10:
            break
        active.append(free[int(np.argmax(w[free]))])
        while True:
            s = np.zeros(n)
            s[active] = np.linalg.lstsq(a[:, active], b, rcond=None)[0]
            if min(s[active]) > 0:
                x = s
                break
            alpha = min(x[k] / (x[k] - s[k]) for k in active if s[k] <= 0)
            x = x + alpha * (s - x)
            active = [k for k in active if x[k] > 1e-12]
        w = a.T @ (b - a @ x)
    return x


def families(rows, first):
    """MAPE and worst error of the CSV's own predictions by family of points, worst MAPE first."""
    by = {}
    for r in rows:
        by.setdefault(family(r[first["label"]]), []).append(abs(float(r[first["error_pct"]])))
    print("| family | points | MAPE | worst |")
    print("|---|---:|---:|---:|")
    for name, err in sorted(by.items(), key=lambda kv: -sum(kv[1]) / len(kv[1])):
        print(f"| {name} | {len(err)} | {sum(err) / len(err):.1f} % | {max(err):.1f} % |")


def family(label):
    """The label's kinds of work: "decode + prefill", ..."""
    return " + ".join(part.split()[0] for part in label.split(" + "))


def trend(path):
    """By family: the median last / first sample ratio and the points that fell by over 2 %."""
    by = {}
    for r in csv.DictReader(open(path)):
        samples = [float(x) for x in r["samples_ns"].split()]
        if len(samples) > 1:
            by.setdefault(family(r["label"]), []).append(samples[-1] / samples[0])
    print("| family | points | last / first sample (median) | fell by over 2 % |")
    print("|---|---:|---:|---:|")
    for name, ratios in sorted(by.items()):
        fell = sum(1 for x in ratios if x < 0.98)
        print(f"| {name} | {len(ratios)} | {np.median(ratios):.3f} | {fell} |")


def against(path, other, skip):
    """Measured time of each point of `path` over the same point's in `other`."""
    mine = {r["label"]: float(r["measured_ns"]) for r in csv.DictReader(open(path))}
    theirs = {r["label"]: float(r["measured_ns"]) for r in csv.DictReader(open(other))}
    labels = [l for l in mine if l in theirs]
    print("| point | measured ms | other ms | ratio |")
    print("|---|---:|---:|---:|")
    for l in labels[:skip]:
        print(f"| {l} | {mine[l] / 1e6:.2f} | {theirs[l] / 1e6:.2f} | {mine[l] / theirs[l]:.2f}x |")
    ratios = np.array([mine[l] / theirs[l] for l in labels[skip:]])
    print(f"\nthe other {len(ratios)} points: ratio median {np.median(ratios):.3f}, "
          f"10th percentile {np.percentile(ratios, 10):.3f}, 90th {np.percentile(ratios, 90):.3f}")


def main():
    if "--against" in sys.argv:
        i = sys.argv.index("--against")
        skip = int(sys.argv[sys.argv.index("--skip") + 1]) if "--skip" in sys.argv else 12
        against(sys.argv[1], sys.argv[i + 1], skip)
        return
    if "--trend" in sys.argv:
        trend(sys.argv[1])
        return
    args = [a for a in sys.argv[1:] if a != "--families"]
    path = args[0] if args else os.path.join(ROOT, "bench", "results", "calibration_h200.csv")
    rows = list(csv.reader(open(path)))
    header, rows = rows[0], rows[1:]
    first = {}
    for i, h in enumerate(header):
        first.setdefault(h, i)  # feature columns come before the raw counts of the same name

    def col(name):
        return np.array([float(r[first[name]]) for r in rows])

    if "--families" in sys.argv[1:]:
        families(rows, first)
        return
    train = np.array([r[first["split"]] == "train" for r in rows])
    y = col("measured_ns")
    prefill, decode, encode = col("prefill_tokens"), col("decode_tokens"), col("encode_tokens")
    # The shipped features: the columns between error_pct and the raw work counts.
    shipped = header[header.index("error_pct") + 1:header.index("gemm_flops")]
    without = lambda *names: [c for c in shipped if c not in names]
    sets = [
        ("the shipped features (" + ", ".join(shipped) + ")", shipped),
        ("without mixed", without("mixed")),
        ("without passes", without("passes")),
        ("tokens split into prefill, decode, encode", without("tokens") + [prefill, decode, encode]),
    ]
    print("| features | train MAPE | held-out MAPE | held-out worst |")
    print("|---|---:|---:|---:|")
    for name, features in sets:
        f = np.column_stack([col(c) if isinstance(c, str) else c for c in features])
        x = nnls(f[train] / y[train, None], np.ones(train.sum()))
        err = np.abs(f @ x - y) / y * 100
        print(f"| {name} | {err[train].mean():.2f} % | {err[~train].mean():.2f} % "
              f"| {err[~train].max():.1f} % |")


if __name__ == "__main__":
    main()
