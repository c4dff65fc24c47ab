#!/usr/bin/env python3
"""Checks bench/executor_grid_compare.py on two hand-made grids: ratios for the shared rows only,
the range line, and a clear error (exit status 2) when the grids share no row or a file is not
a grid.

    executor_grid_compare_test.py WORK_DIR
"""
import json
import os
import subprocess
import sys

from bench_check import check, work_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "executor_grid_compare.py")


def grid(path, rows):
    with open(path, "w") as f:
        json.dump({"rows": [{"mode": m, "batch": b, "k": k, "ttft_ms": t, "tpot_ms": p}
                            for m, b, k, t, p in rows]}, f)


def main():
    work = work_dir()
    new, base, other = (os.path.join(work, n) for n in ("new.json", "base.json", "other.json"))
    grid(new, [("text", 1, 0, 5.5, 4.4), ("kv_inject", 16, 50, 9.0, 5.0), ("text", 64, 0, 1, 1)])
    grid(base, [("text", 1, 0, 5.0, 4.0), ("kv_inject", 16, 50, 10.0, 5.0)])
    grid(other, [("text", 2, 0, 5.0, 4.0)])
    out = subprocess.run([sys.executable, SCRIPT, new, base], check=True, capture_output=True,
                         text=True).stdout
    check("| text | 1 | 0 | 5.500 | 5.000 | 1.100 | 4.400 | 4.000 | 1.100 |" in out, out)
    check("| kv_inject | 16 | 50 | 9.000 | 10.000 | 0.900 | 5.000 | 5.000 | 1.000 |" in out, out)
    check("| text | 64 |" not in out, "a row only the new grid has is left out")
    check("2 rows: TTFT -10.0% to +10.0%, TPOT +0.0% to +10.0%" in out, out)
    r = subprocess.run([sys.executable, SCRIPT, new, other], capture_output=True, text=True)
    check(r.returncode == 2 and "share no (mode, batch, k) row" in r.stderr, r.stderr)
    with open(other, "w") as f:
        json.dump({"rows": [{"mode": "text"}]}, f)
    r = subprocess.run([sys.executable, SCRIPT, new, other], capture_output=True, text=True)
    check(r.returncode == 2 and other in r.stderr and "missing 'batch'" in r.stderr, r.stderr)
    print("executor_grid_compare: ok")


if __name__ == "__main__":
    main()
