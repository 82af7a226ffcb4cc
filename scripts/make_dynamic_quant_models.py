#!/usr/bin/env python3
"""Writes tests/data/qdq/dyn_<name>/: models quantized by onnxruntime's
quantize_dynamic (DynamicQuantizeLinear -> MatMulInteger / ConvInteger ->
Cast -> Mul by the scales), with an input and onnxruntime's outputs. CI has
no onnxruntime, so the files are committed; rerun with
/work/venv-dynamo/bin/python (onnxruntime 1.32, torch 2.15) to regenerate.

Per model:
  model.onnx      the dynamically quantized model (int8 or uint8 weights,
                  per tensor or per output channel; uint8 activations)
  input_0.npy     float32 input (dyn_embed_*: int64 token ids, stored as
                  float32 values)
  output_0.npy    onnxruntime with graph optimizations off (the graph's
                  ops run as written: the definition kiln follows)
  output_ort.npy  onnxruntime with its default optimizations
                  (MatMulIntegerToFloat and friends): informational
  output_fp32.npy the fp32 model: the end-to-end quantization error
"""
import os
import sys

import numpy as np
import torch
from onnxruntime.quantization import QuantType, quantize_dynamic

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_qdq_models import ROOT, Cnn, Mlp, save_runs  # noqa: E402


class Encoder(torch.nn.Module):
    """One transformer encoder layer written out (attention's own MatMuls
    stay fp32: quantize_dynamic quantizes only MatMuls with a constant
    weight)."""

    def __init__(self, d=64, heads=4, ff=128):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)
        self.n1 = torch.nn.LayerNorm(d)
        self.n2 = torch.nn.LayerNorm(d)
        self.f1 = torch.nn.Linear(d, ff)
        self.f2 = torch.nn.Linear(ff, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, -1)

        def heads(y):
            return y.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)

        q, k, v = heads(q), heads(k), heads(v)
        scores = q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5
        a = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, t, d)
        x = self.n1(x + self.out(a))
        return self.n2(x + self.f2(torch.nn.functional.gelu(self.f1(x))))


class Wide(torch.nn.Module):
    """K = 3072 with per-channel int8 weights: some columns' sums could pass
    2^24, so kiln splits their weights into radix-16 digits."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3072, 32)

    def forward(self, x):
        return self.fc(x)


class Embed(torch.nn.Module):
    """quantize_dynamic quantizes the embedding table too: a Gather of uint8
    codes feeds the next MatMulInteger with the table's zero point."""

    def __init__(self):
        super().__init__()
        self.table = torch.nn.Embedding(100, 16)
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, ids):
        return self.fc2(torch.relu(self.fc1(self.table(ids))))


def make(name, module, shape, per_channel, weight_type, seed, indices=0):
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    module = module()
    out_dir = os.path.join(ROOT, name)
    os.makedirs(out_dir, exist_ok=True)
    fp32_path = os.path.join(out_dir, "fp32.onnx")
    x = torch.randint(0, indices, shape) if indices else torch.randn(*shape)
    torch.onnx.export(module.eval(), (x,), fp32_path, input_names=["x"],
                      output_names=["y"], opset_version=17, dynamo=False)
    path = os.path.join(out_dir, "model.onnx")
    quantize_dynamic(fp32_path, path, per_channel=per_channel,
                     weight_type=weight_type)
    if indices:
        # int64 indices, stored as float32 (the tests read float32 .npy).
        xin = rng.integers(0, indices, shape).astype(np.int64)
        np.save(os.path.join(out_dir, "input_0.npy"), xin.astype(np.float32))
    else:
        xin = rng.standard_normal(shape).astype(np.float32)
        np.save(os.path.join(out_dir, "input_0.npy"), xin)
    save_runs(out_dir, path, fp32_path, xin)
    os.remove(fp32_path)
    print(name, os.path.getsize(path), "bytes")


def main():
    make("dyn_mlp_s8_tensor", Mlp, (4, 16), False, QuantType.QInt8, 11)
    make("dyn_mlp_u8_channel", Mlp, (4, 16), True, QuantType.QUInt8, 12)
    make("dyn_cnn_s8_channel", Cnn, (1, 3, 16, 16), True, QuantType.QInt8, 13)
    make("dyn_cnn_u8_tensor", Cnn, (2, 3, 16, 16), False, QuantType.QUInt8, 14)
    make("dyn_encoder_s8_tensor", Encoder, (1, 16, 64), False, QuantType.QInt8, 15)
    make("dyn_wide_s8_channel", Wide, (2, 3072), True, QuantType.QInt8, 16)
    make("dyn_embed_u8_tensor", Embed, (2, 12), False, QuantType.QUInt8, 17,
         indices=100)
    return 0


if __name__ == "__main__":
    sys.exit(main())
