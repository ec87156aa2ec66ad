"""jax.jit's first call of examples/graphs/transformer_block.uop (T = 64, D = 64,
F = 256, f32, one head, causal mask, pre-norm, gelu MLP), to compare with
`cargo bench --bench graph -- first_call` (parse + prepare + compile + run).

    pip install jax
    python3 benches/jax_transformer_block.py

Prints the wall time of the first call (trace + compile + run) in a fresh process,
and the median of later calls.
"""

import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

T, D, F = 64, 64, 256


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


def main():
    rng = np.random.default_rng(0)
    shapes = [(T, D), (D,), (D,), (D, D), (D, D), (D, D), (D, D), (D,), (D,),
              (D, F), (F,), (F, D), (D,)]
    args = [jnp.asarray(rng.standard_normal(s), dtype=jnp.float32) for s in shapes]
    f = jax.jit(block)
    start = time.perf_counter()
    f(*args).block_until_ready()
    first = time.perf_counter() - start
    later = []
    for _ in range(50):
        start = time.perf_counter()
        f(*args).block_until_ready()
        later.append(time.perf_counter() - start)
    print(f"jax.jit first call: {first * 1e3:.1f} ms")
    print(f"jax.jit later calls (median of 50): {statistics.median(later) * 1e6:.1f} us")


if __name__ == "__main__":
    main()
