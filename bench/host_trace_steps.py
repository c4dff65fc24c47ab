#!/usr/bin/env python3
"""Steps of a hardware-in-the-loop run side by side with the host's trace of each
(INFERSCALE_HOST_TRACE=1: a `host trace:` line per executor step on stderr), to see what the slow
steps do differently: when the host finished launching the forward pass (and how long the launch
took) and when it synchronized, how long it took to issue the step's asynchronous offloads, and
how many device allocations the caching allocator made during the step.

    INFERSCALE_HOST_TRACE=1 inferscale run ... 2> run.log      (or the device script's hil.log;
                                                               gzipped logs are read as they are)
    python3 bench/host_trace_steps.py run.log --skip N [--calibrated cal_timeline.json]
        [--slow 1.25]

The trace lines are read in order; --skip drops the first N (the steps of runs before this one,
e.g. the text run's when this is kv_inject's: its step count is the length of its timeline).
--steps N keeps only N lines. With --calibrated (the same experiment's timeline in calibrated
simulation, same decisions) each step's priced time is shown and steps measured more than
--slow times their price are marked.
"""
import argparse
import gzip
import json
import re


def trace_lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    for line in opener(path, "rt", errors="replace"):
        if line.startswith("host trace:"):
            yield dict(re.findall(r"(\w+)=(-?\d+)", line))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--skip", type=int, default=0)
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--calibrated")
    ap.add_argument("--slow", type=float, default=1.25)
    a = ap.parse_args()
    lines = list(trace_lines(a.log))[a.skip:]
    if a.steps:
        lines = lines[:a.steps]
    priced = []
    if a.calibrated:
        priced = [e["dur"] / 1000 for e in json.load(open(a.calibrated))["traceEvents"]]
    print("| step | prefills | decodes | tokens | device ms | priced ms | host offload issue ms"
          " (offloads, us each) | host forward ms | host launch ms | host sync ms | device allocs"
          " | alloc retries | reserved GB | |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    prev = None
    for i, t in enumerate(lines):
        get = lambda k: int(t.get(k, 0))
        dev = get("device_us") / 1000
        allocs = get("device_allocs") - (int(prev.get("device_allocs", 0)) if prev else 0)
        retries = get("alloc_retries") - (int(prev.get("alloc_retries", 0)) if prev else 0)
        p = priced[i] if i < len(priced) else None
        slow = p is not None and dev > a.slow * p
        # Traces from before the offload stamps have neither: no figure.
        issue = ""
        if "async_offloads" in t and get("n_async_offloads") > 0:
            # From the launch of the pass when the step issued its copies after it.
            us = get("async_offloads") - get("launched" if "launched" in t else "sync_offloads")
            issue = f"{us / 1000:.2f} ({get('n_async_offloads')}, {us / get('n_async_offloads'):.1f})"
        # From the pass's inputs uploaded to the forward's last launch (steps with a forward).
        launch = f"{(get('forward') - get('finalize')) / 1000:.2f}" if "finalize" in t else ""
        print(f"| {i} | {get('prefills')} | {get('decodes')} | {get('tokens')} | {dev:.2f} | "
              f"{'' if p is None else f'{p:.2f}'} | {issue} | {get('forward') / 1000:.2f} | "
              f"{launch} | {get('sync') / 1000:.2f} | {allocs if prev else ''} | "
              f"{retries if prev else ''} | {get('reserved_mb') / 1024:.1f} | "
              f"{'slow' if slow else ''} |")
        prev = t


if __name__ == "__main__":
    main()
