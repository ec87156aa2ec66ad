#!/usr/bin/env python3
"""Writes the ONNX backend node tests named in cases.txt to tests/onnx/node/, in the
classic layout: node/<test>/model.onnx and node/<test>/test_data_set_0/{input,output}_<k>.pb.

Since onnx 1.23 (onnx/onnx#7959) the wheel no longer ships onnx/backend/test/data/node;
the cases are built in memory by onnx.backend.test.loader.load_model_tests(kind="node").
Their data are deterministic (each case seeds numpy with 0), so the pinned version below
writes byte-identical files: rerunning this script must leave `git status` clean.

usage (from the repository root; the build and CI never run it):
    python3 -m venv /tmp/onnx-venv && /tmp/onnx-venv/bin/pip install onnx==1.23.2
    /tmp/onnx-venv/bin/python tests/onnx/gen_node_tests.py [--all OUT]

`--all OUT` writes every node test (1,884) to OUT instead, for counting what the
importer would pass beyond the committed set.
"""
import os
import shutil
import sys

import onnx
from onnx import numpy_helper
from onnx.backend.test.loader import load_model_tests

PINNED = "1.23.2"
HERE = os.path.dirname(os.path.abspath(__file__))


def wanted_names():
    with open(os.path.join(HERE, "cases.txt")) as f:
        return {l.strip() for l in f if l.strip() and not l.startswith("#")}


def serialize(value, info):
    """One input or output: a TensorProto (all the committed cases use), else the
    SequenceProto / OptionalProto / MapProto onnx writes for it."""
    t = info.type
    if t.HasField("sequence_type"):
        return numpy_helper.from_list(value, info.name).SerializeToString()
    if t.HasField("optional_type"):
        return numpy_helper.from_optional(value, info.name).SerializeToString()
    if t.HasField("map_type"):
        return numpy_helper.from_dict(value, info.name).SerializeToString()
    if isinstance(value, onnx.TensorProto):
        return value.SerializeToString()
    return numpy_helper.from_array(value, info.name).SerializeToString()


def write_case(case, out):
    d = os.path.join(out, case.name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets):
        ds = os.path.join(d, f"test_data_set_{i}")
        os.makedirs(ds, exist_ok=True)
        for kind, values, infos in (("input", inputs, graph.input), ("output", outputs, graph.output)):
            for k, v in enumerate(values):
                with open(os.path.join(ds, f"{kind}_{k}.pb"), "wb") as f:
                    f.write(serialize(v, infos[k]))


def main():
    if onnx.__version__ != PINNED:
        raise SystemExit(f"onnx {onnx.__version__} is installed; the cases are pinned to {PINNED}")
    if len(sys.argv) == 3 and sys.argv[1] == "--all":
        out, wanted = sys.argv[2], None
    elif len(sys.argv) == 1:
        out, wanted = os.path.join(HERE, "node"), wanted_names()
        if os.path.isdir(out):
            shutil.rmtree(out)
    else:
        raise SystemExit(__doc__)
    os.makedirs(out, exist_ok=True)
    written = set()
    for case in load_model_tests(kind="node"):
        if wanted is None or case.name in wanted:
            write_case(case, out)
            written.add(case.name)
    if wanted is not None:
        missing = sorted(wanted - written)
        if missing:
            raise SystemExit(f"not in onnx {PINNED}: {', '.join(missing)}")
        site = os.path.dirname(onnx.__file__)
        lic = os.path.join(site, "..", f"onnx-{PINNED}.dist-info", "licenses", "LICENSE")
        shutil.copyfile(lic, os.path.join(out, "LICENSE"))
    print(f"{len(written)} node tests written to {out} (onnx {onnx.__version__})")


if __name__ == "__main__":
    main()
