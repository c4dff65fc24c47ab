#!/usr/bin/env python3
"""The copy-lane parameters of the calibrated profile (async_copies: lane_speed, stall_ns)
against the hardware-in-the-loop runs of a tag: for each pair of values, kv_inject of the headline
experiment in calibrated simulation at 50-200 users, and its throughput and TTFT p50 and p99
against every hardware run of the tag (bench/results/headline_hil/U_kv_inject_TAG.json and
U_kv_inject_TAG_*.json). The other fields of the profile stay as committed.

    python3 bench/async_copies_scan.py --tag 50cf048 [--lane-speed 1,1.1,1.15,1.2,1.25,1.3]
        [--stall-ms 0,2,4] [--issue-ns 1800] [--inferscale build/inferscale]
"""
import argparse
import json
import os
import re
import subprocess
import tempfile

from headline_table import ROOT, USERS, figures, hardware_runs

PROFILE = os.path.join(ROOT, "configs", "profiles", "h200-llama-3.1-8b.yaml")


def profile_with(path, lane_speed, stall_ns, issue_ns):
    text = open(PROFILE).read()
    for key, value in (("lane_speed", lane_speed), ("stall_ns", stall_ns), ("issue_ns", issue_ns)):
        text, n = re.subn(rf"^(  {key}: )\S+", rf"\g<1>{value:g}", text, flags=re.M)
        assert n == 1, f"{PROFILE}: no async_copies.{key}"
    with open(path, "w") as f:
        f.write(text)


def calibrated(binary, data, profile, users, out):
    subprocess.run([binary, "run", os.path.join(ROOT, "configs", "headline.yaml"), "--no-progress",
                    "--runs", "kv_inject", "--set", "executor.kind=calibrated",
                    "--set", f"executor.profile={profile}", "--set", f"trace.locomo.data={data}",
                    "--set", f"trace.locomo.users={users}", "--set", f"experiment=s{users}",
                    "--out", out], check=True, stdout=subprocess.DEVNULL)
    return json.load(open(os.path.join(out, f"s{users}", "kv_inject", "summary.json")))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tag", required=True)
    ap.add_argument("--lane-speed", default="1,1.1,1.15,1.2,1.25,1.3")
    ap.add_argument("--stall-ms", default="0,2,4")
    ap.add_argument("--issue-ns", type=float, default=1800)
    ap.add_argument("--inferscale", default=os.path.join(ROOT, "build", "inferscale"))
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "locomo10"))
    a = ap.parse_args()
    hardware = {u: hardware_runs(a.tag, u, "kv_inject") for u in USERS}
    print("errors of calibrated kv_inject against each hardware run (req/s, TTFT p50, TTFT p99), %")
    print()
    print("| lane_speed | stall ms | " + " | ".join(f"{u} users" for u in USERS) + " | worst |")
    print("|---:|---:|" + "---|" * len(USERS) + "---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for speed in (float(x) for x in a.lane_speed.split(",")):
            for stall in (float(x) for x in a.stall_ms.split(",")):
                profile = os.path.join(tmp, "profile.yaml")
                profile_with(profile, speed, stall * 1e6, a.issue_ns)
                cells, worst = [], 0.0
                for u in USERS:
                    c = figures(calibrated(a.inferscale, a.data, profile, u, os.path.join(tmp, "out")))
                    runs = []
                    for h in hardware[u]:
                        e = [100 * (x / y - 1) for x, y in zip(c, figures(h))]
                        worst = max([worst] + [abs(x) for x in e])
                        runs.append(" ".join(f"{x:+.1f}" for x in e))
                    cells.append("; ".join(runs))
                print(f"| {speed:g} | {stall:g} | " + " | ".join(cells) + f" | {worst:.1f} |")


if __name__ == "__main__":
    main()
