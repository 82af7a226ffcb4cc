#!/usr/bin/env python3
"""Writes tests/data/qdq/<name>/: small CNN and MLP models quantized by
onnxruntime's quantize_static (QDQ format; and two QOperator-format models:
QLinearConv and QLinearMatMul chains), with an input and onnxruntime's
outputs. CI has no onnxruntime, so the files are committed; rerun with
/work/venv-dynamo/bin/python (onnxruntime 1.32, torch 2.15) to regenerate.

Per model:
  model.onnx      the QDQ model (weights int8, activations uint8 or int8,
                  per-tensor or per-channel weight scales)
  input_0.npy     float32 input
  output_0.npy    onnxruntime with graph optimizations off: the QDQ chain
                  run literally (DequantizeLinear -> fp32 op ->
                  QuantizeLinear), the definition kiln follows
  output_ort.npy  onnxruntime with its default optimizations (QLinearConv /
                  integer kernels): informational
  output_fp32.npy the fp32 model: the end-to-end quantization error
  out_scale.npy   the scale of the last QuantizeLinear (one output step)
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat,
                                      QuantType, quantize_static)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                    "tests", "data", "qdq")


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.c3 = torch.nn.Conv2d(8, 8, 1)
        self.fc = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        y = torch.relu(self.c2(y))
        y = y + self.c3(y)
        return self.fc(torch.flatten(y, 1))


class ConvOnly(torch.nn.Module):
    """QOperator format: QuantizeLinear, QLinearConv x 2, DequantizeLinear."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 4, 3, stride=2, padding=1, groups=2)

    def forward(self, x):
        return self.c2(torch.relu(self.c1(x)))


class MatMulOnly(torch.nn.Module):
    """QOperator format: QuantizeLinear, QLinearMatMul x 2, DequantizeLinear."""

    def __init__(self):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.randn(16, 24) * 0.3)
        self.w2 = torch.nn.Parameter(torch.randn(24, 8) * 0.3)

    def forward(self, x):
        return torch.matmul(torch.matmul(x, self.w1), self.w2)


class Reader(CalibrationDataReader):
    def __init__(self, name, shape, rng):
        self.items = iter([{name: rng.standard_normal(shape).astype(np.float32)}
                           for _ in range(16)])

    def get_next(self):
        return next(self.items, None)


def run(path, x, level):
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    session = ort.InferenceSession(path, options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def save_runs(out_dir, path, fp32_path, xin):
    """onnxruntime's outputs of the quantized model (optimizations off and
    on) and of the fp32 model, for input `xin`."""
    np.save(os.path.join(out_dir, "output_0.npy"),
            run(path, xin, ort.GraphOptimizationLevel.ORT_DISABLE_ALL))
    np.save(os.path.join(out_dir, "output_ort.npy"),
            run(path, xin, ort.GraphOptimizationLevel.ORT_ENABLE_ALL))
    np.save(os.path.join(out_dir, "output_fp32.npy"),
            run(fp32_path, xin, ort.GraphOptimizationLevel.ORT_DISABLE_ALL))


def last_quantize_scale(model):
    graph = model.graph
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in graph.initializer}
    scale = None
    for node in graph.node:
        if node.op_type in ("QuantizeLinear", "QLinearConv", "QLinearMatMul"):
            scale = inits[node.input[1 if node.op_type == "QuantizeLinear" else 6]]
    return np.asarray(scale, dtype=np.float32)


def make(name, module, shape, per_channel, activation_type, seed,
         quant_format=QuantFormat.QDQ):
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    module = module()  # the class: its weights come from the seed
    out_dir = os.path.join(ROOT, name)
    os.makedirs(out_dir, exist_ok=True)
    fp32_path = os.path.join(out_dir, "fp32.onnx")
    x = torch.randn(*shape)
    torch.onnx.export(module.eval(), (x,), fp32_path, input_names=["x"],
                      output_names=["y"], opset_version=17, dynamo=False)
    path = os.path.join(out_dir, "model.onnx")
    quantize_static(fp32_path, path, Reader("x", shape, rng),
                    quant_format=quant_format, per_channel=per_channel,
                    activation_type=activation_type,
                    weight_type=QuantType.QInt8)
    xin = rng.standard_normal(shape).astype(np.float32)
    np.save(os.path.join(out_dir, "input_0.npy"), xin)
    save_runs(out_dir, path, fp32_path, xin)
    np.save(os.path.join(out_dir, "out_scale.npy"),
            last_quantize_scale(onnx.load(path)).reshape(-1)[:1])
    os.remove(fp32_path)
    print(name, os.path.getsize(path), "bytes")


def main():
    make("mlp_u8_tensor", Mlp, (4, 16), False, QuantType.QUInt8, 1)
    make("mlp_s8_channel", Mlp, (4, 16), True, QuantType.QInt8, 2)
    make("cnn_u8_channel", Cnn, (1, 3, 16, 16), True, QuantType.QUInt8, 3)
    make("cnn_s8_tensor", Cnn, (1, 3, 16, 16), False, QuantType.QInt8, 4)
    make("qop_conv_u8_channel", ConvOnly, (1, 3, 12, 12), True,
         QuantType.QUInt8, 5, QuantFormat.QOperator)
    make("qop_matmul_s8_tensor", MatMulOnly, (2, 3, 16), False,
         QuantType.QInt8, 6, QuantFormat.QOperator)
    return 0


if __name__ == "__main__":
    sys.exit(main())
