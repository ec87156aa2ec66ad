"""jax.jit of examples/graphs/transformer_block.uop (T = 64, D = 64, F = 256, f32,
one head, causal mask, pre-norm, gelu MLP), to compare with
`uop bench --graph examples/graphs/transformer_block.uop --dim T=64 --dim D=64 --dim F=256`.

    pip install jax
    taskset -c 0 python3 benches/jax_transformer_block.py [--calls 50] [--json]

Prints the wall time of the first call (trace + compile + run) in a fresh process,
and the median of `--calls` later calls; with `--json`, one JSON object (`workload`,
`ms`, `first_ms`), as `benches/graph_side_by_side.py` reads it. jax runs on one
thread (`XLA_FLAGS`, set before it is imported), as `uop bench --graph` does.
"""

import argparse
import json
import os
import statistics
import time

os.environ["JAX_PLATFORMS"] = "cpu"
if "xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "")
        + " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    ).strip()

T, D, F = 64, 64, 256


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=50, help="timed later calls")
    p.add_argument("--json", action="store_true", help="print one JSON line")
    a = p.parse_args()
    import jax
    import jax.numpy as jnp
    import numpy as np

    def layernorm(x, g, c, eps=1e-5):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + eps) * g + c

    def block(x, g1, c1, wq, wk, wv, wo, g2, c2, w1, d1, w2, d2):
        h = layernorm(x, g1, c1)
        q, k, v = h @ wq, h @ wk, h @ wv
        s = (q @ k.T) * 0.25
        causal = jnp.arange(T)[None, :] <= jnp.arange(T)[:, None]
        p = jax.nn.softmax(jnp.where(causal, s, -jnp.inf), axis=-1)
        r = x + (p @ v) @ wo
        h2 = layernorm(r, g2, c2)
        m = jax.nn.gelu(h2 @ w1 + d1, approximate=False) @ w2 + d2
        return r + m

    rng = np.random.default_rng(0)
    shapes = [(T, D), (D,), (D,), (D, D), (D, D), (D, D), (D, D), (D,), (D,),
              (D, F), (F,), (F, D), (D,)]
    args = [jnp.asarray(rng.standard_normal(s), dtype=jnp.float32) for s in shapes]
    f = jax.jit(block)
    start = time.perf_counter()
    f(*args).block_until_ready()
    first = time.perf_counter() - start
    later = []
    for _ in range(a.calls):
        start = time.perf_counter()
        f(*args).block_until_ready()
        later.append(time.perf_counter() - start)
    ms = statistics.median(later) * 1e3
    if a.json:
        print(json.dumps({"workload": "transformer_block", "ms": ms, "first_ms": first * 1e3,
                          "calls": a.calls, "jax": jax.__version__}))
    else:
        print(f"jax.jit first call: {first * 1e3:.1f} ms")
        print(f"jax.jit later calls (median of {a.calls}): {ms * 1e3:.1f} us")


if __name__ == "__main__":
    main()
