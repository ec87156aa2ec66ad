"""Golden cases of the pool group: max_pool2d and avg_pool2d (PyTorch semantics,
stride defaulting to the kernel), with references written with loops in numpy."""

import numpy as np

from golden import dims, f32, reset_group, rng, write_case

GROUP = "pool"


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def pool_ref(x, kind, kernel, stride=None, padding=0, dilation=1, count_include_pad=True):
    """Pools the last two axes window by window in float64. Padding is -inf for
    max; for avg it counts in the divisor only with count_include_pad."""
    (kh, kw) = pair(kernel)
    (sh, sw) = pair(stride if stride is not None else kernel)
    (ph, pw), (dh, dw) = pair(padding), pair(dilation)
    h, w = x.shape[-2:]
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros(x.shape[:-2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            rows = [i * sh - ph + a * dh for a in range(kh)]
            cols = [j * sw - pw + c * dw for c in range(kw)]
            inside = [(r, c) for r in rows for c in cols if 0 <= r < h and 0 <= c < w]
            vals = np.stack([x[..., r, c] for r, c in inside], axis=-1)
            if kind == "max":
                out[..., i, j] = vals.max(axis=-1)
            else:
                divisor = kh * kw if count_include_pad else len(inside)
                out[..., i, j] = vals.sum(axis=-1) / divisor
    return out


def attr_text(attrs):
    return "".join(f", {k}={str(v).lower() if isinstance(v, bool) else v}"
                   for k, v in attrs.items())


def pool_case(name, seed, op, x_shape, kernel, decl=None, offset=0.0, **attrs):
    """`y = op(x, kernel, ...)`; `offset` shifts the data (e.g. all negative, so a
    padding read as 0 instead of -inf would show)."""
    x = f32(rng(seed).standard_normal(x_shape) + offset)
    program = f"""
input x: f32[{decl or dims(x_shape)}]
y = {op}(x, {kernel}{attr_text(attrs)})
output y
"""
    kind = "max" if op == "max_pool2d" else "avg"
    y = pool_ref(x.astype(np.float64), kind, kernel if isinstance(kernel, int) else tuple(kernel),
                 **attrs)
    write_case(GROUP, name, program, {"x": x}, {"y": y})


def main():
    reset_group(GROUP)
    mp = "max_pool2d"
    pool_case("max_pool2d_default_stride", 1, mp, (1, 2, 4, 5), 2)
    pool_case("max_pool2d_stride_padding", 2, mp, (2, 3, 7, 6), 3, stride=2, padding=1)
    pool_case("max_pool2d_padding_negative_data", 3, mp, (1, 2, 5, 5), 2, offset=-100.0,
              stride=1, padding=1)
    pool_case("max_pool2d_dilation_rect", 4, mp, (1, 1, 9, 8), [3, 2], stride=[1, 2],
              padding=[1, 1], dilation=[2, 3])
    pool_case("max_pool2d_unbatched", 5, mp, (3, 5, 5), [2, 3], stride=1)
    pool_case("max_pool2d_size_one", 6, mp, (1, 1, 1, 1), 1)
    pool_case("max_pool2d_named", 7, mp, (2, 3, 6, 7), 2, decl="N, C, H, W")
    pool_case("max_pool2d_named_padding_dilation", 8, mp, (1, 2, 7, 6), 3, decl="N, C, H, W",
              stride=[2, 1], padding=1, dilation=2)
    ap = "avg_pool2d"
    pool_case("avg_pool2d_default_stride", 10, ap, (1, 2, 4, 6), 2)
    pool_case("avg_pool2d_padding_counted", 11, ap, (2, 3, 7, 6), 3, stride=2, padding=1)
    pool_case("avg_pool2d_padding_not_counted", 12, ap, (2, 3, 7, 6), 3, stride=2, padding=1,
              count_include_pad=False)
    pool_case("avg_pool2d_rect_unbatched", 13, ap, (2, 5, 4), [3, 2], stride=[2, 1],
              padding=[1, 1], count_include_pad=False)
    pool_case("avg_pool2d_kernel_fills_input", 14, ap, (1, 3, 3, 3), 3)
    pool_case("avg_pool2d_named", 15, ap, (2, 2, 5, 6), 3, decl="N, C, H, W", stride=1,
              padding=1, count_include_pad=False)


if __name__ == "__main__":
    main()
