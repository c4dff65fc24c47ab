#!/usr/bin/env python3
"""Files a device call's results (the h200.tar.gz that scripts/device/h200.sh packs) under
bench/results/ with a tag, the names bench/headline_table.py and the results' documents read:

    python3 scripts/device/import_hil.py h200.tar.gz TAG [--results bench/results] [--force]

- results/headline_hil_U[_rN]/{text,kv_inject}/summary.json, requests.csv, timeline.json ->
  headline_hil/U_MODE_TAG[_rN].json, U_MODE_TAG[_rN]_requests.csv, U_MODE_TAG[_rN]_timeline.json
- env.log -> headline_hil/env_TAG.log; hil.log, when it has host trace lines
  (INFERSCALE_HOST_TRACE=1) -> headline_hil/host_trace_TAG.log.gz
- phase calibrate: h200-llama-3.1-8b.yaml -> headline_hil/profile_TAG_device.yaml,
  calibration_h200.csv -> headline_hil/calibration_TAG_points.csv (and its _copy_lanes.csv ->
  calibration_TAG_points_copy_lanes.csv), calibrate.log -> headline_hil/calibrate_TAG.log.gz, and
  the copy lanes' lines of the log (without host trace lines) -> calibration_h200_copy_lanes_TAG.txt
- phase bench: executor_h200_split_kv_on.json -> executor_h200_TAG.json

The machine's scratch folders in texts become `<scratch>`. Nothing is written when a target
exists (unless --force) or the archive is not a device call's; errors exit with status 2.
"""
import argparse
import gzip
import os
import re
import sys
import tarfile

SCRATCH = re.compile(r"/tmp/tmp\.[A-Za-z0-9]+/")
RUN = re.compile(r"^results/headline_hil_(\d+)(_r\d+)?/(text|kv_inject)/"
                 r"(summary\.json|requests\.csv|timeline\.json)$")
SUFFIX = {"summary.json": ".json", "requests.csv": "_requests.csv",
          "timeline.json": "_timeline.json"}


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def scrub(text):
    """The machine's scratch folders as `<scratch>`."""
    return SCRATCH.sub("<scratch>/", text)


def lanes_text(log, tag):
    """The copy lanes' part of a calibrate log (from its grid line on), without host trace
    lines, after a header that names the tag; None when the calibration had no lanes."""
    lines = log.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith("copy lanes: grid")), None)
    if start is None:
        return None
    body = [l for l in lines[start:] if not l.startswith("host trace")]
    grid = next((m.group(1) for l in lines for m in [re.search(r"\bgrid (\w+),", l)] if m), "?")
    header = (f"# inferscale calibrate --executor gpu --grid {grid} --copy-lanes on the H200 at "
              f"{tag} (scripts/device/h200.sh): the copy lanes and the step fit as it printed them")
    return "\n".join([header] + body) + "\n"


def plan(members, tag):
    """(target relative to the results folder, bytes) for every file the archive gives."""
    out = []
    for name, data in members.items():
        m = RUN.match(name)
        if m:
            users, repeat, mode, kind = m.groups()
            target = f"headline_hil/{users}_{mode}_{tag}{repeat or ''}{SUFFIX[kind]}"
            out.append((target, data))
    if not out:
        fail("no hardware-in-the-loop results in the archive (results/headline_hil_U/...): "
             "not a device call of phase hil")
    text = lambda n: scrub(members[n].decode("utf-8", errors="replace"))
    if "env.log" in members:
        out.append((f"headline_hil/env_{tag}.log", text("env.log").encode()))
    if "hil.log" in members and b"host trace:" in members["hil.log"]:
        out.append((f"headline_hil/host_trace_{tag}.log.gz",
                    gzip.compress(text("hil.log").encode(), mtime=0)))
    if "calibrate.log" in members:
        log = text("calibrate.log")
        out.append((f"headline_hil/calibrate_{tag}.log.gz", gzip.compress(log.encode(), mtime=0)))
        lanes = lanes_text(log, tag)
        if lanes is not None:
            out.append((f"calibration_h200_copy_lanes_{tag}.txt", lanes.encode()))
        for source, target in (("h200-llama-3.1-8b.yaml", f"profile_{tag}_device.yaml"),
                               ("calibration_h200.csv", f"calibration_{tag}_points.csv"),
                               ("calibration_h200_copy_lanes.csv",
                                f"calibration_{tag}_points_copy_lanes.csv")):
            if source in members:
                out.append((f"headline_hil/{target}", text(source).encode()))
    if "executor_h200_split_kv_on.json" in members:
        out.append((f"executor_h200_{tag}.json", members["executor_h200_split_kv_on.json"]))
    return sorted(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("archive", help="h200.tar.gz from scripts/device/h200.sh")
    ap.add_argument("tag", help="the tag of these runs: a commit, then e.g. COMMITr2")
    ap.add_argument("--results", default=os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench",
        "results"))
    ap.add_argument("--force", action="store_true", help="write over existing files")
    a = ap.parse_args()
    if not re.fullmatch(r"[A-Za-z0-9_]+", a.tag):
        fail(f"tag '{a.tag}': letters, digits and _ only (it goes into file names)")
    try:
        with tarfile.open(a.archive, "r:gz") as tar:
            members = {m.name.removeprefix("./"): tar.extractfile(m).read()
                       for m in tar.getmembers() if m.isfile()}
    except (OSError, tarfile.TarError) as e:
        fail(f"{a.archive}: {e}")
    targets = plan(members, a.tag)
    existing = [t for t, _ in targets if os.path.exists(os.path.join(a.results, t))]
    if existing and not a.force:
        fail(f"{len(existing)} of the files exist already (first: {existing[0]}); "
             "another tag, or --force")
    for target, data in targets:
        path = os.path.join(a.results, target)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
        print(f"wrote {os.path.relpath(path)}")


if __name__ == "__main__":
    main()
