"""Golden cases of the reductions: sum mean max min prod argmax argmin var std
logsumexp, with `axis` (int, list, negative, omitted) and `keepdim`. PyTorch
semantics: omitting `axis` reduces everything to rank 0; argmax/argmin without an
axis index the flattened tensor; var/std use `correction` (default 1)."""

import numpy as np

from golden import dims, f32, reset_group, rng, write_case

GROUP = "reduce"


def normal(seed, shape, scale=1.0):
    return f32(rng(seed).normal(0.0, scale, size=shape))


def d(a):
    return np.asarray(a, dtype=np.float64)


def case(name, call, x, expected, decl=None, tol=None):
    """One program `y = <call>` over input x (declared with literal dims unless `decl`)."""
    program = f"""
input x: f32[{decl or dims(x.shape)}]
y = {call}
output y
"""
    write_case(GROUP, name, program, {"x": x}, {"y": expected}, tol=tol)


def logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isinf(m), 0.0, m)
    with np.errstate(divide="ignore"):
        r = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        r = np.squeeze(r, axis=axis) if axis is not None else r.reshape(())
    return r


def main():
    reset_group(GROUP)
    x = normal(1, (3, 4, 5))
    xd = d(x)
    case("sum_all", "sum(x)", x, np.sum(xd))
    case("sum_axis1", "sum(x, axis=1)", x, np.sum(xd, axis=1))
    case("sum_axes_keepdim", "sum(x, axis=[0, 2], keepdim=true)", x, np.sum(xd, axis=(0, 2), keepdims=True))
    case("sum_negative_axis", "sum(x, axis=-1)", x, np.sum(xd, axis=-1))
    case("sum_all_keepdim", "sum(x, keepdim=true)", x, np.sum(xd, keepdims=True))
    case("sum_every_axis_listed", "sum(x, axis=[2, 0, 1])", x, np.sum(xd))
    y = normal(2, (4, 7))
    case("sum_named", "sum(x, axis=1)", y, np.sum(d(y), axis=1), decl="B, N")
    z = normal(3, (5, 1))
    case("sum_size1_axis", "sum(x, axis=1)", z, np.sum(d(z), axis=1))

    case("mean_all", "mean(x)", x, np.mean(xd))
    case("mean_axis0_keepdim", "mean(x, axis=0, keepdim=true)", x, np.mean(xd, axis=0, keepdims=True))
    case("mean_named", "mean(x, axis=[0, 1])", y, np.mean(d(y)), decl="B, N")

    case("max_axis1", "max(x, axis=1)", x, np.max(xd, axis=1))
    case("max_all", "max(x)", x, np.max(xd))
    case("min_negative_axes", "min(x, axis=[-1, -3], keepdim=true)", x, np.min(xd, axis=(0, 2), keepdims=True))
    case("min_named", "min(x, axis=0)", y, np.min(d(y), axis=0), decl="B, N")

    p = f32(rng(4).uniform(0.5, 1.5, size=(3, 6)))
    case("prod_last_axis", "prod(x, axis=-1)", p, np.prod(d(p), axis=-1))
    case("prod_all", "prod(x)", p, np.prod(d(p)))

    # Integer values make ties: the first extreme wins (numpy and PyTorch agree).
    t = f32(rng(5).integers(-3, 4, size=(4, 5)))
    td = d(t)
    case("argmax_flat", "argmax(x)", t, np.float64(np.argmax(td)))
    case("argmax_axis1", "argmax(x, axis=1)", t, np.argmax(td, axis=1).astype(np.float64))
    case("argmax_axis0_keepdim", "argmax(x, axis=0, keepdim=true)", t, np.argmax(td, axis=0, keepdims=True).astype(np.float64))
    case("argmax_flat_keepdim", "argmax(x, keepdim=true)", t, np.argmax(td, keepdims=True).astype(np.float64))
    case("argmin_flat_rank3", "argmin(x)", x, np.float64(np.argmin(xd)))
    case("argmin_negative_axis", "argmin(x, axis=-2)", x, np.argmin(xd, axis=-2).astype(np.float64))
    case("argmin_named", "argmin(x, axis=1)", t, np.argmin(td, axis=1).astype(np.float64), decl="B, N")

    v = normal(6, (4, 6), scale=3.0) + f32(10.0)
    vd = d(v)
    case("var_all", "var(x)", v, np.var(vd, ddof=1))
    case("var_axis1_biased", "var(x, axis=1, correction=0)", v, np.var(vd, axis=1, ddof=0))
    case("var_correction2_keepdim", "var(x, axis=0, correction=2, keepdim=true)", v, np.var(vd, axis=0, ddof=2, keepdims=True))
    # Named dims: the element count is only known at run time.
    case("var_named", "var(x, axis=1)", v, np.var(vd, axis=1, ddof=1), decl="B, N")
    case("var_named_all", "var(x, correction=0)", v, np.var(vd, ddof=0), decl="B, N")
    case("std_all", "std(x)", v, np.std(vd, ddof=1))
    case("std_axis0", "std(x, axis=0)", v, np.std(vd, axis=0, ddof=1))
    case("std_named_keepdim", "std(x, axis=-1, correction=0, keepdim=true)", v, np.std(vd, axis=-1, ddof=0, keepdims=True), decl="B, N")
    case("var_rank3_axes", "var(x, axis=[0, 2])", x, np.var(xd, axis=(0, 2), ddof=1))

    # logsumexp: large magnitudes must neither overflow nor lose the small terms.
    big = normal(7, (3, 5), scale=1.0) + f32([[100.0], [-100.0], [0.0]])
    bd = d(big)
    case("logsumexp_axis1_pm100", "logsumexp(x, axis=1)", big, logsumexp(bd, axis=1))
    case("logsumexp_all_pm100", "logsumexp(x)", big, logsumexp(bd))
    case("logsumexp_axis0_keepdim", "logsumexp(x, axis=0, keepdim=true)", big, logsumexp(bd, axis=0, keepdims=True))
    case("logsumexp_named", "logsumexp(x, axis=-1)", y, logsumexp(d(y), axis=-1), decl="B, N")
    inf = np.inf
    special = f32([[-inf, -inf, -inf], [1.0, -inf, 2.0], [inf, 0.0, 3.0]])
    case("logsumexp_infinite_rows", "logsumexp(x, axis=1)", special, logsumexp(d(special), axis=1))


if __name__ == "__main__":
    main()
