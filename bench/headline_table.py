#!/usr/bin/env python3
"""The headline experiment's table: hardware-in-the-loop summaries (bench/results/headline_hil/,
from `scripts/device/h200.sh` phase `hil`) next to the same runs in calibrated simulation and on
the datasheet cost model, which this script runs here.

    python3 bench/headline_table.py [--inferscale build/inferscale] [--data ../shared/data/locomo10]
        [--figure bench/results/headline_hil.png] [--steps] [--step-details [--slow 1.25]]
        [--tag TAG] [--profile NAME|PATH] [--users 50,100,150,200] [--clusters] [--first-issue]
        [--offload-parts] [--first-wave N] [--decode-steps] [--common-steps]

--steps also compares the runs step by step where both took the same steps (copies inside the
step: the same decisions): total time of each kind of step in hardware in the loop and in
calibrated simulation, and the hardware's time per host load. --tag reads U_MODE_TAG.json and
its repeats U_MODE_TAG_*.json (HIL_REPEATS: _r2, ...): with several runs the hardware row is their
mean (each figure averaged), and the calibrated figures are also compared with each run.
--step-details lists, for each run with a step timeline (U_MODE_TAG_timeline.json and
U_MODE_TAG_r2_timeline.json) that took the calibrated run's steps, every prefill step against its
price, the median calibrated / hardware ratio of its decode steps, and the decode steps measured
more than --slow times their price. --clusters says, for each run with its requests
(U_MODE_TAG_requests.csv) and for the calibrated run, where TTFT p50 and p99 sit among the
groups of requests of equal TTFT: how many requests would have to take their first token later
(or sooner) for the percentile to land on the next group, and how far that group is.
--first-issue lists, for each tag with a host trace (host_trace_TAG.log.gz, the device script's
hil.log with INFERSCALE_HOST_TRACE=1), the host's time per copy issued in kv_inject's first step
with copies, beside that run's kv_inject TTFT p50. --offload-parts lists, for each tag with a
host trace, its first four steps with copies: the host's time issuing the offloads, by part where
the trace times them (from 320ca13). --first-wave N lists, for each tag's kv_inject step timeline
(U_MODE_TAG_timeline.json), its first N steps beside the calibrated run's: when each starts, its
prefills, how long it waits for loads and how long it takes (the runs need not take the same
steps: decisions follow the clock), then when each run's first wave had all its loads (the
latest end of a load wait from the first step that issues asynchronous loads to the step whose
prefills complete every user's first request): the copy lanes' delivery over the wave, hardware
against model. --decode-steps lists, for each tag's kv_inject step timeline, the median time
of its steps that decode every user's request and do nothing else (a step of
the same work in every run: a measure of the machine). --common-steps compares, for each tag's
step timelines, the steps it took as the calibrated run did (the same prefills, decodes, copies
and tokens, from the first step up to the first that differs: with asynchronous loads decisions
follow the clock, so at 150 and 200 users only the first), by kind of step: how many, and the
calibrated / hardware ratio of each one's time outside its load wait (median and range).
"""
import argparse
import csv
import glob
import gzip
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HIL = os.path.join(ROOT, "bench", "results", "headline_hil")
USERS = (50, 100, 150, 200)
MODES = ("text", "kv_inject")
TOLERANCE = 0.05  # the issue's bound on the calibrated simulation's error


def figures(s):
    return (s["throughput"]["requests_per_s"], s["ttft_ms"]["p50"], s["ttft_ms"]["p99"],
            s["ttft_ms"]["mean"])


def hardware_run_paths(tags, users, mode):
    """The summaries (paths) of the hardware runs of the tags at `users`: each tag's run, then
    its repeats."""
    paths = []
    for tag in tags:
        suffix = f"_{tag}" if tag else ""
        first = os.path.join(HIL, f"{users}_{mode}{suffix}.json")
        rest = sorted(p for p in glob.glob(os.path.join(HIL, f"{users}_{mode}{suffix}_*.json"))
                      if not p.endswith("_timeline.json")) if tag else []
        paths += [p for p in [first] + rest if os.path.exists(p)]
    return paths


def hardware_runs(tags, users, mode):
    return [json.load(open(p)) for p in hardware_run_paths(tags, users, mode)]


