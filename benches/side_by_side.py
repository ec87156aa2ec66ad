#!/usr/bin/env python3
"""uop against jax.jit (and uop builds against each other), side by side, in turns.

    python3 benches/side_by_side.py [--rounds 3] [--reps 11] [--cpu 0]
        [--uop NAME=PATH ...] [--no-jax] [WORKLOAD ...]

Each round runs every workload once per contender, in turn, each pinned to the same
core (`taskset -c CPU`) and on one thread:
`uop bench --json --backend rust --threads 1 --no-naive --workload W --reps N` for each
`--uop` binary (default `uop=target/release/uop`, built with the feature `prebuilt`)
and `python3 benches/jax_workloads.py --reps N W`. Alternating spreads the load of a
shared machine over all contenders alike. Prints the `uptime` load before and after,
then per workload the median over the rounds of each contender's median and, when jax
ran, each uop's ratio to jax (below 1: uop is faster), plus the per-round ratios. A
binary without `--no-naive` (an older build) is run with its naive loop, which only
costs time. `--json FILE` writes every measured row there as JSON lines.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from jax_workloads import WORKLOADS  # noqa: E402  (jax itself is imported only to time)

NAMES = list(WORKLOADS)


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if len(rows) != 1:
        sys.exit(f"{' '.join(cmd)}: expected one JSON row, got {len(rows)}:\n{out}")
    return rows[0]


def supports_no_naive(path):
    help_text = subprocess.run([path, "bench", "--help"], capture_output=True, text=True).stdout
    return "--no-naive" in help_text


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("workloads", nargs="*", help="names (default: all nine)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=11, help="timed calls per measurement")
    p.add_argument("--cpu", default="0", help="the core everything is pinned to")
    p.add_argument("--uop", action="append", metavar="NAME=PATH",
                   help="a uop binary to time (repeat to compare builds)")
    p.add_argument("--no-jax", action="store_true", help="time only the uop binaries")
    p.add_argument("--json", metavar="FILE", help="write every row here")
    a = p.parse_args()
    names = a.workloads or NAMES
    for n in names:
        if n not in NAMES:
            p.error(f"unknown workload `{n}` (workloads: {', '.join(NAMES)})")
    if a.rounds < 1 or a.reps < 1:
        p.error("--rounds and --reps must be at least 1")
    uops = []
    for spec in a.uop or [f"uop={os.path.join(ROOT, 'target/release/uop')}"]:
        label, sep, path = spec.partition("=")
        if not sep or not os.access(path, os.X_OK):
            p.error(f"--uop {spec}: expected NAME=PATH of an executable uop")
        uops.append((label, path, supports_no_naive(path)))
    pin = ["taskset", "-c", a.cpu]
    contenders = [
        (label, pin + [path, "bench", "--json", "--backend", "rust", "--threads", "1",
                       "--reps", str(a.reps)] + (["--no-naive"] if fast else []) + ["--workload"])
        for label, path, fast in uops
    ]
    if not a.no_jax:
        contenders.append(("jax", pin + [sys.executable, os.path.join(HERE, "jax_workloads.py"),
                                         "--reps", str(a.reps)]))
    print("load before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    ms = {(w, label): [] for w in names for label, _ in contenders}
    log = open(a.json, "w") if a.json else None
    for r in range(a.rounds):
        for w in names:
            for label, cmd in contenders:
                row = run_json(cmd + [w])
                row["round"], row["contender"] = r, label
                ms[(w, label)].append(row["ms"])
                if log:
                    log.write(json.dumps(row) + "\n")
                    log.flush()
        print(f"round {r + 1} of {a.rounds} done", file=sys.stderr)
    print("load after: ", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    labels = [label for label, _ in contenders]
    head = f"{'workload':<22}" + "".join(f"{label:>12}" for label in labels)
    if not a.no_jax:
        head += "".join(f"  {label + '/jax':>10} (rounds)" for label, _, _ in uops)
    print(f"ms, median of {a.rounds} rounds of medians of {a.reps} calls, pinned to core {a.cpu}")
    print(head)
    for w in names:
        line = f"{w:<22}" + "".join(f"{statistics.median(ms[(w, l)]):>12.3f}" for l in labels)
        if not a.no_jax:
            for label, _, _ in uops:
                rounds = [u / j for u, j in zip(ms[(w, label)], ms[(w, "jax")])]
                ratio = statistics.median(ms[(w, label)]) / statistics.median(ms[(w, "jax")])
                line += f"  {ratio:>10.2f} ({', '.join(f'{x:.2f}' for x in rounds)})"
        print(line)


if __name__ == "__main__":
    main()
