"""Golden cases of the linalg group: matmul (numpy semantics) and linear (PyTorch layout)."""

import os

import numpy as np

from golden import ROOT, dims, f32, reset_group, rng, write_case

GROUP = "linalg"


def matmul_case(name, seed, a_shape, b_shape, a_decl=None, b_decl=None):
    """`y = matmul(a, b)`; declarations default to the literal shapes."""
    r = rng(seed)
    a = f32(r.standard_normal(a_shape))
    b = f32(r.standard_normal(b_shape))
    program = f"""
input a: f32[{a_decl or dims(a_shape)}]
input b: f32[{b_decl or dims(b_shape)}]
y = matmul(a, b)
output y
"""
    y = np.matmul(a.astype(np.float64), b.astype(np.float64))
    write_case(GROUP, name, program, {"a": a, "b": b}, {"y": y})
    if y.ndim == 0:
        # golden.write_case saves through np.ascontiguousarray, which turns a
        # rank-0 array into shape (1,); the result of [K] @ [K] is rank 0.
        np.save(os.path.join(ROOT, GROUP, name, "expected", "y.npy"), y.astype(np.float32))


def linear_case(name, seed, x_shape, out_features, bias="positional", decl=None):
    """`y = linear(x, w[, b])` with w [out, in]; `bias` is "positional", "attr" or None."""
    r = rng(seed)
    x = f32(r.standard_normal(x_shape))
    w = f32(r.standard_normal((out_features, x_shape[-1])))
    b = f32(r.standard_normal(out_features))
    x_decl, w_decl, b_decl = decl or (dims(x.shape), dims(w.shape), dims(b.shape))
    inputs = {"x": x, "w": w}
    lines = [f"input x: f32[{x_decl}]", f"input w: f32[{w_decl}]"]
    y = x.astype(np.float64) @ w.astype(np.float64).T
    if bias is None:
        call = "linear(x, w)"
    else:
        lines.append(f"input b: f32[{b_decl}]")
        inputs["b"] = b
        call = "linear(x, w, b)" if bias == "positional" else "linear(x, w, bias=b)"
        y = y + b.astype(np.float64)
    program = "\n".join(lines + [f"y = {call}", "output y"])
    write_case(GROUP, name, program, inputs, {"y": y})


def main():
    reset_group(GROUP)
    matmul_case("matmul_2d", 1, (3, 4), (4, 5))
    matmul_case("matmul_vector_matrix", 2, (4,), (4, 5))
    matmul_case("matmul_matrix_vector", 3, (3, 4), (4,))
    matmul_case("matmul_vector_vector", 4, (7,), (7,))
    matmul_case("matmul_batch_broadcast", 5, (2, 1, 3, 4), (5, 4, 6))
    matmul_case("matmul_batch_vector", 6, (2, 3, 4), (4,))
    matmul_case("matmul_vector_batch", 7, (4,), (2, 4, 3))
    matmul_case("matmul_size_one", 8, (1, 1), (1, 7))
    matmul_case("matmul_outer", 9, (3, 1), (1, 2))
    matmul_case("matmul_batch_size_one", 10, (1, 3, 5), (4, 5, 2))
    matmul_case("matmul_named", 11, (3, 5), (5, 2), "M, K", "K, N")
    matmul_case("matmul_named_batch", 12, (2, 3, 4), (2, 4, 5), "B, M, K", "B, K, N")
    linear_case("linear_bias", 20, (2, 3, 5), 4)
    linear_case("linear_no_bias", 21, (5,), 3, bias=None)
    linear_case("linear_bias_attribute", 22, (4, 6), 1, bias="attr")
    linear_case("linear_named", 23, (3, 5), 4, decl=("B, IN", "OUT, IN", "OUT"))


if __name__ == "__main__":
    main()