def ttft_groups(requests_csv):
    """A run's TTFTs sorted, in groups of equal value (the requests that arrived at the end of
    one step and took their first token at the end of another share their TTFT exactly)."""
    with open(requests_csv) as f:
        ttfts = sorted(float(r["ttft"]) for r in csv.DictReader(f))
    groups = []  # [value, first rank, end rank]
    for i, t in enumerate(ttfts):
        if groups and abs(t - groups[-1][0]) < 1e-3:
            groups[-1][2] = i + 1
        else:
            groups.append([t, i, i + 1])
    return ttfts, groups


def percentile_edges(requests_csv, q):
    """Where a TTFT percentile sits among the run's groups of equal TTFT (the simulator's
    nearest-rank percentile: rank ceil(q n)): its value, its group (requests), the next group up
    and the requests that would have to finish their prefill later for the percentile to land in
    it, and the same downwards."""
    ttfts, groups = ttft_groups(requests_csv)
    i = min(math.ceil(q * len(ttfts)) - 1, len(ttfts) - 1)
    g = next(k for k, (_, lo, hi) in enumerate(groups) if lo <= i < hi)
    value, lo, hi = groups[g]
    up = (groups[g + 1][0], hi - i) if g + 1 < len(groups) else None
    down = (groups[g - 1][0], i - lo + 1) if g > 0 else None
    return value, hi - lo, up, down


def cluster_rows(users, mode, sources):
    """Rows of the --clusters table: for TTFT p50 and p99 of each source (name, requests.csv)."""
    rows = []
    for name, path in sources:
        for label, q in (("p50", 0.50), ("p99", 0.99)):
            value, size, up, down = percentile_edges(path, q)
            def edge(e):
                return f"{e[0]:.1f} ({e[0] / value - 1:+.1%}) if {e[1]} move" if e else ""
            rows.append((users, mode, label, name, f"{value:.1f}", size, edge(down), edge(up)))
    return rows


def mean_figures(runs):
    """Each figure (req/s, TTFT p50, p99 and mean) averaged over the runs."""
    return tuple(sum(f[i] for f in map(figures, runs)) / len(runs) for i in range(4))


