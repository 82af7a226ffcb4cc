#!/usr/bin/env python3
"""Exports small models with torch's default (dynamo) ONNX exporter into
tests/data/dynamo/<name>/: model.onnx (weights inline, a few hundred KB at
most), input_0.npy and output_0.npy (the output computed by PyTorch in
float64 from the same float32 weights, stored as float32). The CI test
(tests/onnx-gpu/dynamo_gpu_test.c) compiles and runs each on lavapipe
against output_0.npy (max|err| <= 1e-4 max|ref|).

Needs a recent torch with onnxscript (not Debian's 1.13), e.g.
  python3 -m venv /work/venv-dynamo
  /work/venv-dynamo/bin/pip install torch onnx onnxscript onnxruntime
  /work/venv-dynamo/bin/python scripts/export_dynamo_models.py tests/data/dynamo
Exits 0 without writing anything when torch is too old for dynamo=True.

Usage: export_dynamo_models.py OUTDIR [NAME...]
"""
import math
import os
import sys

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F


class TinyCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class ResBlock(nn.Module):
    """Bias-free convolutions with a residual Add (the exporter writes Conv
    without B; kiln fuses the Add into the Conv)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.conv2 = nn.Conv2d(8, 8, 1, bias=False)

    def forward(self, x):
        return torch.relu(x + self.conv2(torch.relu(self.conv1(x))))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        return F.softmax(self.fc2(F.gelu(self.fc1(x))), dim=-1)


class GptBlock(nn.Module):
    """A GPT-2 style decoder block: pre-LayerNorm, causal self-attention
    through scaled_dot_product_attention, tanh-GELU MLP, residuals."""

    def __init__(self, width=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.out = nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class MaskedGpt(nn.Module):
    """The same block written the older way: a tril buffer and masked_fill."""

    def __init__(self, width=32, heads=4, length=8):
        super().__init__()
        self.block = GptBlock(width, heads)
        self.register_buffer("mask", torch.tril(torch.ones(length, length)).view(1, 1, length, length))

    def forward(self, x):
        blk = self.block
        b, t, c = x.shape
        q, k, v = blk.qkv(blk.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, blk.heads, c // blk.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        x = x + blk.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + blk.out(F.gelu(blk.fc(blk.ln2(x)), approximate="tanh"))


class Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 24, batch_first=True)
        self.head = nn.Linear(24, 4)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y[:, -1])


def encoder_layer():
    return nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                      batch_first=True)


def encoder_gelu():
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                       activation="gelu", batch_first=True)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


# name: (builder, input shape, opset; None: the exporter's default[, "torchscript": torch
# 2.x's legacy exporter, dynamo=False, which writes nn.MultiheadAttention's head split as
# Reshape/Unsqueeze/Transpose/Squeeze/Gather])
MODELS = {
    "tiny_cnn": (TinyCnn, (1, 3, 32, 32), None),
    "res_block": (ResBlock, (1, 8, 16, 16), None),
    "mlp": (Mlp, (4, 32), None),
    "transformer_encoder_layer": (encoder_layer, (1, 8, 32), None),
    "gpt_block": (GptBlock, (1, 8, 32), None),
    "gpt_block_masked": (MaskedGpt, (1, 8, 32), None),
    "lstm": (Lstm, (1, 10, 16), None),
    # Opset 18 (what earlier torch 2.x wrote by default): no Gelu op there.
    "gpt_block_opset18": (GptBlock, (1, 8, 32), 18),
    "tiny_cnn_opset18": (TinyCnn, (1, 3, 32, 32), 18),
    "encoder_gelu_torchscript": (encoder_gelu, (1, 8, 32), 18, "torchscript"),
}


def randomize_batch_norms(model, generator):
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            n = module.num_features
            with torch.no_grad():
                module.running_mean.copy_(torch.rand(n, generator=generator) - 0.5)
                module.running_var.copy_(torch.rand(n, generator=generator) + 0.5)
                module.weight.copy_(torch.rand(n, generator=generator) + 0.5)
                module.bias.copy_(torch.rand(n, generator=generator) - 0.5)


def export(out_dir, name):
    make, shape, opset, *exporter = MODELS[name]
    torch.manual_seed(sum(map(ord, name)))
    generator = torch.Generator().manual_seed(len(name))
    model = make().eval()
    randomize_batch_norms(model, generator)
    x = torch.randn(*shape, generator=generator)
    directory = os.path.join(out_dir, name)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "model.onnx")
    with torch.no_grad():
        extra = {"opset_version": opset} if opset else {}
        if exporter == ["torchscript"]:
            # Outside no_grad: under it nn.TransformerEncoderLayer takes its fused
            # fast path, which this exporter cannot write.
            with torch.enable_grad():
                torch.onnx.export(model, (x,), path, dynamo=False, input_names=["input"],
                                  output_names=["output"], do_constant_folding=True, **extra)
        else:
            program = torch.onnx.export(model, (x,), dynamo=True, input_names=["input"],
                                        output_names=["output"], external_data=False, **extra)
            program.save(path, external_data=False)
        reference = model.double()(x.double()).float().numpy()
    np.save(os.path.join(directory, "input_0.npy"), x.numpy())
    np.save(os.path.join(directory, "output_0.npy"), reference)
    size = os.path.getsize(path)
    print("%s: %d bytes, output %s" % (name, size, reference.shape))
    if size > 300 * 1024:
        raise SystemExit("%s is %d bytes; keep the test models under 300 KB" % (name, size))


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    major, minor = (int(v) for v in torch.__version__.split(".")[:2])
    if (major, minor) < (2, 5):
        print("torch %s has no usable dynamo exporter; nothing written" % torch.__version__)
        return
    names = sys.argv[2:] or list(MODELS)
    for name in names:
        export(sys.argv[1], name)


if __name__ == "__main__":
    main()
