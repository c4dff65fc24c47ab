#!/usr/bin/env python3
"""Checks that the library graph has no arrow back up the layout (README.md, "What is where"):
the simulator core and the libraries below it never link the command line, eval, the GPU
executor or the remote executor.

    cmake --graphviz=build/targets.dot build && python3 scripts/check_layout.py build/targets.dot

Prints each library's direct dependencies among ours; exits 1 on a forbidden arrow, 2 on bad input.
"""
import re
import sys

# library -> ours it must not reach, directly or through others
FORBIDDEN = {
    "inferscale_sim": {"inferscale_plan", "inferscale_executor_gpu", "inferscale_executor_remote",
                       "inferscale_eval", "inferscale_eval_config", "inferscale_executor_kinds",
                       "inferscale_mpi", "inferscale"},
    "inferscale_traces": {"inferscale_sim", "inferscale_policies", "inferscale_executor"},
    "inferscale_policies": {"inferscale_sim", "inferscale_executor"},
    "inferscale_executor": {"inferscale_sim", "inferscale_traces", "inferscale_policies"},
    "inferscale_eval": {"inferscale_sim", "inferscale_executor_kinds", "inferscale"},
    "inferscale_plan": {"inferscale_executor_gpu", "inferscale_executor_remote", "inferscale_eval",
                        "inferscale_eval_config", "inferscale_executor_kinds", "inferscale_mpi",
                        "inferscale"},
    # MPI stays in mpi/: over the planner and the simulator, under the command line.
    "inferscale_mpi": {"inferscale_executor_gpu", "inferscale_eval", "inferscale_eval_config",
                       "inferscale"},
}


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        text = open(argv[1]).read()
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    names = dict(re.findall(r'"(node\d+)" \[ label = "([^"]+)"', text))
    deps = {}
    for a, b in re.findall(r'"(node\d+)" -> "(node\d+)"', text):
        if a in names and b in names and names[b].startswith("inferscale"):
            deps.setdefault(names[a], set()).add(names[b])
    if "inferscale_sim" not in names.values():
        print(f"error: {argv[1]}: no inferscale_sim target in the graph", file=sys.stderr)
        return 2

    def reach(lib):
        seen, todo = set(), [lib]
        while todo:
            for d in deps.get(todo.pop(), ()):
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        return seen

    bad = 0
    for lib in sorted(deps):
        if lib.startswith("inferscale"):
            print(f"{lib} -> {', '.join(sorted(deps[lib]))}")
    for lib, banned in FORBIDDEN.items():
        for d in sorted(reach(lib) & banned):
            print(f"forbidden: {lib} reaches {d}", file=sys.stderr)
            bad = 1
    print("layout: no arrow back up" if not bad else "layout: arrows back up (above)")
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv))
