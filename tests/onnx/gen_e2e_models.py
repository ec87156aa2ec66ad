#!/usr/bin/env python3
"""Writes the end-to-end ONNX models to tests/onnx/e2e/, each with onnxruntime's
outputs as the expected values, in the classic layout of the node tests:
e2e/<name>/model.onnx and e2e/<name>/test_data_set_0/{input,output}_<k>.pb.

  transformer_block  opset 20: a pre-LN transformer block (LayerNormalization, MatMul,
                     Split, Reshape with 0-copied sizes, Transpose, causal Softmax,
                     Gelu); symbolic batch "B"
  rnn_scan           opset 16: an Elman RNN written with Scan (carried h, stacked ys)
  rnn_loop           opset 16: the same RNN written with Loop: trip count an
                     initializer, x_t = Gather(xs, i) with the iteration counter, ys a
                     scan output
  resnet_blocks      opset 17: a small ResNet (Conv + BatchNormalization + Relu stem,
                     two basic blocks, one strided block with a 1x1 projection,
                     GlobalAveragePool, Flatten, Gemm); symbolic batch "N"
  mlp_classifier     opset 13: an MLP classifier on 8x8 images (Flatten, Gemm,
                     Relu, Dropout at inference, Softmax); symbolic batch "N"
  silero_vad         opset 18: silero_vad_op18_ifless.onnx from the PyPI package
                     silero-vad 6.2.3 (MIT, its LICENSE beside the model): one If on
                     sr == 16000 whose branches are the 16 kHz and 8 kHz networks

The weights and inputs are seeded, so a rerun writes the same files (up to
onnxruntime's own rounding). The Silero model is stored with the exporter's per-node
metadata (`metadata_props`: PyTorch FX node names, 0.64 MB of text no runtime reads)
and doc strings removed; the graph, its weights and onnxruntime's outputs are unchanged
(checked below: both files give bit-identical outputs).

usage (from the repository root; the build and CI never run it):
    python3 -m venv /tmp/e2e-venv
    /tmp/e2e-venv/bin/pip install onnx==1.23.2 'onnxruntime==1.32.*' numpy
    /tmp/e2e-venv/bin/pip install --no-deps silero-vad==6.2.3   # the model file only
    /tmp/e2e-venv/bin/python tests/onnx/gen_e2e_models.py
"""
import os
import shutil
import sys
from importlib import metadata

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

ONNX_PINNED = "1.23.2"
ORT_PINNED = "1.32."
SILERO_PINNED = "6.2.3"
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "e2e")

SILERO_README = """\
# Silero VAD

`model.onnx` is `silero_vad/data/silero_vad_op18_ifless.onnx` from the PyPI package
silero-vad 6.2.3 by the Silero Team, under the MIT licence in `LICENSE` beside it.
`tests/onnx/gen_e2e_models.py` wrote it with the exporter's per-node metadata and doc
strings removed (the graph and its weights are unchanged; onnxruntime gives the same
outputs for both files) and `test_data_set_*` with onnxruntime's outputs.
"""

rng = np.random.default_rng(0)  # reseeded per model by `seeded`
vi = h.make_tensor_value_info


def w(name, *shape, scale=0.1):
    return nh.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def c(name, a):
    return nh.from_array(np.asarray(a), name)


