#!/usr/bin/env python3
"""Checks bench/headline_table.py's --clusters arithmetic: its percentile is the simulator's (the
same value as summary.json's p50 and p99 for a small run), and on a hand-made run the groups of
equal TTFT and the requests that would have to move for a percentile to jump; and --first-wave's
rows from two hand-made step timelines of different lengths, and when each had its first wave's
loads; --common-steps' ratios by kind; --decode-steps' median; the host trace's offload issue
time before and after the pass.

    headline_table_test.py INFERSCALE WORK_DIR
"""
import csv
import json
import os
import subprocess
import sys

from bench_check import check, work_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import headline_table  # noqa: E402


def write_requests(path, ttfts):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "ttft"])
        for i, t in enumerate(ttfts):
            w.writerow([i, t])


def main():
    binary, work = sys.argv[1], work_dir(2)

    # 10 requests in groups 1.0 x3, 2.0 x4, 5.0 x3. p50 is rank 5 (index 4), the second group's
    # second request: it lands on 1.0 if 2 requests from the rank up took their first token
    # sooner than 1.0, on 5.0 if 3 from the rank down took it later than 2.0.
    path = os.path.join(work, "hand.csv")
    write_requests(path, [2.0, 1.0, 5.0, 2.0, 1.0, 2.0, 5.0, 1.0, 2.0, 5.0])
    ttfts, groups = headline_table.ttft_groups(path)
    check(groups == [[1.0, 0, 3], [2.0, 3, 7], [5.0, 7, 10]], f"groups {groups}")
    value, size, up, down = headline_table.percentile_edges(path, 0.5)
    check(value == 2.0 and size == 4, f"p50 {value} in a group of {size}")
    check(up == (5.0, 3), f"next group up {up}")
    check(down == (1.0, 2), f"next group down {down}")
    value, size, up, down = headline_table.percentile_edges(path, 0.99)
    check(value == 5.0 and up is None and down == (2.0, 3), f"p99 {value} {up} {down}")

    # The simulator's percentiles (nearest rank) on a run of its own.
    out = os.path.join(work, "run")
    subprocess.run([binary, "run", os.path.join(ROOT, "configs", "k_sweep.yaml"), "--no-progress",
                    "--runs", "kv_inject_k50", "--set", "trace.generate.requests=301",
                    "--set", "experiment=clusters", "--out", out],
                   check=True, stdout=subprocess.DEVNULL)
    run = os.path.join(out, "clusters", "kv_inject_k50")
    summary = json.load(open(os.path.join(run, "summary.json")))
    for key, q in (("p50", 0.50), ("p99", 0.99)):
        value = headline_table.percentile_edges(os.path.join(run, "requests.csv"), q)[0]
        check(abs(value - summary["ttft_ms"][key]) <= 1e-6 * summary["ttft_ms"][key],
              f"{key}: {value} against summary.json's {summary['ttft_ms'][key]}")
    print("headline_table --clusters: groups and percentiles as the simulator's")

    # --first-wave: the first n steps of both, side by side, cut at the shorter timeline.
    def timeline(path, steps):
        events = [{"name": "step", "ts": ts, "dur": dur,
                   "args": {"prefills": p, "load_us": load}} for ts, dur, p, load in steps]
        json.dump({"traceEvents": events}, open(path, "w"))
    hw, cal = os.path.join(work, "hw.json"), os.path.join(work, "cal.json")
    timeline(hw, [(0, 52000, 36, 20500), (52000, 42340, 24, 18200), (94340, 13000, 0, 0)])
    timeline(cal, [(0, 49780, 36, 19200), (49780, 38110, 22, 15400)])
    rows = headline_table.first_wave_rows(200, "t", hw, cal, 8)
    check(rows == [(200, "t", 1, "0.0", 36, "20.5", "52.00", "0.0", 36, "19.2", "49.78"),
                   (200, "t", 2, "52.0", 24, "18.2", "42.34", "49.8", 22, "15.4", "38.11")],
          f"first wave rows {rows}")
    check(headline_table.first_wave_rows(200, "t", hw, cal, 1) == rows[:1], "first wave n = 1")
    check(headline_table.first_wave_rows(200, "t", os.path.join(work, "none.json"), cal, 8) == [],
          "first wave without a hardware timeline")
    print("headline_table --first-wave: the first steps of both timelines side by side")

    # --first-wave's delivery: the latest end of a load wait from the step issuing the wave's
    # loads to the one completing every user's first request (3 users here), not later.
    def wave(path, steps):
        events = [{"name": "step", "ts": ts, "dur": 1000,
                   "args": {"prefills": p, "load_us": load, "async_loads": a}}
                  for ts, p, load, a in steps]
        json.dump({"traceEvents": events}, open(path, "w"))
    wave(hw, [(0, 0, 0, 0), (1000, 1, 0, 40), (2000, 1, 9000, 0), (12000, 1, 3000, 0),
              (16000, 1, 30000, 0)])
    wave(cal, [(0, 0, 0, 0), (1000, 1, 0, 40), (2000, 2, 11000, 0)])
    rows = headline_table.wave_delivery_rows(3, "t", hw, cal)
    check(rows == [(3, "t", "15.0", "13.0", "0.867x")], f"wave delivery rows {rows}")
    check(headline_table.wave_delivery_rows(4, "t", hw, cal) == [],
          "a wave the calibrated run does not complete")
    print("headline_table --first-wave: when each run's first wave had its loads")

    # --common-steps: the steps both took alike from the first, by kind, outside load waits.
    def steps(path, rows):
        events = [{"name": "step", "ts": 0, "dur": dur,
                   "args": {"prefills": p, "decodes": d, "async_loads": a, "tokens": t,
                            "load_us": load}} for dur, p, d, a, t, load in rows]
        json.dump({"traceEvents": events}, open(path, "w"))
    steps(hw, [(50000, 36, 0, 800, 1000, 10000), (20000, 12, 36, 0, 400, 0),
               (10000, 0, 48, 0, 48, 0), (10000, 0, 48, 0, 48, 0), (9000, 0, 48, 0, 48, 0)])
    steps(cal, [(45000, 36, 0, 800, 1000, 9000), (18000, 12, 36, 0, 400, 0),
                (10500, 0, 48, 0, 48, 0), (10200, 0, 48, 0, 48, 0), (9000, 1, 47, 0, 60, 0)])
    ratios = headline_table.common_step_ratios(hw, cal)
    check([k for k, _ in ratios] == ["prefill + copies", "mixed", "decode", "decode"],
          f"common steps {ratios}")
    check(abs(ratios[0][1] - 36 / 40) < 1e-12, "time outside the load wait")
    rows = headline_table.common_step_rows(200, "kv_inject", ratios)
    check(rows == [(200, "kv_inject", "decode", 2, "1.035x", "1.020-1.050x"),
                   (200, "kv_inject", "mixed", 1, "0.900x", "0.900-0.900x"),
                   (200, "kv_inject", "prefill + copies", 1, "0.900x", "0.900-0.900x")],
          f"common step rows {rows}")
    check(headline_table.common_step_ratios(os.path.join(work, "none.json"), cal) is None,
          "common steps without a hardware timeline")
    print("headline_table --common-steps: the steps taken alike, by kind")

    # --decode-steps: only steps that decode every user's request and nothing else count.
    steps = [{"name": "step", "ts": 0, "dur": d, "args": a} for d, a in (
        (13000, {"decodes": 3, "prefills": 0, "async_loads": 0}),
        (15000, {"decodes": 3, "prefills": 0, "async_loads": 0}),
        (14000, {"decodes": 3, "prefills": 0}),
        (40000, {"decodes": 3, "prefills": 1}),
        (90000, {"decodes": 3, "prefills": 0, "async_loads": 5}),
        (9000, {"decodes": 2, "prefills": 0}))]
    path = os.path.join(work, "decodes.json")
    json.dump({"traceEvents": steps}, open(path, "w"))
    rows = headline_table.decode_step_rows(3, "t", path)
    check(rows == [(3, "t", 3, "14.00")], f"decode steps {rows}")
    check(headline_table.decode_step_rows(3, "t", os.path.join(work, "none.json")) == [],
          "decode steps without a timeline")
    print("headline_table --decode-steps: the median of the steps that decode every request")

    # --first-issue / --offload-parts: the offloads' issue time from the synchronous offloads, or
    # from the pass's launch in a step that issued its copies after it.
    before = {"sync_offloads": 20, "async_offloads": 820, "launched": 30000}
    check(headline_table.offload_issue_us({k: before[k] for k in ("sync_offloads",
                                                                  "async_offloads")}) == 800,
          "offload issue before the pass")
    after = dict(before, async_offloads=30900)
    check(headline_table.offload_issue_us(after) == 900, "offload issue after the pass")
    print("headline_table --first-issue: offloads issued before or after the pass")


if __name__ == "__main__":
    main()
