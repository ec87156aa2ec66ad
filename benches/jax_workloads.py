#!/usr/bin/env python3
"""The nine `uop bench` workloads as jax.jit functions, timed on one thread.

    taskset -c 0 python3 benches/jax_workloads.py [--reps N] [WORKLOAD ...]

Prints one JSON object per line, in the form of `uop bench --json` (`workload`,
`backend` "jax", `impl` "jax_jit", `threads` 1, `ms` the median of the timed calls,
`metric`, `unit`), so `benches/side_by_side.py` reads both alike. The names, shapes,
operations and traffic / FLOP model are those of `src/bench/mod.rs`; the data are
standard normal f32 (numpy's generator, seed 0; conv weights scaled by 0.05), the
same distribution as uop's, not the same bits. The gelu chain is `x * 0.8 + 0.1`, as
in `kernels/gelu_chain.uop`.

jax is limited to one thread before it is imported (`XLA_FLAGS`), as uop is by
`--threads 1`; pin the process to one core with `taskset` for a fair comparison. Not
part of `cargo test`: it needs jax (`pip install jax[cpu]`).
"""
import argparse
import json
import os
import sys
import time

os.environ["JAX_PLATFORMS"] = "cpu"
if "xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "")
        + " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    ).strip()

SQRT_2_OVER_PI = 0.7978845608028654

# name: (shapes of the inputs, "GB/s" bytes or "GFLOP/s" flops)
WORKLOADS = {
    "gelu_4M": ([(4 << 20,)], ("GB/s", 8 * (4 << 20))),
    "softmax_4096x1024": ([(4096, 1024)], ("GB/s", 8 * 4096 * 1024)),
    "layernorm_4096x1024": ([(4096, 1024), (1024,), (1024,)], ("GB/s", 8 * 4096 * 1024)),
    "sum_16M": ([(16 << 20,)], ("GB/s", 4 * (16 << 20))),
    "colsum_4096x1024": ([(4096, 1024)], ("GB/s", 4 * 4096 * 1024)),
    "matmul_512": ([(512, 512), (512, 512)], ("GFLOP/s", 2 * 512**3)),
    "matmul_1024": ([(1024, 1024), (1024, 1024)], ("GFLOP/s", 2 * 1024**3)),
    "conv2d_8x64x56x56_k3": (
        [(8, 64, 56, 56), (64, 64, 3, 3)],
        ("GFLOP/s", 2 * 8 * 64 * 56 * 56 * 64 * 9),
    ),
    "transpose_1024": ([(1024, 1024)], ("GB/s", 8 * 1024 * 1024)),
}


def functions():
    """The jax functions by workload name (jax imported here, after `XLA_FLAGS` is set,
    so that `side_by_side.py` can read [`WORKLOADS`] without importing jax)."""
    import jax
    import jax.numpy as jnp

    def gelu(x):
        z = x * 0.8 + 0.1
        return 0.5 * z * (1.0 + jnp.tanh(SQRT_2_OVER_PI * (z + 0.044715 * z * z * z)))

    def layernorm(x, gamma, beta):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * gamma + beta

    def conv2d(x, k):
        return jax.lax.conv_general_dilated(
            x, k, (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW")
        )

    return {
        "gelu_4M": gelu,
        "softmax_4096x1024": lambda x: jax.nn.softmax(x, axis=-1),
        "layernorm_4096x1024": layernorm,
        "sum_16M": jnp.sum,
        "colsum_4096x1024": lambda x: x.sum(0),
        "matmul_512": jnp.matmul,
        "matmul_1024": jnp.matmul,
        "conv2d_8x64x56x56_k3": conv2d,
        "transpose_1024": lambda x: x.T,
    }


def inputs(name):
    import jax
    import numpy as np

    rng = np.random.default_rng(0)
    shapes, _ = WORKLOADS[name]
    arrays = [rng.standard_normal(s, dtype=np.float32) for s in shapes]
    if name.startswith("conv2d"):
        arrays[1] *= np.float32(0.05)
    return [jax.device_put(a) for a in arrays]


def median_ms(f, args, reps):
    import jax

    jax.block_until_ready(f(*args))  # compiles
    jax.block_until_ready(f(*args))  # warm-up
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        jax.block_until_ready(f(*args))
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return times[len(times) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workloads", nargs="*", help="names (default: all nine)")
    parser.add_argument("--reps", type=int, default=11, help="timed calls (median)")
    args = parser.parse_args()
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    for name in args.workloads:
        if name not in WORKLOADS:
            parser.error(f"unknown workload `{name}` (workloads: {', '.join(WORKLOADS)})")
    import jax

    fns = functions()
    for name in args.workloads or list(WORKLOADS):
        ms = median_ms(jax.jit(fns[name]), inputs(name), args.reps)
        unit, amount = WORKLOADS[name][1]
        row = {
            "workload": name,
            "backend": "jax",
            "impl": "jax_jit",
            "threads": 1,
            "ms": ms,
            "metric": amount / (ms * 1e-3) / 1e9,
            "unit": unit,
            "jax": jax.__version__,
        }
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    sys.exit(main())
