"""Golden cases of the neural-network ops: softmax, log_softmax, layernorm, rmsnorm,
cross_entropy, mse_loss. Stability cases feed inputs around ±100."""

import numpy as np

from golden import dims, f32, reset_group, rng, write_case

GROUP = "nn"


def normal(seed, shape, scale=1.0):
    return f32(rng(seed).normal(0.0, scale, size=shape))


def d(a):
    return np.asarray(a, dtype=np.float64)


def softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def layernorm(x, gamma, beta, axes, eps):
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=axes, keepdims=True)
    shape = [1] * x.ndim
    for k, a in enumerate(axes):
        shape[a] = gamma.shape[k]
    return (x - mean) / np.sqrt(var + eps) * gamma.reshape(shape) + beta.reshape(shape)


def rmsnorm(x, gamma, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gamma


def cross_entropy(logits, target, reduction="mean"):
    m = np.max(logits, axis=1, keepdims=True)
    lse = (np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True)) + m)[:, 0]
    loss = lse - logits[np.arange(len(target)), target]
    return {"mean": np.mean(loss), "sum": np.sum(loss), "none": loss}[reduction]


def one(name, call, x, expected, decl=None, tol=None):
    program = f"""
input x: f32[{decl or dims(x.shape)}]
y = {call}
output y
"""
    write_case(GROUP, name, program, {"x": x}, {"y": expected}, tol=tol)


