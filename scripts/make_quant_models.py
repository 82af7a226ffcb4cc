#!/usr/bin/env python3
"""Makes tests/data/quant: small MLPs quantized to com.microsoft::MatMulNBits
by onnxruntime's MatMulNBitsQuantizer (block 32 and 128, symmetric = no zero
points, asymmetric = packed uint8 zero points), with onnxruntime's outputs,
plus malformed variants the importer must refuse naming the tensor.
CI has no onnxruntime: the files are committed. Run with a Python that has
onnx and onnxruntime (e.g. /work/venv-dynamo/bin/python):
    scripts/make_quant_models.py [OUT_DIR]   (default tests/data/quant)
Each model dir: model.onnx, input_0.npy, output_0.npy (onnxruntime's),
output_fp32.npy (the unquantized MLP's)."""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

K, HIDDEN, N, ROWS = 256, 128, 64, 3


def mlp(seed):
    """x [ROWS, K] -> MatMul(K, HIDDEN) + b1 -> Relu -> MatMul(HIDDEN, N) + b2."""
    rng = np.random.default_rng(seed)
    w1 = (rng.standard_normal((K, HIDDEN)) / np.sqrt(K)).astype(np.float32)
    b1 = (rng.standard_normal(HIDDEN) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((HIDDEN, N)) / np.sqrt(HIDDEN)).astype(np.float32)
    b2 = (rng.standard_normal(N) * 0.1).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h2"]),
        helper.make_node("MatMul", ["h2", "w2"], ["y0"], name="fc2"),
        helper.make_node("Add", ["y0", "b2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [ROWS, N])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
         numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(b2, "b2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def run(model, x):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def save(out_dir, name, model, x, y, y_fp32=None):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "input_0.npy"), x)
    if y is not None:
        np.save(os.path.join(d, "output_0.npy"), y)
    if y_fp32 is not None:
        np.save(os.path.join(d, "output_fp32.npy"), y_fp32)


def initializer(model, suffix):
    for t in model.graph.initializer:
        if t.name.endswith(suffix):
            return t
    raise KeyError(suffix)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/quant"
    x = np.random.default_rng(0).standard_normal((ROWS, K)).astype(np.float32)
    base = mlp(1)
    y_fp32 = run(base, x)
    quantized = {}
    for block in (32, 128):
        for symmetric in (True, False):
            q = MatMulNBitsQuantizer(mlp(1), bits=4, block_size=block, is_symmetric=symmetric)
            q.process()
            model = q.model.model
            ops = [n.op_type for n in model.graph.node]
            assert ops.count("MatMulNBits") == 2, ops
            name = "nbits_b%d_%s" % (block, "sym" if symmetric else "zp")
            save(out_dir, name, model, x, run(model, x), y_fp32)
            quantized[name] = model
    # Malformed: the importer must refuse each, naming the tensor / value.
    bad = onnx.ModelProto()
    bad.CopyFrom(quantized["nbits_b32_zp"])
    scales = initializer(bad, "fc1_scales") if any(
        t.name.endswith("fc1_scales") for t in bad.graph.initializer) else [
        t for t in bad.graph.initializer if "scales" in t.name][0]
    arr = numpy_helper.to_array(scales).copy()
    arr.flat[3] = 0.0
    scales.CopyFrom(numpy_helper.from_array(arr, scales.name))
    save(out_dir, "bad_zero_scale", bad, x, None)
    bad = onnx.ModelProto()
    bad.CopyFrom(quantized["nbits_b32_zp"])
    b = [t for t in bad.graph.initializer if t.data_type == TensorProto.UINT8 and
         len(t.dims) == 3][0]
    arr = numpy_helper.to_array(b)[:, :-1, :].copy()  # one block short
    b.CopyFrom(numpy_helper.from_array(arr, b.name))
    save(out_dir, "bad_short_b", bad, x, None)
    bad = onnx.ModelProto()
    bad.CopyFrom(quantized["nbits_b32_zp"])
    for node in bad.graph.node:
        if node.op_type == "MatMulNBits":
            for attr in node.attribute:
                if attr.name == "block_size":
                    attr.i = 48
            break
    save(out_dir, "bad_block_size", bad, x, None)
    for name in sorted(quantized):
        y = np.load(os.path.join(out_dir, name, "output_0.npy"))
        print(name, "max|ort - fp32| / max|fp32| = %.3g" %
              (np.abs(y - y_fp32).max() / np.abs(y_fp32).max()))


if __name__ == "__main__":
    main()
