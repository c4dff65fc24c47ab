#!/usr/bin/env python3
"""Two `inferscale bench executor` grids side by side: each row's TTFT and TPOT (medians over the
repetitions) in the first over the second, and their range, for the rows both measured.

    python3 bench/executor_grid_compare.py NEW.json BASE.json

e.g. a re-measurement against the grid of an earlier commit or machine:
    python3 bench/executor_grid_compare.py bench/results/executor_h200_8bd4abe.json \
        bench/results/executor_h200_67be213.json
"""
import argparse
import json
import sys


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def rows(path):
    """(mode, batch, k) -> (TTFT ms, TPOT ms)."""
    try:
        with open(path) as f:
            grid = json.load(f)
        return {(r["mode"], r["batch"], r["k"]): (r["ttft_ms"], r["tpot_ms"])
                for r in grid["rows"]}
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")
    except (KeyError, TypeError) as e:
        fail(f"{path}: not an executor grid (rows of mode, batch, k, ttft_ms, tpot_ms): "
             f"missing {e}")


def compare(new, base):
    """Rows (mode, batch, k, new TTFT, base TTFT, ratio, new TPOT, base TPOT, ratio) for the keys
    of both, in the new grid's order."""
    out = []
    for key, (ttft, tpot) in new.items():
        if key not in base:
            continue
        bt, bp = base[key]
        out.append(key + (ttft, bt, ttft / bt, tpot, bp, tpot / bp))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("new")
    ap.add_argument("base")
    a = ap.parse_args()
    table = compare(rows(a.new), rows(a.base))
    if not table:
        fail(f"{a.new} and {a.base} share no (mode, batch, k) row")
    print("| mode | batch | k | TTFT ms | base | ratio | TPOT ms | base | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for m, b, k, t, bt, rt, p, bp, rp in table:
        print(f"| {m} | {b} | {k} | {t:.3f} | {bt:.3f} | {rt:.3f} | {p:.3f} | {bp:.3f} | {rp:.3f} |")
    ttft = [r[5] for r in table]
    tpot = [r[8] for r in table]
    print(f"\n{len(table)} rows: TTFT {min(ttft) - 1:+.1%} to {max(ttft) - 1:+.1%}, "
          f"TPOT {min(tpot) - 1:+.1%} to {max(tpot) - 1:+.1%}")


if __name__ == "__main__":
    main()
