"""Writes the small ONNX model the README's "Run an ONNX model" section and the
command-line tests use: examples/onnx/mlp.onnx, a two-layer perceptron (outputs
its class probabilities and logits) with a symbolic batch and the names an exporter writes (`input.1`, `onnx::MatMul_12`), and
examples/onnx/mlp_input.npy, a batch of two rows for it.

    python3 -m venv /tmp/onnx-venv && /tmp/onnx-venv/bin/pip install onnx==1.23.2
    /tmp/onnx-venv/bin/python examples/onnx/gen_models.py

numpy is seeded, so the files are the same on every run.
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = HERE


def mlp():
    rng = np.random.default_rng(36)
    w1 = rng.uniform(-1, 1, (4, 8)).astype(np.float32)
    b1 = rng.uniform(-0.5, 0.5, (8,)).astype(np.float32)
    w2 = rng.uniform(-1, 1, (8, 3)).astype(np.float32)
    b2 = rng.uniform(-0.5, 0.5, (3,)).astype(np.float32)
    inits = [
        numpy_helper.from_array(w1, "onnx::MatMul_12"),
        numpy_helper.from_array(b1, "fc1.bias"),
        numpy_helper.from_array(w2, "onnx::MatMul_13"),
        numpy_helper.from_array(b2, "fc2.bias"),
    ]
    nodes = [
        helper.make_node("MatMul", ["input.1", "onnx::MatMul_12"], ["/fc1/MatMul_output_0"], name="/fc1/MatMul"),
        helper.make_node("Add", ["/fc1/MatMul_output_0", "fc1.bias"], ["/fc1/Add_output_0"], name="/fc1/Add"),
        helper.make_node("Relu", ["/fc1/Add_output_0"], ["/relu/Relu_output_0"], name="/relu/Relu"),
        helper.make_node("MatMul", ["/relu/Relu_output_0", "onnx::MatMul_13"], ["/fc2/MatMul_output_0"], name="/fc2/MatMul"),
        helper.make_node("Add", ["/fc2/MatMul_output_0", "fc2.bias"], ["logits"], name="/fc2/Add"),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="/Softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, ["batch_size", 4])],
        [
            helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch_size", 3]),
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch_size", 3]),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="uop tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(OUT, "mlp.onnx"))
    x = rng.uniform(-1, 1, (2, 4)).astype(np.float32)
    np.save(os.path.join(OUT, "mlp_input.npy"), x)
    h = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    e = np.exp(h - h.max(axis=-1, keepdims=True))
    print("mlp: probabilities", e / e.sum(axis=-1, keepdims=True))


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    mlp()
