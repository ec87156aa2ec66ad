"""The RNN of `cargo bench --bench graph_grad` in jax: h <- tanh(h W + x_t U) for
T = 200 steps (H = E = 32, f32) with `jax.lax.scan`, then sum(h); forward alone and
`jax.grad` (forward + backward) with respect to h0, W and U, jitted.

    pip install jax
    taskset -c 0 python3 benches/jax_rnn_grad.py

Prints the median of 50 calls after the first (compile) call.
"""

import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

T, H, E = 200, 32, 32


def loss(h0, w, u, xs):
    xu = xs @ u

    def step(h, row):
        h = jnp.tanh(h @ w + row)
        return h, None

    h, _ = jax.lax.scan(step, h0, xu)
    return jnp.sum(h)


def median_ms(f, *args):
    jax.block_until_ready(f(*args))
    times = []
    for _ in range(50):
        start = time.perf_counter()
        jax.block_until_ready(f(*args))
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main():
    rng = np.random.default_rng(0)
    xs = jnp.asarray(rng.uniform(-1, 1, (T, E)), dtype=jnp.float32)
    h0 = jnp.asarray(rng.uniform(-1, 1, (1, H)), dtype=jnp.float32)
    w = jnp.asarray(rng.uniform(-0.2, 0.2, (H, H)), dtype=jnp.float32)
    u = jnp.asarray(rng.uniform(-0.2, 0.2, (E, H)), dtype=jnp.float32)
    fwd = jax.jit(loss)
    grad = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))
    print(f"jax rnn T={T} H={H}: forward {median_ms(fwd, h0, w, u, xs):.3f} ms")
    print(f"jax rnn T={T} H={H}: forward+backward {median_ms(grad, h0, w, u, xs):.3f} ms")


if __name__ == "__main__":
    main()