def simulate(binary, data, users, extra, out):
    cmd = [binary, "run", os.path.join(ROOT, "configs", "headline.yaml"), "--no-progress",
           "--set", f"trace.locomo.data={data}", "--set", f"trace.locomo.users={users}",
           "--set", f"experiment=h{users}", "--out", out] + extra
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL)
    if done.returncode != 0:  # the simulator said why on stderr (e.g. a bad --sim-set)
        print(f"error: the simulation of {users} users exited with status {done.returncode}",
              file=sys.stderr)
        sys.exit(2)
    return {m: json.load(open(os.path.join(out, f"h{users}", m, "summary.json"))) for m in MODES}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferscale", default=os.path.join(ROOT, "build", "inferscale"))
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "locomo10"))
    ap.add_argument("--figure", help="also draw throughput and TTFT p99 by users (PNG)")
    ap.add_argument("--steps", action="store_true", help="also compare the runs step by step")
    ap.add_argument("--step-details", action="store_true",
                    help="also list each run's prefill steps and its decode steps measured more "
                         "than --slow times their price")
    ap.add_argument("--slow", type=float, default=1.25)
    ap.add_argument("--first-issue", action="store_true",
                    help="also list, for each tag with a host trace (host_trace_TAG.log.gz), the "
                         "host's time per copy issued in kv_inject's first step with copies, "
                         "beside that run's kv_inject TTFT p50")
    ap.add_argument("--offload-parts", action="store_true",
                    help="also list, for each tag with a host trace, its first steps with "
                         "copies: the offload issue's time (by part where the trace has them)")
    ap.add_argument("--first-wave", type=int, default=0, metavar="N",
                    help="also list each tag's first N kv_inject steps beside the calibrated "
                         "run's (start, prefills, load wait, duration)")
    ap.add_argument("--decode-steps", action="store_true",
                    help="also list each tag's median kv_inject step decoding every user's "
                         "request and nothing else")
    ap.add_argument("--common-steps", action="store_true",
                    help="also compare, by kind, the steps each tag's runs took as the "
                         "calibrated run did (calibrated / hardware time outside load waits)")
    ap.add_argument("--clusters", action="store_true",
                    help="also say where each run's TTFT p50 and p99 sit among its groups of "
                         "equal TTFT (runs with a U_MODE_TAG_requests.csv)")
    ap.add_argument("--users", default=",".join(map(str, USERS)),
                    help="populations to compare (default: all four)")
    ap.add_argument("--tag", default="",
                    help="read the hardware runs U_MODE_TAG.json (and _timeline.json) instead of "
                         "U_MODE.json, e.g. a commit; several, comma-separated: all their runs "
                         "(steps: the first tag's)")
    ap.add_argument("--sim-set", action="append", default=[], metavar="KEY=VALUE",
                    help="an override for both simulations (repeatable), e.g. "
                         "executor.copies_beside_pass=false for runs of executors before "
                         "0337801")
    ap.add_argument("--profile", default="h200-llama-3.1-8b",
                    help="the calibrated simulation's profile: a name under configs/profiles/ or "
                         "a path (default: the shipped H200 profile)")
    a = ap.parse_args()
    users = [int(x) for x in a.users.split(",")]
    tags = a.tag.split(",")
    suffix = f"_{tags[0]}" if tags[0] else ""
    profile = a.profile if not os.path.exists(a.profile) else os.path.abspath(a.profile)
    extra = [x for kv in a.sim_set for x in ("--set", kv)]
    calibrated = ["--set", "executor.kind=calibrated", "--set", f"executor.profile={profile}",
                  "--set", "output.timeline=true"] + extra
    print("| users | mode | source | req/s | TTFT p50 ms | TTFT p99 ms | TTFT mean ms | GPU hit "
          "| host loads |")
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|")
    ratios, step_rows, detail_rows, cluster_table, wave_rows, delivery_rows = [], [], [], [], [], []
    common_rows, common_counts = [], []
    # Of the figures compared (req/s, TTFT p50, TTFT p99): the calibrated simulation's within
    # TOLERANCE of the hardware's mean; of those with several runs, the farthest run's.
    within, compared, spread_within, spread_compared = 0, 0, 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for u in users:
            hil = {m: hardware_runs(tags, u, m) for m in MODES}
            if not all(hil.values()):
                sys.exit(f"no hardware runs of {u} users for tag(s) {a.tag}")
            cal = simulate(a.inferscale, a.data, u, calibrated, os.path.join(tmp, "cal"))
            sheet = simulate(a.inferscale, a.data, u, extra, os.path.join(tmp, "sheet"))
            for m in MODES:
                runs = hil[m]
                hw = mean_figures(runs)
                rows = [(f"hardware in the loop (mean of {len(runs)})" if len(runs) > 1
                         else "hardware in the loop", hw, runs[0])]
                if len(runs) > 1:
                    rows += [(f"hardware in the loop, run {i + 1}", figures(r), r)
                             for i, r in enumerate(runs)]
                rows += [("calibrated simulation", figures(cal[m]), cal[m]),
                         ("cost model (datasheet)", figures(sheet[m]), sheet[m])]
                for name, (rps, p50, p99, mean), s in rows:
                    hit = f"{100 * s['hit_ratio']['gpu_object']:.1f} %" if m == "kv_inject" else ""
                    loads = s["work"]["host_loads"] if m == "kv_inject" else ""
                    print(f"| {u} | {m} | {name} | {rps:.2f} | {p50:.1f} | {p99:.1f} "
                          f"| {mean:.1f} | {hit} | {loads} |")
                c = figures(cal[m])
                print(f"| {u} | {m} | calibrated / hardware{' (mean)' if len(runs) > 1 else ''} | "
                      + " | ".join(f"{x / y:.3f}x" for x, y in zip(c, hw)) + " | | |")
                within += sum(abs(x / y - 1) <= TOLERANCE for x, y in zip(c[:3], hw[:3]))
                compared += 3
                if len(runs) > 1:
                    each = [figures(r) for r in runs]
                    worst = [max((x / f[i] for f in each), key=lambda v: abs(v - 1))
                             for i, x in enumerate(c)]
                    print(f"| {u} | {m} | calibrated / hardware (farthest run) | "
                          + " | ".join(f"{v:.2f}x" for v in worst) + " | | |")
                    # The hardware's own spread: its run farthest from the runs' mean.
                    spread = [max((f[i] / y for f in each), key=lambda v: abs(v - 1))
                              for i, y in enumerate(hw)]
                    print(f"| {u} | {m} | hardware: farthest run / mean | "
                          + " | ".join(f"{v:.2f}x" for v in spread) + " | | |")
                    spread_within += sum(abs(v - 1) <= TOLERANCE for v in spread[:3])
                    spread_compared += 3
            ratios.append((u, mean_figures(hil["kv_inject"]), mean_figures(hil["text"]),
                           figures(cal["kv_inject"]), figures(cal["text"])))
            for m in MODES if a.clusters else ():
                csvs = [p[:-len(".json")] + "_requests.csv"
                        for p in hardware_run_paths(tags, u, m)]
                sources = [(f"hardware, run {i + 1}", p) for i, p in enumerate(csvs)
                           if os.path.exists(p)]
                sources.append(("calibrated", os.path.join(tmp, "cal", f"h{u}", m,
                                                           "requests.csv")))
                cluster_table += cluster_rows(u, m, sources)
            for m in MODES:
                cal_timeline = os.path.join(tmp, "cal", f"h{u}", m, "timeline.json")
                if a.steps:
                    step_rows += compare_steps(
                        u, m, os.path.join(HIL, f"{u}_{m}{suffix}_timeline.json"), cal_timeline)
                if a.common_steps:
                    pairs = []
                    for tag in tags:
                        r = common_step_ratios(
                            os.path.join(HIL, f"{u}_{m}_{tag}_timeline.json"), cal_timeline)
                        if r is not None:
                            pairs += r
                            common_counts.append((u, m, tag, len(r)))
                    common_rows += common_step_rows(u, m, pairs)
                if a.first_wave and m == "kv_inject":
                    for tag in tags:
                        path = os.path.join(HIL, f"{u}_{m}_{tag}_timeline.json")
                        wave_rows += first_wave_rows(u, tag, path, cal_timeline, a.first_wave)
                        delivery_rows += wave_delivery_rows(u, tag, path, cal_timeline)
                for r, run in enumerate(("", "_r2") if a.step_details else ()):
                    path = os.path.join(HIL, f"{u}_{m}{suffix}{run}_timeline.json")
                    if os.path.exists(path):
                        detail_rows += step_details(u, m, r + 1, path, cal_timeline, a.slow)
    print()
    print(f"Calibrated simulation within {TOLERANCE:.0%} of the hardware's mean: {within} of "
          f"{compared} figures (req/s, TTFT p50, TTFT p99)"
          + (f"; the hardware's farthest run within {TOLERANCE:.0%} of that mean: {spread_within} "
             f"of {spread_compared}" if spread_compared else ""))
    print()
    print("| users | kv_inject / text throughput (hardware) | TTFT p50 text / kv_inject (hardware) "
          "| TTFT p99 text / kv_inject (hardware) | throughput ratio (calibrated) |")
    print("|---:|---:|---:|---:|---:|")
    for u, kv, text, ckv, ctext in ratios:
        print(f"| {u} | {kv[0] / text[0]:.2f}x | {text[1] / kv[1]:.2f}x | {text[2] / kv[2]:.2f}x "
              f"| {ckv[0] / ctext[0]:.2f}x |")
    if a.figure:
        draw(ratios, a.figure)
    if a.steps:
        print_table(("users", "mode", "steps", "count", "hardware ms", "calibrated ms",
                     "calibrated / hardware", "hardware us per host load"), "rllrrrrr", step_rows)
    if a.first_issue:
        rows = []
        for u in users:
            for tag in tags:
                issue = first_copy_issue(os.path.join(HIL, f"host_trace_{tag}.log.gz"), u)
                run = os.path.join(HIL, f"{u}_kv_inject_{tag}.json")
                if issue is None or not os.path.exists(run):
                    continue
                copies, us = issue
                p50 = json.load(open(run))["ttft_ms"]["p50"]
                rows.append((u, tag, copies, f"{us / 1000:.1f}", f"{us / copies:.2f}",
                             f"{p50:.1f}"))
        print_table(("users", "tag", "copies of the first step", "host ms issuing them",
                     "us per copy", "kv_inject TTFT p50 ms"), "rlrrrr", rows)
    if a.offload_parts:
        rows = [r for u in users for tag in tags
                for r in offload_part_rows(tag, os.path.join(HIL, f"host_trace_{tag}.log.gz"), u)]
        print_table(("users", "tag", "step with copies", "offloads", "offload issue us")
                    + tuple(f"{p} us" for p in OFFLOAD_PARTS) + ("us per store",),
                    "rlrrrrrrrrr", rows)
    if a.decode_steps:
        rows = [r for u in users for tag in tags for r in decode_step_rows(
            u, tag, os.path.join(HIL, f"{u}_kv_inject_{tag}_timeline.json"))]
        print_table(("users", "tag", "steps", "median ms"), "rlrr", rows)
    if a.first_wave:
        print_table(("users", "tag", "step", "hardware start ms", "prefills", "load wait ms",
                     "ms", "calibrated start ms", "prefills", "load wait ms", "ms"),
                     "rlrrrrrrrrr", wave_rows)
        print_table(("users", "tag", "first wave's loads all in, hardware ms", "calibrated ms",
                     "calibrated / hardware"), "rlrrr", delivery_rows)
    if a.common_steps:
        print_table(("users", "mode", "steps", "count", "calibrated / hardware (median)",
                     "range"), "rllrrr", common_rows)
        print()
        print("Steps taken as the calibrated run took them: " + ", ".join(
            f"{u} {m} {tag} {n}" for u, m, tag, n in common_counts))
    if a.clusters:
        print_table(("users", "mode", "TTFT", "run", "ms", "requests at this TTFT",
                     "next lower TTFT (if that many requests moved below)",
                     "next higher TTFT (if that many moved above)"), "rlllrrll", cluster_table)
    if a.step_details:
        print_table(("users", "mode", "run", "steps", "hardware ms", "calibrated ms",
                     "calibrated / hardware"), "rlrlrrr", detail_rows)


