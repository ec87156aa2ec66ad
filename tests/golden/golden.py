"""Shared helpers of the golden-data generators.

Each generator (gen_<group>.py) builds small cases with numpy from a fixed seed
and writes them with `write_case`. A case is a directory

    cases/<group>/<case>/program.uop       the program, calling the op by name
    cases/<group>/<case>/inputs/<name>.npy one file per program input
    cases/<group>/<case>/expected/<name>.npy one file per program output
    cases/<group>/<case>/params.txt        optional: `name=value` lines for $params
    cases/<group>/<case>/tolerance.txt     optional: `rtol=.. atol=..` and a `# why` line

and tests/golden.rs (Rust) runs every program through the reference interpreter
and compares. Regenerate everything with `python3 tests/golden/generate.py`
(needs numpy); the test suite itself needs no Python.
"""

import os
import shutil

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")


def rng(seed):
    """The random generator of one case (fixed seeds keep regeneration stable)."""
    return np.random.default_rng(seed)


def reset_group(group):
    """Removes a group's old cases so renamed cases do not linger."""
    path = os.path.join(ROOT, group)
    if os.path.isdir(path):
        shutil.rmtree(path)


def c_order(a):
    """A row-major copy that keeps rank 0 (np.ascontiguousarray makes it 1-D)."""
    return np.array(a, order="C")


def write_case(group, name, program, inputs, expected, params=None, tol=None):
    """Writes one case. `inputs`/`expected` map names to arrays (float32 or int32;
    expected values computed in float64 are stored as float32), `params` maps
    $param names to ints, `tol` is (rtol, atol, why) when looser than the default."""
    path = os.path.join(ROOT, group, name)
    os.makedirs(os.path.join(path, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(path, "expected"), exist_ok=True)
    with open(os.path.join(path, "program.uop"), "w") as f:
        f.write(program.strip() + "\n")
    for k, v in inputs.items():
        np.save(os.path.join(path, "inputs", k + ".npy"), c_order(v))
    for k, v in expected.items():
        v = np.asarray(v)
        if v.dtype == np.float64:
            v = v.astype(np.float32)
        np.save(os.path.join(path, "expected", k + ".npy"), c_order(v))
    if params:
        with open(os.path.join(path, "params.txt"), "w") as f:
            for k, v in params.items():
                f.write(f"{k}={int(v)}\n")
    if tol:
        rtol, atol, why = tol
        with open(os.path.join(path, "tolerance.txt"), "w") as f:
            f.write(f"# {why}\nrtol={rtol} atol={atol}\n")


def f32(a):
    """float32 copy."""
    return np.asarray(a, dtype=np.float32)


def dims(shape):
    """`[2, 3]` -> "2, 3" for input declarations with literal sizes."""
    return ", ".join(str(d) for d in shape)