def main():
    reset_group(GROUP)
    x = normal(1, (3, 7))
    one("softmax_default_axis", "softmax(x)", x, softmax(d(x), -1))
    x3 = normal(2, (2, 3, 4))
    one("softmax_axis1_rank3", "softmax(x, axis=1)", x3, softmax(d(x3), 1))
    one("softmax_named", "softmax(x, axis=1)", x, softmax(d(x), 1), decl="B, N")
    one("softmax_size1_axis", "softmax(x, axis=0)", normal(3, (1, 5)), np.ones((1, 5)))
    big = normal(4, (3, 6)) + f32([[100.0], [-100.0], [0.0]])
    big[2, 0] = 100.0  # one dominant entry among small ones
    one("softmax_pm100", "softmax(x, axis=-1)", big, softmax(d(big), -1))
    wide = f32([[100.0, -100.0, 99.0, 0.0], [-100.0, -100.0, -101.0, -99.0]])
    one("softmax_wide_range", "softmax(x)", wide, softmax(d(wide), -1))

    one("log_softmax_default_axis", "log_softmax(x)", x, log_softmax(d(x), -1))
    one("log_softmax_axis0", "log_softmax(x, axis=0)", x3, log_softmax(d(x3), 0))
    one("log_softmax_named", "log_softmax(x, axis=-1)", x, log_softmax(d(x), -1), decl="B, N")
    one("log_softmax_pm100", "log_softmax(x)", big, log_softmax(d(big), -1))
    one("log_softmax_wide_range", "log_softmax(x)", wide, log_softmax(d(wide), -1))

    # layernorm: last axis (default), several trailing axes, an inner axis, named dims.
    x = normal(10, (4, 6), scale=2.0) + f32(3.0)
    g, b = normal(11, (6,)), normal(12, (6,))
    program = """
input x: f32[4, 6]
input g: f32[6]
input b: f32[6]
y = layernorm(x, g, b)
output y
"""
    write_case(GROUP, "layernorm_last_axis", program, {"x": x, "g": g, "b": b},
               {"y": layernorm(d(x), d(g), d(b), (1,), 1e-5)})
    program = """
input x: f32[B, N]
input g: f32[N]
input b: f32[N]
y = layernorm(x, g, b, axis=-1, eps=0.01)
output y
"""
    write_case(GROUP, "layernorm_named_eps", program, {"x": x, "g": g, "b": b},
               {"y": layernorm(d(x), d(g), d(b), (1,), 0.01)})
    x = normal(13, (2, 3, 5))
    g, b = normal(14, (3, 5)), normal(15, (3, 5))
    program = """
input x: f32[2, 3, 5]
input g: f32[3, 5]
input b: f32[3, 5]
y = layernorm(x, g, b, axis=[1, 2])
output y
"""
    write_case(GROUP, "layernorm_two_axes", program, {"x": x, "g": g, "b": b},
               {"y": layernorm(d(x), d(g), d(b), (1, 2), 1e-5)})
    g, b = normal(16, (3,)), normal(17, (3,))
    program = """
input x: f32[2, 3, 5]
input g: f32[3]
input b: f32[3]
y = layernorm(x, g, b, axis=1)
output y
"""
    write_case(GROUP, "layernorm_inner_axis", program, {"x": x, "g": g, "b": b},
               {"y": layernorm(d(x), d(g), d(b), (1,), 1e-5)})

    # rmsnorm: default eps is float32's machine epsilon (PyTorch's eps=None).
    x = normal(20, (3, 8), scale=2.0)
    g = normal(21, (8,))
    program = """
input x: f32[3, 8]
input g: f32[8]
y = rmsnorm(x, g)
output y
"""
    write_case(GROUP, "rmsnorm_default_eps", program, {"x": x, "g": g},
               {"y": rmsnorm(d(x), d(g), float(np.finfo(np.float32).eps))})
    program = """
input x: f32[B, N]
input g: f32[N]
y = rmsnorm(x, g, eps=1e-6)
output y
"""
    write_case(GROUP, "rmsnorm_named", program, {"x": x, "g": g},
               {"y": rmsnorm(d(x), d(g), 1e-6)})
    x = normal(22, (2, 3, 4))
    g = normal(23, (3, 4))
    program = """
input x: f32[2, 3, 4]
input g: f32[3, 4]
y = rmsnorm(x, g, axis=[-2, -1], eps=0.1)
output y
"""
    xd = d(x)
    want = xd / np.sqrt(np.mean(xd * xd, axis=(1, 2), keepdims=True) + 0.1) * d(g)
    write_case(GROUP, "rmsnorm_two_axes", program, {"x": x, "g": g}, {"y": want})

    # cross_entropy: targets are i32 class indices; logits around ±100 must not overflow.
    def ce_case(name, logits, target, reduction=None, decl=None):
        attr = f', reduction="{reduction}"' if reduction else ""
        bdim, cdim = decl or (str(logits.shape[0]), str(logits.shape[1]))
        program = f"""
input logits: f32[{bdim}, {cdim}]
input target: i32[{bdim}]
loss = cross_entropy(logits, target{attr})
output loss
"""
        write_case(GROUP, name, program, {"logits": logits, "target": target},
                   {"loss": cross_entropy(d(logits), target, reduction or "mean")})

    logits = normal(30, (5, 4), scale=2.0)
    target = np.array([0, 3, 1, 1, 2], dtype=np.int32)
    ce_case("cross_entropy_mean", logits, target)
    ce_case("cross_entropy_sum", logits, target, "sum")
    ce_case("cross_entropy_none", logits, target, "none")
    ce_case("cross_entropy_named", logits, target, decl=("B", "C"))
    big = normal(31, (4, 6)) + f32([[100.0], [-100.0], [0.0], [50.0]])
    big[2, 1] = 100.0
    big[3, 4] = -100.0
    ce_case("cross_entropy_pm100", big, np.array([2, 5, 1, 4], dtype=np.int32), "none")
    ce_case("cross_entropy_pm100_mean", big, np.array([2, 5, 0, 4], dtype=np.int32))
    one_sample = normal(32, (1, 3))
    ce_case("cross_entropy_batch1", one_sample, np.array([2], dtype=np.int32))
    # An out-of-range target gives NaN for its sample (and so for the mean).
    logits = normal(33, (3, 4))
    target = np.array([1, 4, -1], dtype=np.int32)
    program = """
input logits: f32[3, 4]
input target: i32[3]
loss = cross_entropy(logits, target, reduction="none")
output loss
"""
    safe = np.clip(target, 0, 3)
    want = cross_entropy(d(logits), safe, "none")
    want[(target < 0) | (target >= 4)] = np.nan
    write_case(GROUP, "cross_entropy_target_out_of_range", program,
               {"logits": logits, "target": target}, {"loss": want})

    # mse_loss: mean by default, broadcasting as PyTorch does.
    x, t = normal(40, (3, 5)), normal(41, (3, 5))
    program = """
input x: f32[3, 5]
input t: f32[3, 5]
loss = mse_loss(x, t)
output loss
"""
    write_case(GROUP, "mse_loss_mean", program, {"x": x, "t": t},
               {"loss": np.mean((d(x) - d(t)) ** 2)})
    program = """
input x: f32[B, N]
input t: f32[B, N]
s = mse_loss(x, t, reduction="sum")
n = mse_loss(x, t, reduction="none")
output s, n
"""
    write_case(GROUP, "mse_loss_sum_none_named", program, {"x": x, "t": t},
               {"s": np.sum((d(x) - d(t)) ** 2), "n": (d(x) - d(t)) ** 2})
    t1 = normal(42, (5,))
    program = """
input x: f32[3, 5]
input t: f32[5]
loss = mse_loss(x, t)
output loss
"""
    write_case(GROUP, "mse_loss_broadcast", program, {"x": x, "t": t1},
               {"loss": np.mean((d(x) - d(t1)) ** 2)})


if __name__ == "__main__":
    main()