def copy_steps(path, users):
    """In a device script's host trace (hil.log, gzipped), the `users` run's steps with
    asynchronous copies, in order (kv_inject's: text has none), each its trace's fields."""
    if not os.path.exists(path):
        return
    section = False
    with gzip.open(path, "rt", errors="replace") as f:
        for line in f:
            if line.startswith("== hil_users_"):
                section = line.split()[1] == f"hil_users_{users}"
            if not (section and line.startswith("host trace:")):
                continue
            v = {k: int(x) for k, x in re.findall(r"(\w+)=(-?\d+)", line)}
            if v.get("n_async_offloads", 0) + v.get("n_async_loads", 0) > 0:
                yield v


def offload_issue_us(v):
    """A trace line's host microseconds issuing its asynchronous offloads: from the synchronous
    offloads, or, in a step that issued its copies after launching its pass (a `launched` point,
    executor/copy_order.h), from that launch."""
    return v["async_offloads"] - v.get("launched", v["sync_offloads"])


def first_copy_issue(path, users):
    """The first step with asynchronous copies (kv_inject's first wave): its copies and the
    host's microseconds issuing them (offloads and loads). None without a trace or such a step."""
    for v in copy_steps(path, users):
        copies = v["n_async_offloads"] + v["n_async_loads"]
        return copies, offload_issue_us(v) + (v["loads"] - v["evictions"])
    return None


