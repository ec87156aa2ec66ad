#!/usr/bin/env python3
"""uop's tile kernels against jax.jit call by call, in one process.

    python3 benches/paired.py [--calls 150] [--cpu 0] [--before DIR] [WORKLOAD ...]

`benches/side_by_side.py` alternates whole processes, a round of calls each; on a
shared virtual machine whose speed drifts within seconds, its per-round ratios
spread from 0.7 to 1.4. This script times single calls instead: it builds the
prebuilt kernels of this checkout as a C library (`benches/paired/`, its own
workspace, `target/paired/`), loads it into one Python process beside jax, and
calls the contenders in turn, one call each, reversing the order every round. Each
call's ratio to jax's call of the same round is one paired sample: whatever the
host does to the machine in that second, it does to both.

`--before DIR` builds a second library from another checkout (a `git worktree` at
an older commit) and times it too, so one run also gives after / before.

Prints per workload each contender's median and minimum time (ms), and the median
(with the quartiles) of its paired ratios to jax and to the first uop library.
Workloads: `matmul_512`, `matmul_1024`, `conv2d_8x64x56x56_k3` (the shapes and
data of `uop bench` and `benches/jax_workloads.py`). jax runs on one thread
(`XLA_FLAGS`), the process is pinned to one core (`taskset`), uop runs on one
thread. Needs jax (`pip install jax[cpu]`) and numpy; not part of `cargo test`.
"""
import argparse
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

WORKLOADS = ["matmul_512", "matmul_1024", "conv2d_8x64x56x56_k3"]


def build(checkout, name):
    """Builds `benches/paired` against `checkout`'s prebuilt kernels as `lib{name}.so`."""
    crate = os.path.join(HERE, "paired")
    target = os.path.join(ROOT, "target", "paired")
    if os.path.abspath(checkout) != ROOT or name != "uop_paired":
        # A copy whose kernels come from the other checkout, under its own name.
        tmp = tempfile.mkdtemp(prefix="uop-paired-")
        shutil.copy(os.path.join(crate, "lib.rs"), tmp)
        with open(os.path.join(crate, "Cargo.toml")) as f:
            manifest = f.read()
        prebuilt = os.path.join(os.path.abspath(checkout), "prebuilt")
        manifest = manifest.replace('path = "../../prebuilt"', f'path = "{prebuilt}"')
        manifest = manifest.replace('name = "uop-paired"', f'name = "{name.replace("_", "-")}"')
        with open(os.path.join(tmp, "Cargo.toml"), "w") as f:
            f.write(manifest)
        crate, target = tmp, os.path.join(ROOT, "target", "paired-" + name)
    subprocess.run(
        ["cargo", "build", "--release", "--quiet", "--manifest-path",
         os.path.join(crate, "Cargo.toml"), "--target-dir", target],
        check=True,
    )
    lib = ctypes.CDLL(os.path.join(target, "release", f"lib{name}.so"))
    lib.uop_paired_threads(ctypes.c_size_t(1))
    return lib


def workload(name, jax, jnp, np):
    """(jax's function, its arguments, the numpy inputs, a uop call on a library)."""
    rng = np.random.default_rng(0)
    f32 = ctypes.POINTER(ctypes.c_float)
    if name.startswith("matmul"):
        n = int(name.split("_")[1])
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        c = np.zeros((n, n), np.float32)

        def call(lib):
            return lib.uop_paired_matmul(a.ctypes.data_as(f32), b.ctypes.data_as(f32),
                                         c.ctypes.data_as(f32), *(ctypes.c_size_t(n),) * 3)
        return jax.jit(jnp.matmul), (a, b), c, call
    n, ch, h, w, o = 8, 64, 56, 56, 64
    x = rng.standard_normal((n, ch, h, w), dtype=np.float32)
    k = rng.standard_normal((o, ch, 3, 3), dtype=np.float32) * np.float32(0.05)
    y = np.zeros((n, o, h, w), np.float32)
    dims = (ctypes.c_size_t * 5)(n, ch, h, w, o)

    def conv(x, k):
        return jax.lax.conv_general_dilated(
            x, k, (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW"))

    def call(lib):
        return lib.uop_paired_conv2d(x.ctypes.data_as(f32), k.ctypes.data_as(f32),
                                     y.ctypes.data_as(f32), dims)
    return jax.jit(conv), (x, k), y, call


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("workloads", nargs="*", help=f"names (default: {', '.join(WORKLOADS)})")
    p.add_argument("--calls", type=int, default=150, help="timed calls per contender")
    p.add_argument("--cpu", default="0", help="the core the process is pinned to")
    p.add_argument("--before", metavar="DIR", help="another checkout to time as `before`")
    a = p.parse_args()
    for w in a.workloads:
        if w not in WORKLOADS:
            p.error(f"unknown workload `{w}` (workloads: {', '.join(WORKLOADS)})")
    if a.calls < 1:
        p.error("--calls must be at least 1")
    libs = {"uop": build(ROOT, "uop_paired")}
    if a.before:
        libs = {"before": build(a.before, "uop_paired_before"), "after": libs["uop"]}
    os.sched_setaffinity(0, {int(a.cpu)})
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_cpu_multi_thread_eigen=false"
                               " intra_op_parallelism_threads=1").strip()
    import jax
    import jax.numpy as jnp
    import numpy as np

    print("load before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    first = next(iter(libs))
    for name in a.workloads or WORKLOADS:
        f, args, out, call = workload(name, jax, jnp, np)
        args = [jax.device_put(x) for x in args]
        want = np.asarray(jax.block_until_ready(f(*args)))
        for label, lib in libs.items():
            if call(lib) != 0:
                sys.exit(f"{label}: {name} refused its shapes")
            err = float(np.abs(out - want).max() / np.abs(want).max())
            if err > 1e-4:
                sys.exit(f"{label}: {name} differs from jax by {err:.2e} (relative to the largest)")
        names = ["jax"] + list(libs)
        times = {n: [] for n in names}
        for r in range(a.calls):
            for n in names if r % 2 == 0 else names[::-1]:
                t = time.perf_counter()
                if n == "jax":
                    jax.block_until_ready(f(*args))
                else:
                    call(libs[n])
                times[n].append((time.perf_counter() - t) * 1e3)
        print(f"{name}, {a.calls} calls each, pinned to core {a.cpu}:")
        for n in names:
            line = f"  {n:7} median {statistics.median(times[n]):8.3f} ms  min {min(times[n]):8.3f}"
            for base in ["jax", first] if n != "jax" else []:
                if base == n:
                    continue
                q = statistics.quantiles([x / y for x, y in zip(times[n], times[base])], n=4)
                line += f"   / {base} {q[1]:.3f} [{q[0]:.3f}, {q[2]:.3f}]"
            print(line)
    print("load after: ", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    sys.exit(main())
