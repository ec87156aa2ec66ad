"""Golden cases of the conv group: conv1d, conv2d and conv_transpose2d (PyTorch
semantics, NCHW / OIHW), with references written with explicit loops in numpy."""

import numpy as np

from golden import dims, f32, reset_group, rng, write_case

GROUP = "conv"


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def conv2d_ref(x, w, bias, stride, padding, dilation, groups):
    """Cross-correlation in float64: per group and kernel tap, a strided slice of
    the zero-padded input contracted with that tap's weights."""
    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(padding), pair(dilation)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    og = o // groups
    out = np.zeros((n, o, oh, ow))
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                           j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    if bias is not None:
        out += bias[None, :, None, None]
    return out


def conv_transpose2d_ref(x, w, bias, stride, padding, output_padding, dilation, groups):
    """Transposed convolution as a scatter: every input pixel adds its weighted
    kernel into the output at ih*s - p + kh*d (the gather in uop is independent)."""
    (sh, sw), (ph, pw) = pair(stride), pair(padding)
    (oph, opw), (dh, dw) = pair(output_padding), pair(dilation)
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    cg = c // groups
    oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    ow = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    out = np.zeros((n, og * groups, oh, ow))
    for g in range(groups):
        for ih in range(h):
            for iw in range(wd):
                for i in range(kh):
                    for j in range(kw):
                        y, z = ih * sh - ph + i * dh, iw * sw - pw + j * dw
                        if 0 <= y < oh and 0 <= z < ow:
                            out[:, g * og:(g + 1) * og, y, z] += (
                                x[:, g * cg:(g + 1) * cg, ih, iw]
                                @ w[g * cg:(g + 1) * cg, :, i, j])
    if bias is not None:
        out += bias[None, :, None, None]
    return out


def attr_text(attrs):
    return "".join(f", {k}={v}" for k, v in attrs.items())


def conv_case(name, seed, op, x_shape, w_shape, bias=True, decl=None, **attrs):
    """One case of `op` ("conv1d", "conv2d" or "conv_transpose2d"); `decl` gives
    (x, w, b) declarations with named dims instead of the literal shapes."""
    r = rng(seed)
    x = f32(r.standard_normal(x_shape))
    w = f32(r.standard_normal(w_shape))
    out_channels = w_shape[0] if op != "conv_transpose2d" else w_shape[1] * attrs.get("groups", 1)
    b = f32(r.standard_normal(out_channels))
    x_decl, w_decl, b_decl = decl or (dims(x.shape), dims(w.shape), dims(b.shape))
    lines = [f"input x: f32[{x_decl}]", f"input w: f32[{w_decl}]"]
    inputs = {"x": x, "w": w}
    args = "x, w"
    if bias:
        lines.append(f"input b: f32[{b_decl}]")
        inputs["b"] = b
        args += ", b"
    lines += [f"y = {op}({args}{attr_text(attrs)})", "output y"]
    x64, w64, b64 = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64) if bias else None
    py = lambda v: pair(v) if isinstance(v, int) else v  # noqa: E731
    if op == "conv1d":
        # conv1d is conv2d over [N, C, 1, L] with a [O, C/g, 1, K] kernel; the
        # unit axis gets stride 1, padding 0, dilation 1.
        def lift(key, default, neutral):
            v = attrs.get(key, default)
            return (neutral, v[0] if isinstance(v, list) else v)
        y = conv2d_ref(x64[:, :, None, :], w64[:, :, None, :], b64, lift("stride", 1, 1),
                       lift("padding", 0, 0), lift("dilation", 1, 1),
                       attrs.get("groups", 1))[:, :, 0, :]
    elif op == "conv2d":
        y = conv2d_ref(x64, w64, b64, py(attrs.get("stride", 1)), py(attrs.get("padding", 0)),
                       py(attrs.get("dilation", 1)), attrs.get("groups", 1))
    else:
        y = conv_transpose2d_ref(x64, w64, b64, py(attrs.get("stride", 1)),
                                 py(attrs.get("padding", 0)), py(attrs.get("output_padding", 0)),
                                 py(attrs.get("dilation", 1)), attrs.get("groups", 1))
    write_case(GROUP, name, "\n".join(lines), inputs, {"y": y})


