"""Golden cases of the element-wise ops: broadcasting binary ops, `where`, the
comparisons, and the activations (relu, leaky_relu, gelu, silu, clip, ...).
The reference math is numpy in float64 from the float32 inputs."""

import math

import numpy as np

from golden import dims, f32, reset_group, rng, write_case

GROUP = "elementwise"
erf = np.vectorize(math.erf)


def normal(seed, shape, scale=1.0):
    return f32(rng(seed).normal(0.0, scale, size=shape))


def uniform(seed, shape, lo, hi):
    return f32(rng(seed).uniform(lo, hi, size=shape))


def small_ints(seed, shape):
    """Integer-valued floats in [-2, 2], so equality comparisons hit."""
    return f32(rng(seed).integers(-2, 3, size=shape))


def d(a):
    return np.asarray(a, dtype=np.float64)


def binary_case(name, op, xs, ys, fn, gen=normal, seed=0, named=None):
    """`op(x, y)` for tensors of shapes xs, ys; `named` replaces the declared dims."""
    x, y = gen(seed, xs), gen(seed + 1, ys)
    xd, yd = named if named else (dims(xs), dims(ys))
    program = f"""
input x: f32[{xd}]
input y: f32[{yd}]
z = {op}(x, y)
output z
"""
    write_case(GROUP, name, program, {"x": x, "y": y}, {"z": fn(d(x), d(y))})


def unary_case(name, call, shape, x, fn, tol=None):
    program = f"""
input x: f32[{dims(shape)}]
y = {call}
output y
"""
    write_case(GROUP, name, program, {"x": x}, {"y": fn(d(x))}, tol=tol)


