"""Golden cases of the movement ops: reshape, permute, transpose, expand, pad,
slice, concat and flip. Each case calls one op on float32 inputs; the reference
is numpy (movement is exact, so float64 adds nothing but is used for uniformity).
Cases named `*_named` declare symbolic dims (`f32[B, N]`)."""

import numpy as np

from golden import dims, f32, reset_group, rng, write_case

GROUP = "movement"


def normal(seed, shape):
    return f32(rng(seed).normal(0.0, 1.0, size=shape))


def case(name, call, inputs, fn, decls=None):
    """`y = call` over `inputs` (name -> array); `decls` overrides declared dims
    (name -> "B, N"); the expected output is `fn(*inputs in float64)`."""
    decls = decls or {}
    lines = [
        f"input {k}: f32[{decls.get(k, dims(v.shape))}]" for k, v in inputs.items()
    ]
    program = "\n".join(lines) + f"\ny = {call}\noutput y\n"
    expected = fn(*(np.asarray(v, dtype=np.float64) for v in inputs.values()))
    write_case(GROUP, name, program, inputs, {"y": expected})


def np_pad(x, pads, value=0.0, mode="constant"):
    """PyTorch F.pad in numpy: pads from the last axis, negative pads crop."""
    rank = x.ndim
    widths = [(0, 0)] * rank
    for p in range(len(pads) // 2):
        widths[rank - 1 - p] = (pads[2 * p], pads[2 * p + 1])
    grow = [(max(a, 0), max(b, 0)) for a, b in widths]
    if mode == "constant":
        out = np.pad(x, grow, mode="constant", constant_values=value)
    else:
        out = np.pad(x, grow, mode={"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode])
    crop = tuple(
        slice(max(-a, 0), out.shape[k] - max(-b, 0)) for k, (a, b) in enumerate(widths)
    )
    return out[crop]


def take(x, axis, sl):
    index = [slice(None)] * x.ndim
    index[axis] = sl
    return x[tuple(index)]


def main():
    reset_group(GROUP)

    # reshape
    x = normal(1, (2, 3, 4))
    case("reshape_3d_to_2d", "reshape(x, [4, 6])", {"x": x}, lambda x: x.reshape(4, 6))
    case("reshape_flatten", "reshape(x, [-1])", {"x": x}, lambda x: x.reshape(-1))
    case("reshape_regroup", "reshape(x, shape=[3, 1, -1, 2])", {"x": x}, lambda x: x.reshape(3, 1, -1, 2))
    case("reshape_odd", "reshape(x, [7, 5])", {"x": normal(2, (5, 7))}, lambda x: x.reshape(7, 5))
    case("reshape_scalar_to_2d", "reshape(x, [1, 1])", {"x": normal(3, ())}, lambda x: x.reshape(1, 1))
    case("reshape_to_scalar", "reshape(x, [])", {"x": normal(4, (1, 1, 1))}, lambda x: x.reshape(()))
    case("reshape_split_size_1", "reshape(x, [2, 1, 3, 1])", {"x": normal(5, (6,))}, lambda x: x.reshape(2, 1, 3, 1))
    case(
        "reshape_named_merge",
        "reshape(x, [B, -1])",
        {"x": normal(6, (2, 3, 4))},
        lambda x: x.reshape(2, -1),
        {"x": "B, N, 4"},
    )
    case(
        "reshape_named_split",
        "reshape(x, [B, 2, -1, 3])",
        {"x": normal(7, (3, 12))},
        lambda x: x.reshape(3, 2, -1, 3),
        {"x": "B, 12"},
    )
    case(
        "reshape_named_interleave",
        "reshape(x, [2, N])",
        {"x": normal(8, (5, 2))},
        lambda x: x.reshape(2, 5),
        {"x": "N, 2"},
    )
    case(
        "reshape_named_product",
        "reshape(x, [B * N])",
        {"x": normal(9, (3, 5))},
        lambda x: x.reshape(15),
        {"x": "B, N"},
    )
    case(
        "reshape_named_inferred_division",
        "reshape(x, [2, -1])",
        {"x": normal(60, (4, 3))},
        lambda x: x.reshape(2, -1),
        {"x": "N, 3"},
    )
    case(
        "reshape_named_swap_sizes",
        "reshape(x, [N, -1])",
        {"x": normal(61, (2, 5))},
        lambda x: x.reshape(5, -1),
        {"x": "B, N"},
    )

    # permute / transpose
    x = normal(10, (2, 3, 4))
    case("permute_3d", "permute(x, [2, 0, 1])", {"x": x}, lambda x: x.transpose(2, 0, 1))
    case("permute_negative", "permute(x, dims=[-1, 0, -2])", {"x": normal(11, (1, 5, 3))}, lambda x: x.transpose(2, 0, 1))
    case(
        "permute_named",
        "permute(x, [1, 2, 0])",
        {"x": normal(12, (2, 3, 5))},
        lambda x: x.transpose(1, 2, 0),
        {"x": "B, C, 5"},
    )
    case("transpose_2d", "transpose(x, 0, 1)", {"x": normal(13, (3, 5))}, lambda x: x.T)
    case("transpose_attrs", "transpose(x, dim0=0, dim1=-1)", {"x": x}, lambda x: np.swapaxes(x, 0, 2))
    case("transpose_size_1", "transpose(x, -1, 1)", {"x": normal(14, (1, 4, 1))}, lambda x: np.swapaxes(x, 1, 2))
    case(
        "transpose_named",
        "transpose(x, 1, 2)",
        {"x": normal(15, (2, 3, 4))},
        lambda x: np.swapaxes(x, 1, 2),
        {"x": "B, N, M"},
    )

    # expand
    case("expand_column", "expand(x, [3, 4])", {"x": normal(16, (3, 1))}, lambda x: np.broadcast_to(x, (3, 4)))
    case("expand_new_axes", "expand(x, [2, 3, 5])", {"x": normal(17, (1,))}, lambda x: np.broadcast_to(x, (2, 3, 5)))
    case(
        "expand_keep",
        "expand(x, shape=[2, -1, 5, -1])",
        {"x": normal(18, (4, 1, 3))},
        lambda x: np.broadcast_to(x, (2, 4, 5, 3)),
    )
    case("expand_scalar", "expand(x, [2, 3])", {"x": normal(19, ())}, lambda x: np.broadcast_to(x, (2, 3)))
    case(
        "expand_named",
        "expand(x, [2, B, 3])",
        {"x": normal(20, (4, 1))},
        lambda x: np.broadcast_to(x, (2, 4, 3)),
        {"x": "B, 1"},
    )

    # pad
    case("pad_last_axis", "pad(x, [1, 2])", {"x": normal(21, (3, 4))}, lambda x: np_pad(x, [1, 2]))
    case(
        "pad_two_axes_value",
        "pad(x, [1, 1, 2, 0], value=-1.5)",
        {"x": normal(22, (2, 3, 4))},
        lambda x: np_pad(x, [1, 1, 2, 0], -1.5),
    )
    case(
        "pad_negative_crops",
        "pad(x, pads=[-1, 2, 0, -2], value=3)",
        {"x": normal(23, (5, 6))},
        lambda x: np_pad(x, [-1, 2, 0, -2], 3.0),
    )
    case("pad_size_1", "pad(x, [0, 0, 2, 1], 7)", {"x": normal(24, (1, 1))}, lambda x: np_pad(x, [0, 0, 2, 1], 7.0))
    case(
        "pad_reflect",
        'pad(x, [2, 2, 1, 1], mode="reflect")',
        {"x": normal(25, (3, 5))},
        lambda x: np_pad(x, [2, 2, 1, 1], mode="reflect"),
    )
    case(
        "pad_replicate",
        'pad(x, [3, 1], mode="replicate")',
        {"x": normal(26, (2, 4))},
        lambda x: np_pad(x, [3, 1], mode="replicate"),
    )
    case(
        "pad_circular",
        'pad(x, [2, 3], mode="circular")',
        {"x": normal(27, (2, 5))},
        lambda x: np_pad(x, [2, 3], mode="circular"),
    )
    case(
        "pad_named",
        "pad(x, [1, 1, 1, 0])",
        {"x": normal(28, (3, 4))},
        lambda x: np_pad(x, [1, 1, 1, 0]),
        {"x": "B, N"},
    )
    case(
        "pad_reflect_named",
        'pad(x, [2, 1], mode="reflect")',
        {"x": normal(29, (2, 4))},
        lambda x: np_pad(x, [2, 1], mode="reflect"),
        {"x": "B, N"},
    )

    # slice
    v = normal(30, (10,))
    case("slice_step", "slice(x, 0, 2, 8, 3)", {"x": v}, lambda x: x[2:8:3])
    case("slice_negative_start", "slice(x, axis=-1, start=-3)", {"x": normal(31, (2, 7))}, lambda x: x[:, -3:])
    case("slice_clamped", "slice(x, 1, -100, 100, 2)", {"x": normal(32, (3, 5))}, lambda x: x[:, -100:100:2])
    case("slice_negative_end", "slice(x, 0, end=-2)", {"x": normal(33, (5, 2))}, lambda x: x[:-2])
    case("slice_single", "slice(x, 1, 1, 2)", {"x": normal(34, (2, 3, 4))}, lambda x: x[:, 1:2])
    case("slice_empty", "slice(x, 1, 3, 1)", {"x": normal(35, (2, 4))}, lambda x: x[:, 3:1])
    case(
        "slice_named",
        "slice(x, 1, 1, -1)",
        {"x": normal(36, (2, 7))},
        lambda x: x[:, 1:-1],
        {"x": "B, N"},
    )
    case(
        "slice_named_step",
        "slice(x, axis=1, start=-4, step=2)",
        {"x": normal(37, (3, 9))},
        lambda x: x[:, -4::2],
        {"x": "B, N"},
    )
    case(
        "slice_named_clamped",
        "slice(x, 0, 1, 100, 3)",
        {"x": normal(38, (8, 2))},
        lambda x: x[1:100:3],
        {"x": "N, 2"},
    )

    # concat
    a, b = normal(40, (2, 3)), normal(41, (2, 5))
    case("concat_axis_1", "concat(a, b, axis=1)", {"a": a, "b": b}, lambda a, b: np.concatenate([a, b], 1))
    case(
        "concat_three",
        "concat(a, b, c)",
        {"a": normal(42, (1, 3)), "b": normal(43, (2, 3)), "c": normal(44, (4, 3))},
        lambda a, b, c: np.concatenate([a, b, c], 0),
    )
    case(
        "concat_negative_axis",
        "concat(a, b, axis=-2)",
        {"a": normal(45, (2, 1, 3)), "b": normal(46, (2, 2, 3))},
        lambda a, b: np.concatenate([a, b], -2),
    )
    case("concat_list", "concat([a, b], axis=-1)", {"a": a, "b": b}, lambda a, b: np.concatenate([a, b], -1))
    case("concat_one", "concat(a)", {"a": normal(47, (3,))}, lambda a: a.copy())
    case(
        "concat_named",
        "concat(a, b, a, axis=1)",
        {"a": normal(48, (2, 3)), "b": normal(49, (2, 4))},
        lambda a, b: np.concatenate([a, b, a], 1),
        {"a": "B, N", "b": "B, M"},
    )

    # flip
    case("flip_rows", "flip(x, 0)", {"x": normal(50, (3, 4))}, lambda x: np.flip(x, 0))
    case("flip_two_axes", "flip(x, [0, -1])", {"x": normal(51, (2, 3, 5))}, lambda x: np.flip(x, (0, 2)))
    case("flip_attr", "flip(x, axis=-2)", {"x": normal(52, (1, 3, 1))}, lambda x: np.flip(x, 1))
    case(
        "flip_named",
        "flip(x, 1)",
        {"x": normal(53, (2, 5))},
        lambda x: np.flip(x, 1),
        {"x": "B, N"},
    )


if __name__ == "__main__":
    main()
