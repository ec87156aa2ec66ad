"""Golden cases of the indexing ops: gather, index_select, cumsum, one_hot, tril
and triu. Index tensors are int32; the reference is numpy in float64 from the
float32 inputs. Cases named `*_named` declare symbolic dims (`f32[B, N]`)."""

import numpy as np

from golden import dims, f32, reset_group, rng, write_case

GROUP = "indexing"


def normal(seed, shape):
    return f32(rng(seed).normal(0.0, 1.0, size=shape))


def ints(seed, shape, lo, hi):
    return np.asarray(rng(seed).integers(lo, hi, size=shape), dtype=np.int32)


def case(name, call, inputs, fn, decls=None):
    """`y = call` over `inputs` (name -> array, float32 or int32); `decls`
    overrides declared dims; the expected output is `fn(*inputs)` with float
    inputs widened to float64."""
    decls = decls or {}
    lines = []
    for k, v in inputs.items():
        kind = "i32" if v.dtype == np.int32 else "f32"
        lines.append(f"input {k}: {kind}[{decls.get(k, dims(v.shape))}]")
    program = "\n".join(lines) + f"\ny = {call}\noutput y\n"
    args = [v.astype(np.float64) if v.dtype == np.float32 else v for v in inputs.values()]
    write_case(GROUP, name, program, inputs, {"y": np.asarray(fn(*args), dtype=np.float64)})


def one_hot(index, classes):
    """Rows of zeros for an index outside [0, classes), as the op documents."""
    out = np.zeros(index.shape + (classes,))
    for pos in np.ndindex(index.shape):
        if 0 <= index[pos] < classes:
            out[pos + (index[pos],)] = 1.0
    return out


def main():
    reset_group(GROUP)

    # gather
    case(
        "gather_rows",
        "gather(x, index, 1)",
        {"x": normal(1, (3, 4)), "index": ints(2, (3, 4), 0, 4)},
        lambda x, i: np.take_along_axis(x, i, 1),
    )
    case(
        "gather_smaller_index",
        "gather(x, index, axis=0)",
        {"x": normal(3, (4, 5)), "index": ints(4, (2, 3), 0, 4)},
        lambda x, i: np.take_along_axis(x[:, :3], i, 0),
    )
    case(
        "gather_negative_axis",
        "gather(x, index, -1)",
        {"x": normal(5, (2, 3, 5)), "index": ints(6, (2, 3, 7), 0, 5)},
        lambda x, i: np.take_along_axis(x, i, -1),
    )
    case(
        "gather_size_1",
        "gather(x, index, axis=-2)",
        {"x": normal(7, (1, 3, 1)), "index": ints(8, (1, 5, 1), 0, 3)},
        lambda x, i: np.take_along_axis(x, i, 1),
    )
    case(
        "gather_named",
        "gather(x, index, 1)",
        {"x": normal(9, (3, 6)), "index": ints(10, (3, 2), 0, 6)},
        lambda x, i: np.take_along_axis(x, i, 1),
        {"x": "B, N", "index": "B, K"},
    )

    # index_select
    case(
        "index_select_rows",
        "index_select(x, index, 0)",
        {"x": normal(11, (5, 3)), "index": np.array([4, 0, 0, 2], dtype=np.int32)},
        lambda x, i: x[i],
    )
    case(
        "index_select_last_axis",
        "index_select(x, index, axis=-1)",
        {"x": normal(12, (2, 3, 4)), "index": np.array([3, 1], dtype=np.int32)},
        lambda x, i: x[..., i],
    )
    case(
        "index_select_single",
        "index_select(x, index, 1)",
        {"x": normal(13, (2, 7)), "index": np.array([6], dtype=np.int32)},
        lambda x, i: x[:, i],
    )
    case(
        "index_select_named",
        "index_select(x, index, 1)",
        {"x": normal(14, (3, 5)), "index": np.array([1, 4, 1], dtype=np.int32)},
        lambda x, i: x[:, i],
        {"x": "B, N", "index": "K"},
    )

    # cumsum
    case("cumsum_vector", "cumsum(x, 0)", {"x": normal(15, (7,))}, lambda x: np.cumsum(x, 0))
    case("cumsum_rows", "cumsum(x, axis=1)", {"x": normal(16, (3, 4))}, lambda x: np.cumsum(x, 1))
    case("cumsum_middle_axis", "cumsum(x, -2)", {"x": normal(17, (2, 5, 3))}, lambda x: np.cumsum(x, 1))
    case("cumsum_size_1", "cumsum(x, 0)", {"x": normal(18, (1, 3))}, lambda x: np.cumsum(x, 0))
    case(
        "cumsum_named",
        "cumsum(x, 1)",
        {"x": normal(19, (2, 9))},
        lambda x: np.cumsum(x, 1),
        {"x": "B, N"},
    )

    # one_hot
    case(
        "one_hot_vector",
        "one_hot(index, 4)",
        {"index": np.array([0, 3, 1, 1, 2], dtype=np.int32)},
        lambda i: one_hot(i, 4),
    )
    case(
        "one_hot_matrix",
        "one_hot(index, num_classes=6)",
        {"index": ints(20, (2, 3), 0, 6)},
        lambda i: one_hot(i, 6),
    )
    case(
        "one_hot_scalar",
        "one_hot(index, 3)",
        {"index": np.array(2, dtype=np.int32)},
        lambda i: one_hot(i, 3),
    )
    case(
        "one_hot_out_of_range",
        "one_hot(index, 3)",
        {"index": np.array([-1, 3, 0, 7], dtype=np.int32)},
        lambda i: one_hot(i, 3),
    )
    case(
        "one_hot_named",
        "one_hot(index, 5)",
        {"index": ints(21, (6,), 0, 5)},
        lambda i: one_hot(i, 5),
        {"index": "N"},
    )

    # tril / triu
    case("tril_square", "tril(x)", {"x": normal(22, (4, 4))}, lambda x: np.tril(x))
    case("triu_square", "triu(x)", {"x": normal(23, (4, 4))}, lambda x: np.triu(x))
    case("tril_wide_diagonal", "tril(x, diagonal=1)", {"x": normal(24, (3, 5))}, lambda x: np.tril(x, 1))
    case("triu_batched_negative", "triu(x, -1)", {"x": normal(25, (2, 4, 3))}, lambda x: np.triu(x, -1))
    case("tril_tall_positional", "tril(x, 2)", {"x": normal(26, (5, 2))}, lambda x: np.tril(x, 2))
    case("triu_tall_positive", "triu(x, diagonal=1)", {"x": normal(27, (5, 3))}, lambda x: np.triu(x, 1))
    case(
        "tril_named",
        "tril(x, -1)",
        {"x": normal(28, (2, 3, 3))},
        lambda x: np.tril(x, -1),
        {"x": "B, N, N"},
    )
    case(
        "triu_named",
        "triu(x)",
        {"x": normal(29, (4, 5))},
        lambda x: np.triu(x),
        {"x": "M, N"},
    )


if __name__ == "__main__":
    main()