OFFLOAD_PARTS = ("begin", "settle", "store", "end", "tickets")


def offload_part_rows(tag, path, users, steps=4):
    """The first `steps` steps with copies: offloads, the host's microseconds issuing them, and
    where the trace times it by part (offl_*_us, from 320ca13) each part's."""
    rows = []
    for i, v in enumerate(copy_steps(path, users)):
        if i == steps:
            break
        n = v["n_async_offloads"]
        parts = "offl_store_us" in v
        rows.append((users, tag, i + 1, n, offload_issue_us(v))
                    + tuple(v[f"offl_{p}_us"] if parts else "" for p in OFFLOAD_PARTS)
                    + (f"{v['offl_store_us'] / n:.2f}" if parts and n else "",))
    return rows


def print_table(header, align, rows):
    """A Markdown table after a blank line; align: r (right) or l per column."""
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---:" if c == "r" else "---" for c in align) + "|")
    for row in rows:
        print("| " + " | ".join(str(x) for x in row) + " |")


def read_steps(hil_path, cal_path):
    """The two timelines' steps, and whether the runs took the same steps (with asynchronous
    loads the scheduler admits by the clock, so the hardware's measured times change its
    decisions)."""
    hil = json.load(open(hil_path))["traceEvents"]
    cal = json.load(open(cal_path))["traceEvents"]
    same = len(hil) == len(cal) and all(h["args"]["prefills"] == c["args"]["prefills"]
                                        for h, c in zip(hil, cal))
    return hil, cal, same


