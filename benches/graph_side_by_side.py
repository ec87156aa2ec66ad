#!/usr/bin/env python3
"""Whole graphs on uop's executor against jax.jit, side by side, in turns.

    python3 benches/graph_side_by_side.py [--rounds 5] [--calls 50] [--cpu 0]
        [--uop PATH] [--python PATH] [GRAPH ...]

Graphs (default: all three):

- `transformer_block`: `examples/graphs/transformer_block.uop` at T=64, D=64, F=256
  against `benches/jax_transformer_block.py`;
- `rnn_forward`: `examples/graph_grad/rnn.uop` (T=200, E=H=32) against
  `jax.lax.scan` in `benches/jax_rnn_grad.py`;
- `rnn_grad`: its gradient graph with the stack tape (`uop print --stage grad`,
  run with `--param tape_N=200`) against `jax.grad` of the scan.

Each round runs every graph once per contender, in turn, each a fresh process pinned
to the same core (`taskset -c CPU`) on one thread: `uop bench --graph FILE --dim ...
--json --reps CALLS` and the jax script with `--json --calls CALLS`. Alternating
spreads the load of a shared machine over both alike. Prints the `uptime` load
before and after, then per graph the median over the rounds of each contender's
median later call, uop / jax (below 1: uop is faster) with the per-round ratios, and
the median first call (uop: parse, prepare, compile, run; jax: trace, compile, run).
Needs jax (`pip install jax`); not part of `cargo test`.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RNN_DIMS = ["--dim", "T=200", "--dim", "E=32", "--dim", "H=32", "--param", "steps=200"]
GRAPHS = {
    # name: (uop file or None for the RNN's gradient graph, uop flags, jax script)
    "transformer_block": ("examples/graphs/transformer_block.uop",
                          ["--dim", "T=64", "--dim", "D=64", "--dim", "F=256"],
                          "jax_transformer_block.py"),
    "rnn_forward": ("examples/graph_grad/rnn.uop", RNN_DIMS, "jax_rnn_grad.py"),
    "rnn_grad": (None, RNN_DIMS, "jax_rnn_grad.py"),
}


def json_rows(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def gradient_graph(uop, tmp):
    """The RNN's gradient graph as text, and the flag giving its tape's rows."""
    text = subprocess.run([uop, "print", "--stage", "grad",
                           os.path.join(ROOT, "examples/graph_grad/rnn.uop")],
                          check=True, capture_output=True, text=True).stdout
    tapes = re.findall(r"\$(tape_\d+)", text)
    if not tapes:
        sys.exit("the RNN's gradient graph declares no tape")
    path = os.path.join(tmp, "rnn_grad.uop")
    with open(path, "w") as f:
        f.write(text)
    return path, ["--param", f"{tapes[0]}=200"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("graphs", nargs="*", help=f"names (default: {', '.join(GRAPHS)})")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=50, help="timed later calls per measurement")
    p.add_argument("--cpu", default="0", help="the core everything is pinned to")
    p.add_argument("--uop", default=os.path.join(ROOT, "target/release/uop"),
                   help="the uop binary")
    p.add_argument("--python", default=sys.executable, help="a python with jax")
    a = p.parse_args()
    names = a.graphs or list(GRAPHS)
    for n in names:
        if n not in GRAPHS:
            p.error(f"unknown graph `{n}` (graphs: {', '.join(GRAPHS)})")
    if a.rounds < 1 or a.calls < 1:
        p.error("--rounds and --calls must be at least 1")
    if not os.access(a.uop, os.X_OK):
        p.error(f"--uop {a.uop}: not an executable")
    pin = ["taskset", "-c", a.cpu]
    tmp = tempfile.mkdtemp(prefix="uop-graph-sbs-")
    uop_cmds = {}
    for n in names:
        file, flags, _ = GRAPHS[n]
        if file is None:
            path, tape = gradient_graph(a.uop, tmp)
            flags = flags + tape
        else:
            path = os.path.join(ROOT, file)
        uop_cmds[n] = pin + [a.uop, "bench", "--graph", path, "--json",
                             "--reps", str(a.calls)] + flags
    scripts = sorted({GRAPHS[n][2] for n in names})
    print("load before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    ms = {(n, c): [] for n in names for c in ("uop", "jax")}
    first = {(n, c): [] for n in names for c in ("uop", "jax")}
    for r in range(a.rounds):
        for n in names:
            row = json_rows(uop_cmds[n])[0]
            ms[(n, "uop")].append(row["ms"])
            first[(n, "uop")].append(row["first_ms"])
        for script in scripts:
            cmd = pin + [a.python, os.path.join(HERE, script), "--json", "--calls", str(a.calls)]
            for row in json_rows(cmd):
                if row["workload"] in names:
                    ms[(row["workload"], "jax")].append(row["ms"])
                    first[(row["workload"], "jax")].append(row["first_ms"])
        print(f"round {r + 1} of {a.rounds} done", file=sys.stderr)
    print("load after: ", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print(f"later calls: ms, median of {a.rounds} rounds of medians of {a.calls} calls, "
          f"pinned to core {a.cpu}, one thread")
    print(f"{'graph':<18}{'uop':>10}{'jax':>10}  {'uop/jax':>8} (rounds)"
          f"{'uop first':>12}{'jax first':>12}")
    for n in names:
        u, j = ms[(n, "uop")], ms[(n, "jax")]
        rounds = ", ".join(f"{x / y:.2f}" for x, y in zip(u, j))
        ratio = statistics.median(u) / statistics.median(j)
        print(f"{n:<18}{statistics.median(u):>10.3f}{statistics.median(j):>10.3f}  "
              f"{ratio:>8.2f} ({rounds})"
              f"{statistics.median(first[(n, 'uop')]):>12.1f}"
              f"{statistics.median(first[(n, 'jax')]):>12.1f}")


if __name__ == "__main__":
    main()