def transformer_block():
    D, H, F, S = 32, 4, 64, 8
    n = [h.make_node("LayerNormalization", ["x", "g1", "b1n"], ["h1"], axis=-1, epsilon=1e-5),
         h.make_node("MatMul", ["h1", "wqkv"], ["qkv"]),
         h.make_node("Split", ["qkv", "split3"], ["q", "k", "v"], axis=-1)]
    for v in "qkv":
        n += [h.make_node("Reshape", [v, "heads"], [v + "4"]),
              h.make_node("Transpose", [v + "4"], [v + "t"], perm=[0, 2, 1, 3])]
    n += [h.make_node("Transpose", ["kt"], ["ktt"], perm=[0, 1, 3, 2]),
          h.make_node("MatMul", ["qt", "ktt"], ["s0"]),
          h.make_node("Mul", ["s0", "scale"], ["s1"]),
          h.make_node("Add", ["s1", "mask"], ["s2"]),
          h.make_node("Softmax", ["s2"], ["p"], axis=-1),
          h.make_node("MatMul", ["p", "vt"], ["o4"]),
          h.make_node("Transpose", ["o4"], ["o4t"], perm=[0, 2, 1, 3]),
          h.make_node("Reshape", ["o4t", "model"], ["o"]),
          h.make_node("MatMul", ["o", "wo"], ["a"]),
          h.make_node("Add", ["x", "a"], ["r1"]),
          h.make_node("LayerNormalization", ["r1", "g2", "b2n"], ["h2"], axis=-1, epsilon=1e-5),
          h.make_node("MatMul", ["h2", "w1"], ["f1"]),
          h.make_node("Add", ["f1", "b1"], ["f2"]),
          h.make_node("Gelu", ["f2"], ["f3"]),
          h.make_node("MatMul", ["f3", "w2"], ["f4"]),
          h.make_node("Add", ["f4", "b2"], ["f5"]),
          h.make_node("Add", ["r1", "f5"], ["y"])]
    inits = [nh.from_array((1 + 0.1 * rng.standard_normal(D)).astype(np.float32), "g1"),
             w("b1n", D), nh.from_array((1 + 0.1 * rng.standard_normal(D)).astype(np.float32), "g2"),
             w("b2n", D), w("wqkv", D, 3 * D), w("wo", D, D), w("w1", D, F), w("b1", F),
             w("w2", F, D), w("b2", D),
             c("split3", np.array([D, D, D], np.int64)),
             c("heads", np.array([0, 0, H, D // H], np.int64)),
             c("model", np.array([0, 0, D], np.int64)),
             c("scale", np.float32(1 / np.sqrt(D // H))),
             c("mask", np.triu(np.full((S, S), -1e9, np.float32), 1))]
    g = h.make_graph(n, "transformer_block", [vi("x", T.FLOAT, ["B", S, D])],
                     [vi("y", T.FLOAT, ["B", S, D])], inits)
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 20)])
    # Two batch sizes: one compiled model runs both.
    return model, [{"x": rng.standard_normal((b, S, D)).astype(np.float32)} for b in (2, 3)]


def rnn(kind, steps=6):
    """The Elman RNN over `steps` steps (6 for the tests; benches/onnx_vs_ort.py
    writes longer ones)."""
    Dh, Dx, L = 16, 8, steps
    core = [h.make_node("MatMul", ["h_in", "Wh"], ["a"]),
            h.make_node("MatMul", ["x_t", "Wx"], ["b"]),
            h.make_node("Add", ["a", "b"], ["c"]),
            h.make_node("Add", ["c", "bias"], ["d"]),
            h.make_node("Tanh", ["d"], ["h_out"]),
            h.make_node("Identity", ["h_out"], ["y_t"])]
    inits = [w("Wh", Dh, Dh, scale=0.3), w("Wx", Dx, Dh, scale=0.3), w("bias", Dh)]
    if kind == "scan":
        body = h.make_graph(core, "body", [vi("h_in", T.FLOAT, [1, Dh]), vi("x_t", T.FLOAT, [1, Dx])],
                            [vi("h_out", T.FLOAT, [1, Dh]), vi("y_t", T.FLOAT, [1, Dh])])
        node = h.make_node("Scan", ["h0", "xs"], ["hT", "ys"], num_scan_inputs=1, body=body)
    else:
        body = h.make_graph(
            [h.make_node("Gather", ["xs", "i"], ["x_t"], axis=0)] + core
            + [h.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
            [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("h_in", T.FLOAT, [1, Dh])],
            [vi("cond_out", T.BOOL, []), vi("h_out", T.FLOAT, [1, Dh]), vi("y_t", T.FLOAT, [1, Dh])])
        node = h.make_node("Loop", ["M", "", "h0"], ["hT", "ys"], body=body)
        inits.append(c("M", np.array(L, np.int64)))
    g = h.make_graph([node], f"rnn_{kind}",
                     [vi("h0", T.FLOAT, [1, Dh]), vi("xs", T.FLOAT, [L, 1, Dx])],
                     [vi("hT", T.FLOAT, [1, Dh]), vi("ys", T.FLOAT, [L, 1, Dh])], inits)
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 16)])
    feeds = {"h0": (rng.standard_normal((1, Dh)) * 0.5).astype(np.float32),
             "xs": rng.standard_normal((L, 1, Dx)).astype(np.float32)}
    return model, [feeds]


class Net:
    """Collects nodes and initializers under unique names."""

    def __init__(self):
        self.nodes, self.inits, self.k = [], [], 0

    def fresh(self, stem):
        self.k += 1
        return f"{stem}_{self.k}"

    def op(self, op, inputs, **attrs):
        out = self.fresh(op.lower())
        self.nodes.append(h.make_node(op, inputs, [out], **attrs))
        return out

    def init(self, stem, array):
        name = self.fresh(stem)
        self.inits.append(nh.from_array(array.astype(np.float32), name))
        return name

    def conv_bn(self, x, cin, cout, k, stride=1, relu=True):
        """Conv (no bias) + BatchNormalization with seeded running statistics."""
        wt = self.init("conv_w", rng.standard_normal((cout, cin, k, k)) * np.sqrt(2 / (cin * k * k)))
        y = self.op("Conv", [x, wt], kernel_shape=[k, k], strides=[stride, stride],
                    pads=[k // 2] * 4)
        bn = [self.init("bn_scale", 1 + 0.1 * rng.standard_normal(cout)),
              self.init("bn_bias", 0.1 * rng.standard_normal(cout)),
              self.init("bn_mean", 0.1 * rng.standard_normal(cout)),
              self.init("bn_var", 1 + 0.2 * rng.random(cout))]
        y = self.op("BatchNormalization", [y] + bn, epsilon=1e-5)
        return self.op("Relu", [y]) if relu else y


def resnet_blocks():
    net = Net()
    x = net.conv_bn("image", 3, 8, 3)

    def block(x, cin, cout, stride):
        y = net.conv_bn(x, cin, cout, 3, stride)
        y = net.conv_bn(y, cout, cout, 3, 1, relu=False)
        skip = x if (cin, stride) == (cout, 1) else net.conv_bn(x, cin, cout, 1, stride, relu=False)
        return net.op("Relu", [net.op("Add", [y, skip])])

    x = block(x, 8, 8, 1)
    x = block(x, 8, 8, 1)
    x = block(x, 8, 16, 2)
    x = net.op("GlobalAveragePool", [x])
    x = net.op("Flatten", [x], axis=1)
    fc_w = net.init("fc_w", rng.standard_normal((10, 16)) * 0.2)
    fc_b = net.init("fc_b", rng.standard_normal(10) * 0.1)
    net.nodes.append(h.make_node("Gemm", [x, fc_w, fc_b], ["logits"], transB=1))
    g = h.make_graph(net.nodes, "resnet_blocks", [vi("image", T.FLOAT, ["N", 3, 16, 16])],
                     [vi("logits", T.FLOAT, ["N", 10])], net.inits)
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    return model, [{"image": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)}]


def mlp_classifier():
    net = Net()
    x = net.op("Flatten", ["pixels"], axis=1)
    for cin, cout in ((64, 128), (128, 64)):
        wt = net.init("w", rng.standard_normal((cin, cout)) * np.sqrt(2 / cin))
        b = net.init("b", rng.standard_normal(cout) * 0.1)
        x = net.op("Relu", [net.op("Gemm", [x, wt, b])])
        x = net.op("Dropout", [x])
    wt = net.init("w", rng.standard_normal((64, 10)) * 0.2)
    b = net.init("b", rng.standard_normal(10) * 0.1)
    x = net.op("Gemm", [x, wt, b])
    net.nodes.append(h.make_node("Softmax", [x], ["probs"], axis=-1))
    g = h.make_graph(net.nodes, "mlp_classifier", [vi("pixels", T.FLOAT, ["N", 1, 8, 8])],
                     [vi("probs", T.FLOAT, ["N", 10])], net.inits)
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    return model, [{"pixels": rng.random((b, 1, 8, 8)).astype(np.float32)} for b in (4, 1)]


def silero_file(suffix):
    """A file of the installed silero-vad distribution (its package is not imported:
    that needs torch)."""
    dist = metadata.distribution("silero-vad")
    found = [f for f in dist.files if str(f).endswith(suffix)]
    if len(found) != 1:
        raise SystemExit(f"silero-vad {dist.version}: no single file ending in {suffix}")
    return str(dist.locate_file(found[0]))


def silero_vad():
    with open(silero_file("data/silero_vad_op18_ifless.onnx"), "rb") as f:
        original = onnx.load_from_string(f.read())
    model = onnx.ModelProto()
    model.CopyFrom(original)
    strip_metadata(model.graph)
    # The chunks the package feeds (32 ms: 512 samples at 16 kHz, 256 at 8 kHz, both
    # branches of the If): a tone in noise, with a non-zero LSTM state as in the middle
    # of a stream.
    sets = []
    for sr, n in ((16000, 512), (8000, 256)):
        t = np.arange(n) / sr
        audio = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.05 * rng.standard_normal(n)
        feeds = {"input": audio[None].astype(np.float32), "sr": np.array(sr, np.int64),
                 "state": (0.1 * rng.standard_normal((2, 1, 128))).astype(np.float32)}
        a = session(original).run(None, feeds)
        b = session(model).run(None, feeds)
        assert all(np.array_equal(x, y) for x, y in zip(a, b)), "stripping changed the outputs"
        sets.append(feeds)
    return model, sets


def strip_metadata(g):
    """Removes the exporter's per-node metadata and doc strings, in subgraphs too."""
    g.doc_string = ""
    for n in g.node:
        del n.metadata_props[:]
        n.doc_string = ""
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                strip_metadata(a.g)
    for v in list(g.value_info) + list(g.input) + list(g.output):
        del v.metadata_props[:]


def session(model):
    options = ort.SessionOptions()
    options.log_severity_level = 3  # not the warnings about Silero's unused initializers
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def write(name, model, data_sets, extra=()):
    """The model, `extra` files beside it, and one test_data_set_K per feed dict with
    onnxruntime's outputs."""
    onnx.checker.check_model(model, full_check=True)
    d = os.path.join(OUT, name)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for path in extra:
        shutil.copy(path, d)
    run = session(model)
    shapes = []
    for s, feeds in enumerate(data_sets):
        ds = os.path.join(d, f"test_data_set_{s}")
        os.makedirs(ds)
        outs = run.run(None, feeds)
        for k, i in enumerate(model.graph.input):
            with open(os.path.join(ds, f"input_{k}.pb"), "wb") as f:
                f.write(nh.from_array(feeds[i.name], i.name).SerializeToString())
        for k, (o, v) in enumerate(zip(model.graph.output, outs)):
            with open(os.path.join(ds, f"output_{k}.pb"), "wb") as f:
                f.write(nh.from_array(v, o.name).SerializeToString())
        shapes.append([v.shape for v in outs])
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)
    print(f"{name}: outputs {shapes}, {size / 1e3:.1f} kB")


def seeded(seed, build):
    """`build()` with the generator seeded, so each model's data depends on its seed only."""
    global rng
    rng = np.random.default_rng(seed)
    return build()


def main():
    versions = {"onnx": onnx.__version__, "onnxruntime": ort.__version__}
    if onnx.__version__ != ONNX_PINNED or not ort.__version__.startswith(ORT_PINNED):
        raise SystemExit(f"installed {versions}; pinned onnx {ONNX_PINNED}, onnxruntime {ORT_PINNED}*")
    silero_dist = metadata.version("silero-vad")
    if silero_dist != SILERO_PINNED:
        raise SystemExit(f"silero-vad {silero_dist} is installed; pinned {SILERO_PINNED}")
    if len(sys.argv) != 1:
        raise SystemExit(__doc__)
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    write("transformer_block", *seeded(1, transformer_block))
    write("rnn_scan", *seeded(2, lambda: rnn("scan")))
    write("rnn_loop", *seeded(2, lambda: rnn("loop")))
    write("resnet_blocks", *seeded(3, resnet_blocks))
    write("mlp_classifier", *seeded(4, mlp_classifier))
    write("silero_vad", *seeded(5, silero_vad), extra=[silero_file("LICENSE")])
    with open(os.path.join(OUT, "silero_vad", "README.md"), "w") as f:
        f.write(SILERO_README)
    print(f"written with {versions}, silero-vad {silero_dist}")


if __name__ == "__main__":
    main()
