#!/usr/bin/env python3
"""Projects a plan's wall time on N ranks from one measured run: the probes' wall times
(probes.csv, in the order asked) and the planner's rounds (its progress line on stderr, one per
round: cumulative probes run). Each round's new probes are dealt in order to whichever rank is
free first (as the MPI runner's dynamic balancing does); a round ends with its last probe; rank
0 adds `--serial-ms` per probe (resolving its configuration) and `--message-ms` per probe
(a task and a result message).

    python3 bench/mpi_projection.py PROBES.csv PROGRESS.log --ranks 1,2,16,64,1024 \\
        [--serial-ms 1.3] [--message-ms 0.05]

Prints one Markdown row per rank count: projected wall, speedup over 1 rank, busy share.
"""
import argparse
import csv
import heapq
import re
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("probes")
    ap.add_argument("progress")
    ap.add_argument("--ranks", default="1,2,16,64,1024")
    ap.add_argument("--serial-ms", type=float, default=0.0)
    ap.add_argument("--message-ms", type=float, default=0.0)
    a = ap.parse_args()
    try:
        with open(a.probes) as f:
            rows = list(csv.DictReader(f))
        text = open(a.progress, errors="replace").read()
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    walls = [float(r["wall_s"]) for r in rows if r["reused"] == "0"]
    counts = [int(m) for m in re.findall(r"candidates, (\d+) probes run", text)]
    if not counts or counts[-1] != len(walls):
        print(f"error: {a.progress}: progress says {counts[-1] if counts else 'nothing'} probes "
              f"run, {a.probes} has {len(walls)}", file=sys.stderr)
        return 2
    rounds, done = [], 0
    for c in counts:
        if c > done:
            rounds.append(walls[done:c])
            done = c
    total = sum(walls)
    print(f"{len(walls)} probes in {len(rounds)} rounds, {total:.1f} s of probes, "
          f"largest round {max(len(r) for r in rounds)} probes, longest probe {max(walls):.2f} s")
    print()
    print("| ranks | projected wall s | speedup | ranks busy |")
    print("|---:|---:|---:|---:|")
    base = None
    for n in [int(x) for x in a.ranks.split(",")]:
        wall = 0.0
        for r in rounds:
            free = [0.0] * min(n, len(r))
            heapq.heapify(free)
            end = 0.0
            for w in r:
                t = heapq.heappop(free) + w + a.message_ms / 1e3
                end = max(end, t)
                heapq.heappush(free, t)
            wall += end + len(r) * a.serial_ms / 1e3
        base = base or wall
        print(f"| {n} | {wall:.1f} | {base / wall:.2f}x | {total / (wall * n):.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
