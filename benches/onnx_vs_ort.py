#!/usr/bin/env python3
"""uop against onnxruntime on the end-to-end ONNX models, side by side, in turns.

    python3 benches/onnx_vs_ort.py [--rounds 5] [--reps 21] [--cpu 0]
        [--uop PATH] [--json FILE] [MODEL ...]

The models are those of tests/onnx/e2e/ (tests/onnx/gen_e2e_models.py), at the sizes
in MODELS below (a symbolic batch set larger than the tests'). Each round runs every
model once per contender, in turn, each in a fresh process pinned to the same core
(`taskset -c CPU`) on one thread:

- uop: `uop bench --graph MODEL.onnx --dim NAME=N ... --json --reps R` (first call:
  reading and importing the file, preparing, compiling, the first run; later calls:
  the median of R after one warm-up call), on seeded random inputs;
- onnxruntime: this script's `--ort` mode in a new interpreter, CPU provider,
  `intra_op_num_threads = 1`, `inter_op_num_threads = 1`, sequential execution,
  default graph optimizations; first call: creating the session from the file and
  the first run (importing the onnxruntime module is not counted: uop's process start
  is not either); later calls as for uop, on random inputs of the same shapes.

`rnn_scan_256` and `rnn_loop_256` are the RNNs over 256 steps instead of 6 (written
to a scratch directory by tests/onnx/gen_e2e_models.py's `rnn`): uop imports a Scan
or Loop as one sequential `scan` node whatever its length, so they show what a longer
loop costs per step.
Silero VAD runs twice: `silero_vad` as committed, its `sr` input random on both sides
(uop's seeded random integers, onnxruntime's 8000), so the run-time `If` takes the
8 kHz branch; `silero_vad_16k`, the same file with `sr` made an initializer of 16000
(written to a scratch directory), so both sides know the branch when they load it.
Prints the `uptime` load before and after, then per model the median over the rounds
of each side's figures and the ratio uop / onnxruntime (below 1: uop is faster).
Needs numpy, onnx and onnxruntime (pinned as in tests/onnx/gen_e2e_models.py) and
a uop built with `cargo build --release` (or `--profile fast-build`).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
E2E = os.path.join(ROOT, "tests", "onnx", "e2e")

# name -> (model directory under tests/onnx/e2e, or a model this script writes to a
# scratch directory; {symbolic dimension: size}).
MODELS = {
    "mlp_classifier": ("mlp_classifier", {"N": 64}),
    "resnet_blocks": ("resnet_blocks", {"N": 8}),
    "transformer_block": ("transformer_block", {"B": 8}),
    "rnn_scan": ("rnn_scan", {}),
    "rnn_loop": ("rnn_loop", {}),
    "rnn_scan_256": ("scratch", {}),
    "rnn_loop_256": ("scratch", {}),
    "silero_vad": ("silero_vad", {"batch": 1, "sequence": 512}),
    "silero_vad_16k": ("scratch", {"batch": 1, "sequence": 512}),
}


def ort_feeds(model, dims, sr):
    """Random inputs of the model's declared shapes, symbolic sizes from `dims`."""
    import numpy as np
    from onnx import TensorProto

    rng = np.random.default_rng(1)
    feeds = {}
    inits = {i.name for i in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else dims[d.dim_param] for d in t.shape.dim]
        if t.elem_type == TensorProto.FLOAT:
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
        elif t.elem_type == TensorProto.INT64 and vi.name == "sr":
            feeds[vi.name] = np.full(shape, sr, np.int64)
        else:
            sys.exit(f"{vi.name}: no random data for element type {t.elem_type}")
    return feeds


def ort_main(path, dims, reps):
    """One onnxruntime measurement, printed as a JSON row (run in a fresh process)."""
    import onnx
    import onnxruntime as ort

    model = onnx.load(path)
    feeds = ort_feeds(model, dims, sr=8000)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    start = time.perf_counter()
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    session.run(None, feeds)
    first_ms = (time.perf_counter() - start) * 1e3
    session.run(None, feeds)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    print(json.dumps({"first_ms": first_ms, "ms": statistics.median(times),
                      "onnxruntime": ort.__version__}))


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if len(rows) != 1:
        sys.exit(f"{' '.join(cmd)}: expected one JSON row, got {len(rows)}:\n{out}")
    return rows[0]


def rnn_long(scratch, kind, steps):
    """The end-to-end RNN over `steps` steps."""
    import onnx

    sys.path.insert(0, os.path.join(ROOT, "tests", "onnx"))
    import gen_e2e_models as gen

    model, _ = gen.seeded(2, lambda: gen.rnn(kind, steps))
    path = os.path.join(scratch, f"rnn_{kind}_{steps}.onnx")
    onnx.save(model, path)
    return path


