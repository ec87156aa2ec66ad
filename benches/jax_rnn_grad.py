"""The RNN of `examples/graph_grad/rnn.uop` in jax: h <- tanh(h W + x_t U) for
T = 200 steps (H = E = 32, f32) with `jax.lax.scan`, then sum(h); forward alone and
`jax.grad` (forward + backward) with respect to h0, W and U, jitted.

    pip install jax
    taskset -c 0 python3 benches/jax_rnn_grad.py [--calls 50] [--json]

Prints the median of `--calls` calls after the first (compile) call; with `--json`,
one JSON object per line (`workload`, `ms`, `first_ms`), as
`benches/graph_side_by_side.py` reads them. jax runs on one thread (`XLA_FLAGS`, set
before it is imported), as `uop bench --graph` does.
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

T, H, E = 200, 32, 32


def times_ms(f, args, calls):
    """The first call's time and the median of `calls` later calls, in ms."""
    import jax

    start = time.perf_counter()
    jax.block_until_ready(f(*args))
    first = time.perf_counter() - start
    later = []
    for _ in range(calls):
        start = time.perf_counter()
        jax.block_until_ready(f(*args))
        later.append(time.perf_counter() - start)
    return first * 1e3, statistics.median(later) * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=50, help="timed later calls")
    p.add_argument("--json", action="store_true", help="print JSON lines")
    a = p.parse_args()
    import jax
    import jax.numpy as jnp
    import numpy as np

    def loss(h0, w, u, xs):
        xu = xs @ u

        def step(h, row):
            h = jnp.tanh(h @ w + row)
            return h, None

        h, _ = jax.lax.scan(step, h0, xu)
        return jnp.sum(h)

    rng = np.random.default_rng(0)
    xs = jnp.asarray(rng.uniform(-1, 1, (T, E)), dtype=jnp.float32)
    h0 = jnp.asarray(rng.uniform(-1, 1, (1, H)), dtype=jnp.float32)
    w = jnp.asarray(rng.uniform(-0.2, 0.2, (H, H)), dtype=jnp.float32)
    u = jnp.asarray(rng.uniform(-0.2, 0.2, (E, H)), dtype=jnp.float32)
    args = (h0, w, u, xs)
    for name, f in [
        ("rnn_forward", jax.jit(loss)),
        ("rnn_grad", jax.jit(jax.grad(loss, argnums=(0, 1, 2)))),
    ]:
        first, ms = times_ms(f, args, a.calls)
        if a.json:
            print(json.dumps({"workload": name, "ms": ms, "first_ms": first, "calls": a.calls,
                              "jax": jax.__version__}))
        else:
            print(f"jax {name} T={T} H={H}: first call {first:.1f} ms, later calls {ms:.3f} ms")


if __name__ == "__main__":
    main()