def compare_steps(users, mode, hil_path, cal_path):
    """Rows by kind of step: prefill (with or without host loads) or decode. Only runs that took
    the same steps compare (one row saying so instead)."""
    hil, cal, same = read_steps(hil_path, cal_path)
    if not same:
        return [(users, mode, "differ (decisions follow the measured clock)",
                 f"{len(hil)} / {len(cal)}", "", "", "", "")]
    kinds = {}
    for h, c in zip(hil, cal):
        kind = "prefill" if h["args"]["prefills"] else "decode"
        if h["args"]["loads"]:
            kind += " + host loads"
        k = kinds.setdefault(kind, [0, 0.0, 0.0, 0, 0.0])
        k[0] += 1
        k[1] += h["dur"] / 1000
        k[2] += c["dur"] / 1000
        k[3] += h["args"]["loads"]
        k[4] += h["args"]["load_us"]
    return [(users, mode, kind, n, f"{hw:.1f}", f"{cm:.1f}", f"{cm / hw:.2f}x",
             f"{load_us / loads:.0f}" if loads else "")
            for kind, (n, hw, cm, loads, load_us) in sorted(kinds.items())]


def first_wave_rows(users, tag, hil_path, cal_path, n):
    """The first `n` steps of both timelines side by side (none where the tag has no timeline)."""
    if not os.path.exists(hil_path):
        return []
    hil, cal, _ = read_steps(hil_path, cal_path)
    cells = lambda e: (f"{e['ts'] / 1000:.1f}", e["args"]["prefills"],
                       f"{e['args']['load_us'] / 1000:.1f}", f"{e['dur'] / 1000:.2f}")
    return [(users, tag, i + 1) + cells(h) + cells(c)
            for i, (h, c) in enumerate(zip(hil[:n], cal[:n]))]


def step_kind(args):
    """prefill, mixed (prefills beside decodes) or decode; "+ copies" where the step issued
    asynchronous loads."""
    kind = ("mixed" if args["decodes"] else "prefill") if args["prefills"] else "decode"
    return kind + (" + copies" if args.get("async_loads", 0) else "")


def common_step_ratios(hil_path, cal_path):
    """(kind, calibrated / hardware time outside the load wait) for each step the two timelines
    share from the first (the same prefills, decodes, asynchronous loads and tokens), up to the
    first that differs. None without the hardware timeline."""
    if not os.path.exists(hil_path):
        return None
    hil, cal, _ = read_steps(hil_path, cal_path)
    key = lambda e: tuple(e["args"].get(k, 0) for k in ("prefills", "decodes", "async_loads",
                                                        "tokens"))
    out = []
    for h, c in zip(hil, cal):
        if h["name"] != "step" or key(h) != key(c):
            break
        out.append((step_kind(h["args"]), (c["dur"] - c["args"]["load_us"])
                    / (h["dur"] - h["args"]["load_us"])))
    return out


def common_step_rows(users, mode, ratios):
    """Rows by kind of step: count, median ratio and range (ratios: (kind, ratio) pairs)."""
    kinds = {}
    for kind, r in ratios:
        kinds.setdefault(kind, []).append(r)
    rows = []
    for kind, rs in sorted(kinds.items()):
        rs.sort()
        rows.append((users, mode, kind, len(rs), f"{statistics.median(rs):.3f}x",
                     f"{rs[0]:.3f}-{rs[-1]:.3f}x"))
    return rows


