#!/usr/bin/env python3
"""Checks scripts/device/import_hil.py on a hand-made device archive: the runs, the machine log,
the host trace and the calibration filed under their tagged names with the scratch folders
scrubbed; an existing target or an archive without runs is an error (exit status 2) that
writes nothing.

    import_hil_test.py WORK_DIR
"""
import gzip
import io
import os
import shutil
import subprocess
import sys
import tarfile

from bench_check import check, work_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "device", "import_hil.py")


def archive(path, files):
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo("./" + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def main():
    work = work_dir()
    for old in ("results", "other"):  # from an earlier run of this test
        shutil.rmtree(os.path.join(work, old), ignore_errors=True)
    results = os.path.join(work, "results")
    device = {
        "results/headline_hil_50/kv_inject/summary.json": '{"requests": 100}',
        "results/headline_hil_50/kv_inject/requests.csv": "id,ttft\n",
        "results/headline_hil_50/text/summary.json": '{"requests": 100}',
        "results/headline_hil_200_r2/text/timeline.json": "{}",
        "env.log": "out /tmp/tmp.Ab12Cd/results\n",
        "hil.log": "== hil_users_50: run --out /tmp/tmp.Ab12Cd/results\nhost trace: sync=5\n",
        "calibrate.log": "calibrating x on y: grid full_mixed, 3 points\nhost trace: a=1\n"
                         "copy lanes: grid copy_lanes, 2 points\nhost trace: b=2\n"
                         "copy lanes: lane_speed 1.000\n",
        "h200-llama-3.1-8b.yaml": "command: \"--points /tmp/tmp.Ab12Cd/c.csv\"\n",
        "calibration_h200.csv": "point,label\n",
        "summary.txt": "phases: build hil\n",
    }
    path = os.path.join(work, "h200.tar.gz")
    archive(path, device)
    done = run(path, "abc1234", "--results", results)
    check(done.returncode == 0, f"import: {done.stderr}")
    hil = os.path.join(results, "headline_hil")
    expected = ["50_kv_inject_abc1234.json", "50_kv_inject_abc1234_requests.csv",
                "50_text_abc1234.json", "200_text_abc1234_r2_timeline.json",
                "env_abc1234.log", "host_trace_abc1234.log.gz", "calibrate_abc1234.log.gz",
                "profile_abc1234_device.yaml", "calibration_abc1234_points.csv"]
    for name in expected:
        check(os.path.exists(os.path.join(hil, name)), f"{name} written")
    check(sorted(os.listdir(hil)) == sorted(expected), f"only those: {sorted(os.listdir(hil))}")
    check(open(os.path.join(hil, "env_abc1234.log")).read() == "out <scratch>/results\n",
          "scratch folder scrubbed")
    trace = gzip.open(os.path.join(hil, "host_trace_abc1234.log.gz"), "rt").read()
    check("<scratch>/results" in trace and "host trace: sync=5" in trace, "host trace filed")
    lanes = open(os.path.join(results, "calibration_h200_copy_lanes_abc1234.txt")).read()
    check(lanes.splitlines()[1:] == ["copy lanes: grid copy_lanes, 2 points",
                                     "copy lanes: lane_speed 1.000"], f"lanes lines {lanes}")
    check("--grid full_mixed" in lanes.splitlines()[0] and "abc1234" in lanes, "lanes header")
    print("import_hil: files under their tagged names, scratch folders scrubbed")

    # Again: the targets exist, nothing is written over; with --force it is.
    before = os.path.getmtime(os.path.join(hil, "env_abc1234.log"))
    again = run(path, "abc1234", "--results", results)
    check(again.returncode == 2 and "exist already" in again.stderr, f"again: {again.stderr}")
    check(os.path.getmtime(os.path.join(hil, "env_abc1234.log")) == before, "nothing written")
    check(run(path, "abc1234", "--results", results, "--force").returncode == 0, "--force")
    # An archive without runs, a bad tag, a missing archive: exit 2, nothing written.
    bare = os.path.join(work, "bare.tar.gz")
    archive(bare, {"summary.txt": "phases: build\n"})
    for args, what in (([bare, "t1"], "no hardware-in-the-loop results"),
                       ([path, "a/b"], "letters, digits"),
                       ([os.path.join(work, "none.tar.gz"), "t2"], "none.tar.gz")):
        r = run(*args, "--results", os.path.join(work, "other"))
        check(r.returncode == 2 and what in r.stderr, f"{args}: {r.stderr}")
        check(not os.path.exists(os.path.join(work, "other")), f"{args}: nothing written")
    print("import_hil: existing targets, bad archives and tags are errors that write nothing")


if __name__ == "__main__":
    main()
