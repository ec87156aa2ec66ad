"""Writes the .npy fixtures of tests/npy.rs with numpy's own np.save.

Run from this directory: python3 make_fixtures.py
The files are committed so that the Rust tests need no Python; the values are
simple formulas that tests/npy.rs spells out again.
"""

import numpy as np

# Accepted: the three dtypes uop tensors have, several ranks, an empty array.
np.save("f32_2x3.npy", (np.arange(6, dtype="<f4") * 0.1 - 0.25).reshape(2, 3))
np.save("f64_scalar.npy", np.array(np.pi, dtype="<f8"))
np.save("i32_2x3x4.npy", (np.arange(24, dtype="<i4") - 5).reshape(2, 3, 4))
np.save("f64_1d.npy", np.array([1.5, -0.0, np.inf, -np.inf, 1e-300], dtype="<f8"))
np.save("f32_0x3.npy", np.zeros((0, 3), dtype="<f4"))

# Refused, each for one reason.
np.save("i64.npy", np.arange(3, dtype="<i8"))
np.save("f16.npy", np.arange(3, dtype="<f2"))
np.save("bool.npy", np.array([True, False]))
np.save("big_endian_f4.npy", np.arange(3, dtype=">f4"))
np.save("fortran_2x3.npy", np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)))
np.save("structured.npy", np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))
