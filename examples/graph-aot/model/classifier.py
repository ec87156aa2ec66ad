"""Writes classifier.onnx: a small two-layer classifier (Gemm, Relu, MatMul, Add,
Softmax) over a batch of any size, with fixed weights. The build script of this
crate turns it into Rust (uop-build, Source::onnx); CI never runs this script.

    /tmp/onnxvenv/bin/python examples/graph-aot/model/classifier.py
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)
w1 = rng.standard_normal((4, 8)).astype(np.float32) * 0.5
b1 = rng.standard_normal((8,)).astype(np.float32) * 0.1
w2 = rng.standard_normal((8, 3)).astype(np.float32) * 0.5
b2 = rng.standard_normal((3,)).astype(np.float32) * 0.1

nodes = [
    helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="layer1"),
    helper.make_node("Relu", ["h"], ["a"], name="relu"),
    helper.make_node("MatMul", ["a", "w2"], ["z"], name="layer2"),
    helper.make_node("Add", ["z", "b2"], ["logits"], name="bias2"),
    helper.make_node("Softmax", ["logits"], ["probs"], axis=-1, name="softmax"),
]
graph = helper.make_graph(
    nodes,
    "classifier",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
    [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 3])],
    initializer=[
        numpy_helper.from_array(w1, "w1"),
        numpy_helper.from_array(b1, "b1"),
        numpy_helper.from_array(w2, "w2"),
        numpy_helper.from_array(b2, "b2"),
    ],
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "classifier.onnx")
onnx.save(model, out)
print(out)