def silero_16k(scratch):
    """The committed Silero model with `sr` an initializer of 16000."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(os.path.join(E2E, "silero_vad", "model.onnx"))
    keep = [vi for vi in model.graph.input if vi.name != "sr"]
    del model.graph.input[:]
    model.graph.input.extend(keep)
    model.graph.initializer.append(numpy_helper.from_array(np.array(16000, np.int64), "sr"))
    path = os.path.join(scratch, "silero_vad_16k.onnx")
    onnx.save(model, path)
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="*", help=f"names (default: all: {', '.join(MODELS)})")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=21, help="timed later calls per measurement")
    p.add_argument("--cpu", default="0", help="the core everything is pinned to")
    p.add_argument("--uop", default=os.path.join(ROOT, "target", "release", "uop"))
    p.add_argument("--json", metavar="FILE", help="write every row here")
    p.add_argument("--ort", nargs=3, metavar=("PATH", "DIMS", "REPS"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.ort:
        return ort_main(a.ort[0], json.loads(a.ort[1]), int(a.ort[2]))
    names = a.models or list(MODELS)
    for n in names:
        if n not in MODELS:
            p.error(f"unknown model `{n}` (models: {', '.join(MODELS)})")
    if a.rounds < 1 or a.reps < 1:
        p.error("--rounds and --reps must be at least 1")
    if not os.access(a.uop, os.X_OK):
        p.error(f"--uop {a.uop}: not an executable (build uop first)")
    scratch = tempfile.mkdtemp(prefix="onnx_vs_ort_")
    paths = {n: os.path.join(E2E, d, "model.onnx") for n, (d, _) in MODELS.items()}
    writers = {
        "rnn_scan_256": lambda: rnn_long(scratch, "scan", 256),
        "rnn_loop_256": lambda: rnn_long(scratch, "loop", 256),
        "silero_vad_16k": lambda: silero_16k(scratch),
    }
    for n in names:
        if n in writers:
            paths[n] = writers[n]()
    pin = ["taskset", "-c", a.cpu]

    def uop_cmd(n):
        dims = [f"--dim={k}={v}" for k, v in MODELS[n][1].items()]
        return pin + [a.uop, "bench", "--graph", paths[n], "--json", "--reps", str(a.reps)] + dims

    def ort_cmd(n):
        return pin + [sys.executable, os.path.abspath(__file__), "--ort", paths[n],
                      json.dumps(MODELS[n][1]), str(a.reps)]

    contenders = [("uop", uop_cmd), ("onnxruntime", ort_cmd)]
    print("load before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    rows = {(n, c): [] for n in names for c, _ in contenders}
    log = open(a.json, "w") if a.json else None
    for r in range(a.rounds):
        for n in names:
            # Alternate who goes first, so neither always runs on a warmer cache.
            order = contenders if r % 2 == 0 else contenders[::-1]
            for c, cmd in order:
                row = run_json(cmd(n))
                rows[(n, c)].append(row)
                if log:
                    log.write(json.dumps({"round": r, "model": n, "contender": c, **row}) + "\n")
    print("load after: ", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    version = rows[(names[0], "onnxruntime")][0].get("onnxruntime", "?")
    print(f"\nmedians of {a.rounds} rounds; later calls: median of {a.reps}; "
          f"onnxruntime {version}, one thread, core {a.cpu}")
    print(f"{'model':<18} {'sizes':<22} {'first call ms':>24} {'ratio':>6} "
          f"{'later calls ms':>22} {'ratio':>6}")
    print(f"{'':<18} {'':<22} {'uop':>11} {'ort':>12} {'':>6} {'uop':>10} {'ort':>11}")
    for n in names:
        med = {c: {k: statistics.median(row[k] for row in rows[(n, c)]) for k in ("first_ms", "ms")}
               for c, _ in contenders}
        u, o = med["uop"], med["onnxruntime"]
        sizes = ", ".join(f"{k}={v}" for k, v in MODELS[n][1].items()) or "-"
        print(f"{n:<18} {sizes:<22} {u['first_ms']:>11.2f} {o['first_ms']:>12.2f} "
              f"{u['first_ms'] / o['first_ms']:>6.2f} {u['ms']:>10.4f} {o['ms']:>11.4f} "
              f"{u['ms'] / o['ms']:>6.2f}")


if __name__ == "__main__":
    main()