def wave_delivered_ms(events, users):
    """When the first wave's loads were all in: the latest end of a load wait (start + load
    phase, ms) over the steps from the first that issues asynchronous loads to the one whose
    prefills make `users` (every user's first request: the wave). None without such a step."""
    steps = [e for e in events if e["name"] == "step"]
    first = next((i for i, e in enumerate(steps) if e["args"].get("async_loads", 0)), None)
    if first is None:
        return None
    end, prefills = 0.0, 0
    for e in steps[first:]:
        end = max(end, (e["ts"] + e["args"]["load_us"]) / 1000)
        prefills += e["args"]["prefills"]
        if prefills >= users:
            return end
    return None


def wave_delivery_rows(users, tag, hil_path, cal_path):
    """One row: when the hardware run's and the calibrated run's first waves had all their loads,
    and the ratio (none where the tag has no timeline or no wave)."""
    if not os.path.exists(hil_path):
        return []
    hil, cal, _ = read_steps(hil_path, cal_path)
    hw, cm = wave_delivered_ms(hil, users), wave_delivered_ms(cal, users)
    if hw is None or cm is None:
        return []
    return [(users, tag, f"{hw:.1f}", f"{cm:.1f}", f"{cm / hw:.3f}x")]


def decode_step_rows(users, tag, path):
    """The timeline's steps that decode all `users` requests and nothing else: their count and
    median time (none without a timeline or such steps)."""
    if not os.path.exists(path):
        return []
    steps = [e for e in json.load(open(path))["traceEvents"] if e["name"] == "step"]
    durs = sorted(e["dur"] for e in steps if e["args"]["decodes"] == users and
                  not e["args"]["prefills"] and not e["args"].get("async_loads", 0))
    return [(users, tag, len(durs), f"{durs[len(durs) // 2] / 1000:.2f}")] if durs else []


def step_details(users, mode, run, hil_path, cal_path, slow):
    """One row per prefill step, one for the decode steps priced near their measure (their median
    calibrated / hardware ratio) and one for those measured more than `slow` times their price
    (each one's batch size and time over its price, and their total)."""
    hil, cal, same = read_steps(hil_path, cal_path)
    if not same:
        return [(users, mode, run, "differ (decisions follow the measured clock)", "", "", "")]
    rows, near, over = [], [], []
    for h, c in zip(hil, cal):
        hw, cm = h["dur"] / 1000, c["dur"] / 1000
        a = h["args"]
        if a["prefills"]:
            rows.append((users, mode, run, f"prefill: {a['prefills']} prefills, {a['decodes']} "
                         f"decodes, {a['async_loads']} async loads", f"{hw:.2f}", f"{cm:.2f}",
                         f"{cm / hw:.2f}x"))
        elif hw > slow * cm:
            over.append((a["decodes"], hw, cm))
        else:
            near.append(cm / hw)
    near.sort()
    if near:
        rows.append((users, mode, run, f"decode, {len(near)} steps within {slow}x: median ratio",
                     "", "", f"{near[len(near) // 2]:.3f}x"))
    if over:
        rows.append((users, mode, run, f"decode, {len(over)} steps over {slow}x their price "
                     f"(batch: ms over {', '.join(f'{d}: {hw - cm:.1f}' for d, hw, cm in over)}): "
                     f"{sum(hw - cm for _, hw, cm in over):.1f} ms over",
                     f"{min(hw for _, hw, _ in over):.2f}-{max(hw for _, hw, _ in over):.2f}",
                     f"{min(cm for _, _, cm in over):.2f}-{max(cm for _, _, cm in over):.2f}", ""))
    return rows


def draw(ratios, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    users = [r[0] for r in ratios]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    for i, (label, color) in enumerate((("kv_inject", "tab:blue"), ("text", "tab:orange"))):
        hw = [r[1 + i][0] for r in ratios]
        cal = [r[3 + i][0] for r in ratios]
        left.plot(users, hw, "o-", color=color, label=f"{label}, hardware in the loop")
        left.plot(users, cal, "x--", color=color, label=f"{label}, calibrated simulation")
        right.plot(users, [r[1 + i][2] for r in ratios], "o-", color=color, label=label)
    left.set(xlabel="LoCoMo users (closed loop)", ylabel="requests / s", xticks=users,
             title="Throughput, Llama-3.1-8B shape on one H200")
    right.set(xlabel="LoCoMo users (closed loop)", ylabel="TTFT p99 (ms)", xticks=users,
              title="TTFT p99, hardware in the loop")
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    left.set_ylim(bottom=0)
    right.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
