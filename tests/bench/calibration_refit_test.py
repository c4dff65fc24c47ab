#!/usr/bin/env python3
"""Checks bench/calibration_refit.py --trend on a hand-made points file: by family, the median
last / first sample ratio and the points that fell by more than 2 %.

    calibration_refit_test.py WORK_DIR
"""
import os
import subprocess
import sys

from bench_check import check, work_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "calibration_refit.py")


def main():
    work = work_dir()
    path = os.path.join(work, "points.csv")
    with open(path, "w") as f:
        f.write("point,label,measured_ns,samples_ns\n")
        f.write('0,"decode 64@1104",8,100 99 98\n')          # fell by 2 %: not over
        f.write('1,"decode 128@1104",10,100 99 97\n')        # fell by 3 %
        f.write('2,"decode 8@80 + prefill 1x64",5,100 101 102\n')
        f.write('3,"prefill 4x64 k10",5,100\n')              # one sample: no trend
    out = subprocess.run([sys.executable, SCRIPT, path, "--trend"], capture_output=True,
                         text=True, check=True).stdout
    rows = [line for line in out.splitlines() if line.startswith("| decode")]
    check(rows == ["| decode | 2 | 0.975 | 1 |", "| decode + prefill | 1 | 1.020 | 0 |"],
          f"trend rows {rows}")
    check("| prefill |" not in out, "a point of one sample has no trend")
    print("calibration_refit --trend: by family, last / first and the points that fell")


if __name__ == "__main__":
    main()