def gelu_exact(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def main():
    reset_group(GROUP)
    positive = lambda seed, shape: uniform(seed, shape, 0.5, 2.0)

    # Arithmetic: equal shapes (the plain micro op), one-sided and two-sided
    # broadcasting, new leading axes, size-1 dims, and named dims.
    binary_case("add_same_shape", "add", (3, 5), (3, 5), np.add, seed=1)
    binary_case("add_row_broadcast", "add", (3, 5), (5,), np.add, seed=2)
    binary_case("add_outer", "add", (4, 1), (1, 6), np.add, seed=3)
    binary_case("add_rank3_size1", "add", (2, 1, 3), (4, 1), np.add, seed=4)
    binary_case(
        "add_named_dims", "add", (3, 5), (5,), np.add, seed=5, named=("B, N", "N")
    )
    binary_case("sub_column", "sub", (4, 3), (4, 1), np.subtract, seed=6)
    binary_case("sub_leading", "sub", (3,), (2, 3), np.subtract, seed=7)
    binary_case("mul_outer", "mul", (5, 1), (1, 3), np.multiply, seed=8)
    binary_case(
        "mul_named", "mul", (2, 7), (2, 1), np.multiply, seed=9, named=("B, N", "B, 1")
    )
    binary_case("div_broadcast", "div", (3, 4), (4,), np.divide, gen=positive, seed=10)
    binary_case("pow_broadcast", "pow", (3, 4), (3, 1), np.power, gen=positive, seed=11)
    binary_case("maximum_broadcast", "maximum", (2, 3, 4), (3, 1), np.maximum, seed=12)
    binary_case("minimum_broadcast", "minimum", (1, 5), (3, 1), np.minimum, seed=13)

    # A scalar on either side, and a rank-0 tensor against a matrix.
    x = normal(20, (3, 4))
    program = """
input x: f32[3, 4]
a = add(x, 2.5)
b = sub(1, x)
c = mul(-0.5, x)
e = div(x, 4)
f = pow(x, 2)
g = maximum(0.25, x)
output a, b, c, e, f, g
"""
    xd = d(x)
    write_case(
        GROUP,
        "scalar_operands",
        program,
        {"x": x},
        {
            "a": xd + 2.5,
            "b": 1 - xd,
            "c": -0.5 * xd,
            "e": xd / 4,
            "f": xd**2,
            "g": np.maximum(0.25, xd),
        },
    )
    x, s = normal(21, (2, 3)), normal(22, ())
    program = """
input x: f32[2, 3]
input s: f32[]
y = sub(x, s)
output y
"""
    write_case(GROUP, "rank0_broadcast", program, {"x": x, "s": s}, {"y": d(x) - d(s)})

    # Comparisons on integer-valued floats (so ties occur), broadcasting.
    x, y = small_ints(30, (4, 5)), small_ints(31, (5,))
    outs = {}
    lines = []
    for op, fn in [
        ("eq", np.equal),
        ("ne", np.not_equal),
        ("lt", np.less),
        ("le", np.less_equal),
        ("gt", np.greater),
        ("ge", np.greater_equal),
    ]:
        lines.append(f"{op}_xy = {op}(x, y)")
        outs[f"{op}_xy"] = fn(d(x), d(y)).astype(np.float64)
    program = (
        "input x: f32[4, 5]\ninput y: f32[5]\n"
        + "\n".join(lines)
        + "\noutput "
        + ", ".join(outs)
        + "\n"
    )
    write_case(GROUP, "comparisons_broadcast", program, {"x": x, "y": y}, outs)
    x = small_ints(32, (3, 1))
    program = """
input x: f32[3, 1]
a = ge(x, 0)
b = lt(1, x)
output a, b
"""
    write_case(
        GROUP,
        "comparisons_scalar",
        program,
        {"x": x},
        {"a": (d(x) >= 0).astype(float), "b": (1 < d(x)).astype(float)},
    )

    # where: all three broadcast together, scalars allowed.
    c, a = small_ints(40, (3, 1)), normal(41, (1, 4))
    program = """
input c: f32[3, 1]
input a: f32[1, 4]
y = where(c, a, -1)
output y
"""
    write_case(
        GROUP, "where_broadcast", program, {"c": c, "a": a},
        {"y": np.where(d(c) != 0, d(a), -1.0) + np.zeros((3, 4))},
    )
    c, a, b = small_ints(42, (2, 3, 4)), normal(43, (3, 4)), normal(44, (4,))
    program = """
input c: f32[B, 3, 4]
input a: f32[3, 4]
input b: f32[4]
y = where(c, a, b)
output y
"""
    write_case(
        GROUP, "where_rank3_named", program, {"c": c, "a": a, "b": b},
        {"y": np.where(d(c) != 0, d(a), d(b))},
    )
    c, a, b = small_ints(45, (2, 5)), normal(46, (2, 5)), normal(47, (2, 5))
    program = """
input c: f32[2, 5]
input a: f32[2, 5]
input b: f32[2, 5]
y = where(gt(c, 0), a, b)
output y
"""
    write_case(
        GROUP, "where_same_shape", program, {"c": c, "a": a, "b": b},
        {"y": np.where(d(c) > 0, d(a), d(b))},
    )

    # The unary micro ops, for completeness of the element-wise group.
    x = uniform(50, (2, 7), 0.2, 3.0)
    fns = {
        "neg": np.negative,
        "abs": np.abs,
        "exp": np.exp,
        "log": np.log,
        "sqrt": np.sqrt,
        "rsqrt": lambda v: 1 / np.sqrt(v),
        "tanh": np.tanh,
        "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
        "erf": erf,
        "sin": np.sin,
        "cos": np.cos,
        "floor": np.floor,
        "ceil": np.ceil,
    }
    program = "input x: f32[2, 7]\n"
    program += "".join(f"{k}_x = {k}(x)\n" for k in fns)
    program += "output " + ", ".join(f"{k}_x" for k in fns) + "\n"
    write_case(
        GROUP, "unary_micro_ops", program, {"x": x},
        {f"{k}_x": fn(d(x)) for k, fn in fns.items()},
    )
    x = f32([[-2.5, -0.0, 0.0, 1.5, 3.0]])
    unary_case("sign", "sign(x)", (1, 5), x, np.sign)

    # Activations.
    unary_case("reciprocal", "reciprocal(x)", (3, 4), uniform(60, (3, 4), 0.5, 2), lambda v: 1 / v)
    x = normal(61, (4, 5))
    x[0, 0] = 0.0
    unary_case("relu", "relu(x)", (4, 5), x, lambda v: np.maximum(v, 0))
    unary_case("leaky_relu_default", "leaky_relu(x)", (4, 5), x, lambda v: np.where(v > 0, v, 0.01 * v))
    unary_case(
        "leaky_relu_alpha", "leaky_relu(x, alpha=0.2)", (4, 5), x,
        lambda v: np.where(v > 0, v, 0.2 * v),
    )
    x = normal(62, (3, 9), scale=2.5)
    unary_case("gelu_exact", "gelu(x)", (3, 9), x, gelu_exact)
    unary_case("gelu_none", 'gelu(x, approximate="none")', (3, 9), x, gelu_exact)
    unary_case("gelu_tanh", 'gelu(x, approximate="tanh")', (3, 9), x, gelu_tanh)
    unary_case("silu", "silu(x)", (3, 9), x, lambda v: v / (1 + np.exp(-v)))
    x = normal(63, (3, 6), scale=2.0)
    unary_case("clip_both", "clip(x, min=-1, max=1.5)", (3, 6), x, lambda v: np.clip(v, -1, 1.5))
    unary_case("clip_min_only", "clip(x, min=0.5)", (3, 6), x, lambda v: np.maximum(v, 0.5))
    unary_case("clip_max_only", "clip(x, max=-0.25)", (3, 6), x, lambda v: np.minimum(v, -0.25))
    # PyTorch's clamp gives `max` everywhere when min > max.
    unary_case("clip_min_above_max", "clip(x, min=1, max=0)", (3, 6), x, lambda v: np.minimum(np.maximum(v, 1), 0))
    x, lo, hi = normal(64, (4, 3)), f32([-0.5, 0.0, -1.0]), f32([[0.5], [1.0], [0.25], [2.0]])
    program = """
input x: f32[B, 3]
input lo: f32[3]
input hi: f32[B, 1]
y = clip(x, min=lo, max=hi)
output y
"""
    write_case(
        GROUP, "clip_tensor_bounds", program, {"x": x, "lo": lo, "hi": hi},
        {"y": np.minimum(np.maximum(d(x), d(lo)), d(hi))},
    )


if __name__ == "__main__":
    main()