def main():
    reset_group(GROUP)
    c2 = "conv2d"
    conv_case("conv2d_basic", 1, c2, (1, 2, 5, 5), (3, 2, 3, 3))
    conv_case("conv2d_no_bias", 2, c2, (2, 3, 4, 6), (2, 3, 2, 2), bias=False)
    conv_case("conv2d_stride_padding_rect_kernel", 3, c2, (2, 3, 7, 6), (4, 3, 3, 2),
              stride=2, padding=1)
    conv_case("conv2d_dilation_per_axis", 4, c2, (1, 2, 9, 8), (2, 2, 3, 3),
              stride=[1, 2], padding=[2, 0], dilation=[2, 1])
    conv_case("conv2d_groups2", 5, c2, (1, 4, 6, 5), (6, 2, 3, 3), groups=2, padding=[1, 0])
    conv_case("conv2d_depthwise", 6, c2, (2, 3, 5, 5), (3, 1, 3, 3), groups=3, padding=1)
    conv_case("conv2d_depthwise_multiplier", 7, c2, (1, 2, 5, 4), (4, 1, 2, 3), groups=2,
              stride=[2, 1], dilation=[1, 2], padding=[1, 2])
    conv_case("conv2d_pointwise_size_one", 8, c2, (1, 3, 1, 1), (2, 3, 1, 1))
    conv_case("conv2d_kernel_fills_input", 9, c2, (1, 1, 3, 3), (1, 1, 3, 3), bias=False)
    conv_case("conv2d_kernel_equals_padded_input", 10, c2, (1, 2, 1, 3), (2, 2, 3, 5),
              padding=1)
    conv_case("conv2d_named", 11, c2, (2, 3, 6, 5), (4, 3, 3, 3),
              decl=("N, C, H, W", "O, C, KH, KW", "O"), padding=1)
    conv_case("conv2d_named_groups_stride", 12, c2, (1, 4, 7, 7), (6, 2, 3, 3),
              decl=("N, C, H, W", "O, CG, 3, 3", "O"), groups=2, stride=2)
    c1 = "conv1d"
    conv_case("conv1d_basic", 20, c1, (2, 3, 10), (4, 3, 3))
    conv_case("conv1d_stride_padding", 21, c1, (1, 2, 9), (3, 2, 4), stride=2, padding=1)
    conv_case("conv1d_dilation_groups", 22, c1, (1, 4, 11), (4, 2, 3), bias=False,
              dilation=2, groups=2)
    conv_case("conv1d_size_one", 23, c1, (1, 1, 1), (1, 1, 1))
    conv_case("conv1d_named", 24, c1, (3, 2, 8), (5, 2, 3), decl=("N, C, L", "O, C, K", "O"),
              padding=[2], stride=[3])
    ct = "conv_transpose2d"
    conv_case("conv_transpose2d_basic", 30, ct, (1, 2, 3, 3), (2, 3, 3, 3))
    conv_case("conv_transpose2d_stride2_output_padding", 31, ct, (1, 2, 3, 4), (2, 3, 3, 3),
              stride=2, padding=1, output_padding=1)
    conv_case("conv_transpose2d_groups_dilation", 32, ct, (2, 4, 3, 3), (4, 1, 2, 3),
              bias=False, stride=[2, 3], padding=[0, 1], output_padding=[1, 0],
              dilation=[1, 2], groups=2)
    conv_case("conv_transpose2d_output_padding_below_dilation", 33, ct, (1, 1, 2, 2),
              (1, 2, 2, 2), dilation=3, output_padding=2)
    conv_case("conv_transpose2d_size_one", 34, ct, (1, 3, 1, 1), (3, 2, 1, 1))
    conv_case("conv_transpose2d_named", 35, ct, (2, 3, 4, 3), (3, 2, 3, 2),
              decl=("N, C, H, W", "C, O, KH, KW", "O"), stride=2, padding=[1, 0])


if __name__ == "__main__":
    main()
