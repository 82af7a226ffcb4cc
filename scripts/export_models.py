#!/usr/bin/python3
"""Exports the real-model test cases for kiln's ONNX front end.

For each model writes <out>/<name>/model.onnx, input_0.pb (float32, or
int64 token ids for the text models; input_1.pb... for further inputs) and
output_0.pb: the PyTorch reference output computed in float64 (stored as
float32 TensorProto, which kiln's reader takes). Weights are seeded random
(no downloads); batch-norm running statistics and affine parameters are
randomized so batch-norm folding mistakes show. Deterministic for a given
torch version. Run with Debian's /usr/bin/python3 (python3-torch,
python3-torchvision, python3-onnx).

Usage: export_models.py OUTDIR [--stamp FILE] [NAME...]
"""
import copy
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torchvision


def randomize_batch_norms(model, generator):
    for module in model.modules():
        if isinstance(module, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
            n = module.num_features
            with torch.no_grad():
                module.running_mean.copy_(torch.rand(n, generator=generator) - 0.5)
                module.running_var.copy_(torch.rand(n, generator=generator) * 1.5 + 0.5)
                module.weight.copy_(torch.rand(n, generator=generator) + 0.5)
                module.bias.copy_(torch.rand(n, generator=generator) - 0.5)


def calibrate_batch_norms(model, generator, shape, batches=4):
    """Sets each BatchNorm's running statistics to those of its actual input
    on random images (then random affine weights), so every layer passes the
    input's signal on. With random statistics instead, a deep net's logits
    hardly depend on its input (MobileNetV2: 3e-9 apart for an image and
    all zeros), and a check against them cannot catch an input bug."""
    norms = [m for m in model.modules()
             if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d))]
    for module in norms:
        module.reset_running_stats()
        module.momentum = None  # a plain average over the batches
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.rand(8, *shape[1:], generator=generator))
    model.eval()
    for module in norms:
        module.momentum = 0.1
        n = module.num_features
        with torch.no_grad():
            module.weight.copy_(torch.rand(n, generator=generator) + 0.5)
            module.bias.copy_((torch.rand(n, generator=generator) - 0.5) * 0.5)


def mobilenet_v2(generator):
    torch.manual_seed(1)
    model = torchvision.models.mobilenet_v2(weights=None)
    calibrate_batch_norms(model, generator, (1, 3, 224, 224))
    x = torch.rand(1, 3, 224, 224, generator=generator)
    return model, x, 13, None


def resnet18(generator):
    torch.manual_seed(2)
    model = torchvision.models.resnet18(weights=None)
    randomize_batch_norms(model, generator)
    x = torch.rand(1, 3, 224, 224, generator=generator)
    return model, x, 13, None


def transformer_encoder(generator):
    torch.manual_seed(3)
    model = torch.nn.TransformerEncoderLayer(
        d_model=64, nhead=4, dim_feedforward=128, dropout=0.1,
        batch_first=True)
    x = torch.rand(2, 10, 64, generator=generator) * 2 - 1
    # Batch and sequence stay dynamic in the file: the test fixes them with
    # --input-shape style overrides.
    dynamic = {"input": {0: "batch", 1: "sequence"}}
    return model, x, 17, dynamic


# --- Models a user is likely to try (torchvision builders, weights=None),
# at small inputs so each runs in well under a second on lavapipe.

def _vision(builder, seed, size=64, opset=13, **kwargs):
    def make(generator):
        torch.manual_seed(seed)
        model = builder(weights=None, **kwargs)
        randomize_batch_norms(model, generator)
        x = torch.rand(1, 3, size, size, generator=generator)
        return model, x, opset, None
    return make


squeezenet1_1 = _vision(torchvision.models.squeezenet1_1, 10)
shufflenet_v2 = _vision(torchvision.models.shufflenet_v2_x0_5, 11)
mobilenet_v3_small = _vision(torchvision.models.mobilenet_v3_small, 12)
efficientnet_b0 = _vision(torchvision.models.efficientnet_b0, 13)
mnasnet0_5 = _vision(torchvision.models.mnasnet0_5, 14)
googlenet = _vision(torchvision.models.googlenet, 15, aux_logits=False,
                    transform_input=False, init_weights=True)
densenet121 = _vision(torchvision.models.densenet121, 16)
regnet_y_400mf = _vision(torchvision.models.regnet_y_400mf, 17)


def resnext_small(generator):
    # ResNeXt bottlenecks (grouped 3x3 convs) at a width that keeps the
    # weights small; the same torchvision ResNet class as resnext50_32x4d.
    torch.manual_seed(18)
    from torchvision.models.resnet import Bottleneck, ResNet
    model = ResNet(Bottleneck, [1, 1, 1, 1], groups=8, width_per_group=8,
                   num_classes=100)
    randomize_batch_norms(model, generator)
    return model, torch.rand(1, 3, 64, 64, generator=generator), 13, None


def alexnet_small(generator):
    # torchvision's AlexNet layout (11x11 stride-4 conv, overlapping max
    # pools, adaptive 6x6 average pool, dropout + linear head) at a quarter
    # of the width.
    torch.manual_seed(19)
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(3, 16, 11, stride=4, padding=2), nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2),
        nn.Conv2d(16, 48, 5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.Conv2d(48, 96, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(96, 64, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.AdaptiveAvgPool2d((6, 6)), nn.Flatten(1),
        nn.Dropout(0.5), nn.Linear(64 * 36, 256), nn.ReLU(inplace=True),
        nn.Dropout(0.5), nn.Linear(256, 256), nn.ReLU(inplace=True),
        nn.Linear(256, 10))
    return model, torch.rand(1, 3, 224, 224, generator=generator), 13, None


def vit_tiny(generator):
    # torchvision's VisionTransformer (class token, learned position
    # embedding, pre-norm encoder blocks with nn.MultiheadAttention and GELU
    # MLPs) at 2 layers of width 64 on 64x64 images.
    torch.manual_seed(20)
    from torchvision.models.vision_transformer import VisionTransformer
    model = VisionTransformer(image_size=64, patch_size=16, num_layers=2,
                              num_heads=4, hidden_dim=64, mlp_dim=128,
                              num_classes=10)
    with torch.no_grad():
        model.encoder.pos_embedding.normal_(std=0.5, generator=generator)
        model.class_token.normal_(std=0.5, generator=generator)
        model.heads.head.weight.normal_(std=0.1, generator=generator)
    return model, torch.rand(1, 3, 64, 64, generator=generator), 14, None


def transformer_gelu(generator):
    # Two post-norm encoder layers with GELU, then a final LayerNorm.
    torch.manual_seed(21)
    layer = torch.nn.TransformerEncoderLayer(
        d_model=32, nhead=4, dim_feedforward=64, dropout=0.1,
        activation="gelu", batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=2,
                                        norm=torch.nn.LayerNorm(32))
    x = torch.rand(1, 12, 32, generator=generator) * 2 - 1
    return model, x, 17, None


def swin_small(generator):
    # torchvision's SwinTransformer (shifted windows: roll, window
    # partition, the attention mask built by in-place slice assignment,
    # relative position bias) at 2 stages of width 24 on 64x64 images.
    torch.manual_seed(26)
    from torchvision.models.swin_transformer import SwinTransformer
    model = SwinTransformer(patch_size=[4, 4], embed_dim=24, depths=[2, 2],
                            num_heads=[2, 4], window_size=[4, 4],
                            stochastic_depth_prob=0.0, num_classes=10)
    with torch.no_grad():
        for module in model.modules():
            table = getattr(module, "relative_position_bias_table", None)
            if table is not None:
                table.normal_(std=0.5, generator=generator)
    return model, torch.rand(1, 3, 64, 64, generator=generator), 14, None


def maxvit_small(generator):
    # torchvision's MaxVit (MBConv with squeeze-excitation, block and grid
    # attention whose scores are Einsum ops, relative position bias) at 2
    # stages of width 16/32 on 64x64 images.
    torch.manual_seed(27)
    from torchvision.models.maxvit import MaxVit
    model = MaxVit(input_size=(64, 64), stem_channels=16, partition_size=4,
                   block_channels=[16, 32], block_layers=[1, 1], head_dim=8,
                   stochastic_depth_prob=0.0, num_classes=10)
    randomize_batch_norms(model, generator)
    with torch.no_grad():
        for module in model.modules():
            table = getattr(module, "relative_position_bias_table", None)
            if table is not None:
                table.normal_(std=0.5, generator=generator)
    return model, torch.rand(1, 3, 64, 64, generator=generator), 14, None


class GptBlock(torch.nn.Module):
    """A minGPT/nanoGPT decoder block: causal self-attention whose mask is a
    registered tril buffer (masked_fill(-inf) -> Where on a folded
    condition), a second mask built in forward with torch.tril (Trilu),
    GELU MLP, pre-norm residuals."""

    def __init__(self, width=32, heads=4, length=16):
        super().__init__()
        nn = torch.nn
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))
        self.register_buffer("bias", torch.tril(torch.ones(length, length)).view(
            1, 1, length, length))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.heads) ** 0.5)
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = att.softmax(dim=-1)
        local = torch.tril(torch.ones(t, t), diagonal=-4) == 0  # a 4-step window
        att = att.masked_fill(~local, 0.0)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


def gpt_block(generator):
    torch.manual_seed(33)
    return GptBlock(), torch.rand(2, 12, 32, generator=generator) * 2 - 1, 14, None


class Gpt2Block(GptBlock):
    """The plain GPT-2 block: causal mask only (masked_fill of the tril
    buffer), the form kiln fuses into one attention dispatch."""

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.heads) ** 0.5)
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


def gpt2_block(generator):
    torch.manual_seed(34)
    return Gpt2Block(width=64, heads=2, length=16), \
        torch.rand(2, 16, 64, generator=generator) * 2 - 1, 17, None


class UNetSmall(torch.nn.Module):
    """Encoder/decoder with skip connections; every upsampling flavour."""

    def __init__(self):
        super().__init__()
        nn = torch.nn

        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1),
                                 nn.BatchNorm2d(cout), nn.ReLU(inplace=True))
        self.e1, self.e2, self.e3 = block(3, 8), block(8, 16), block(16, 32)
        self.pool = nn.MaxPool2d(2)
        self.up3 = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.d2 = block(32, 16)
        self.d1 = block(16 + 8 + 8, 8)
        self.side = nn.Conv2d(16, 8, 1)
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        f = torch.nn.functional
        e1 = self.e1(x)
        e2 = self.e2(self.pool(e1))
        e3 = self.e3(self.pool(e2))
        d2 = self.d2(torch.cat([self.up3(e3), e2], 1))
        up_a = f.interpolate(d2, scale_factor=2, mode="bilinear", align_corners=False)
        up_b = f.interpolate(self.side(d2), scale_factor=2, mode="nearest")
        d1 = self.d1(torch.cat([up_a, up_b, e1], 1))
        y = self.out(d1)
        # align_corners=True to an odd size, then back down.
        y = f.interpolate(y, size=(45, 45), mode="bilinear", align_corners=True)
        return torch.sigmoid(f.interpolate(y, size=(32, 32), mode="nearest"))


def unet_small(generator):
    torch.manual_seed(22)
    model = UNetSmall()
    randomize_batch_norms(model, generator)
    return model, torch.rand(1, 3, 32, 32, generator=generator), 13, None


def conv1d_net(generator):
    # Audio / sequence classifier: Conv1d, BatchNorm1d, MaxPool1d,
    # AdaptiveAvgPool1d, Linear, LogSoftmax.
    torch.manual_seed(23)
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv1d(4, 16, 5, padding=2), nn.BatchNorm1d(16), nn.ReLU(),
        nn.MaxPool1d(2),
        nn.Conv1d(16, 32, 3, stride=2, padding=1, dilation=1), nn.BatchNorm1d(32),
        nn.ReLU(), nn.Conv1d(32, 32, 3, padding=2, dilation=2, groups=4),
        nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(32, 8),
        nn.LogSoftmax(dim=1))
    randomize_batch_norms(model, generator)
    return model, torch.rand(2, 4, 64, generator=generator), 13, None


class SuperResolution(torch.nn.Module):
    """PyTorch's ONNX tutorial super-resolution net (PixelShuffle ->
    DepthToSpace)."""

    def __init__(self, factor=3):
        super().__init__()
        nn = torch.nn
        self.body = nn.Sequential(
            nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1),
            nn.ReLU(), nn.Conv2d(32, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, factor * factor, 3, padding=1), nn.PixelShuffle(factor))

    def forward(self, x):
        return self.body(x)


def super_resolution(generator):
    torch.manual_seed(30)
    return SuperResolution(), torch.rand(1, 1, 24, 24, generator=generator), 13, None


class StyleTransfer(torch.nn.Module):
    """The fast-neural-style layout: reflection pads, instance norms, a
    residual block, nearest upsampling."""

    def __init__(self):
        super().__init__()
        nn = torch.nn

        def conv(cin, cout, k, stride=1):
            return nn.Sequential(nn.ReflectionPad2d(k // 2), nn.Conv2d(cin, cout, k, stride))
        self.down = nn.Sequential(conv(3, 8, 9), nn.InstanceNorm2d(8, affine=True), nn.ReLU(),
                                  conv(8, 16, 3, 2), nn.InstanceNorm2d(16, affine=True),
                                  nn.ReLU())
        self.res = nn.Sequential(conv(16, 16, 3), nn.InstanceNorm2d(16, affine=True))
        self.up = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), conv(16, 8, 3),
                                nn.InstanceNorm2d(8, affine=True), nn.ReLU(), conv(8, 3, 9))

    def forward(self, x):
        y = self.down(x)
        return self.up(y + self.res(y))


def style_transfer(generator):
    torch.manual_seed(31)
    model = StyleTransfer()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.InstanceNorm2d):
                module.weight.uniform_(0.5, 1.5, generator=generator)
                module.bias.uniform_(-0.5, 0.5, generator=generator)
    return model, torch.rand(1, 3, 32, 32, generator=generator), 13, None


def dcgan_generator(generator):
    torch.manual_seed(32)
    nn = torch.nn
    model = nn.Sequential(
        nn.ConvTranspose2d(16, 32, 4, 1, 0, bias=False), nn.BatchNorm2d(32), nn.ReLU(True),
        nn.ConvTranspose2d(32, 16, 4, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(True),
        nn.ConvTranspose2d(16, 3, 4, 2, 1, bias=False), nn.Tanh())
    randomize_batch_norms(model, generator)
    return model, torch.randn(2, 16, 1, 1, generator=generator), 13, None


class ActivationZoo(torch.nn.Module):
    """Functional ops exporters decompose: tanh-GELU, Mish, SiLU, ReLU6,
    hardtanh, replicate padding, ceil-mode average pooling, bilinear resize
    to an arbitrary size, std (ReduceProd of a shape)."""

    def forward(self, x):
        f = torch.nn.functional
        a = f.avg_pool2d(f.pad(x, (1, 2, 3, 0), mode="replicate"), 3, 2, ceil_mode=True)
        c = f.interpolate(x, size=(7, 9), mode="bilinear", align_corners=False)
        d = (f.silu(c) * f.hardswish(c) + f.elu(c) + f.softplus(c) + f.leaky_relu(c, 0.1) +
             f.relu6(c) + f.hardtanh(c) + f.gelu(c, approximate="tanh") + f.mish(c))
        return a.sum() + d.flatten(1).amax(dim=1) + d.std()


def activation_zoo(generator):
    return ActivationZoo(), torch.rand(1, 3, 11, 13, generator=generator) * 4 - 2, 14, None


class RecurrentNet(torch.nn.Module):
    """A sequence classifier over a 2-layer recurrent stack (batch first),
    reading every step's output and the final state."""

    def __init__(self, cell, bidirectional, size=12, hidden=16):
        super().__init__()
        self.rnn = cell(size, hidden, num_layers=2, batch_first=True,
                        bidirectional=bidirectional)
        width = 2 * hidden if bidirectional else hidden
        self.head = torch.nn.Linear(width, 5)

    def forward(self, x):
        y, state = self.rnn(x)
        h = state[0] if isinstance(state, tuple) else state
        return self.head(y[:, -1]) + h[-1].sum(dim=-1, keepdim=True)


def lstm_net(generator):
    torch.manual_seed(28)
    return RecurrentNet(torch.nn.LSTM, False), torch.rand(2, 9, 12, generator=generator), 14, None


def gru_net(generator):
    torch.manual_seed(29)
    return RecurrentNet(torch.nn.GRU, True), torch.rand(2, 9, 12, generator=generator), 14, None


def lstm_bidir_net(generator):
    """2-layer bidirectional LSTM over 100 steps: the time-loop kernel's
    timing case (README / issue 13)."""
    torch.manual_seed(31)
    net = RecurrentNet(torch.nn.LSTM, True, 32, 64)
    return net, torch.rand(4, 100, 32, generator=generator), 14, None


def rnn_net(generator):
    torch.manual_seed(32)
    return RecurrentNet(torch.nn.RNN, False), torch.rand(2, 9, 12, generator=generator), 14, None


def mlp_softmax(generator):
    torch.manual_seed(24)
    nn = torch.nn
    model = nn.Sequential(
        nn.Flatten(), nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64),
        nn.Tanh(), nn.LayerNorm(64), nn.Linear(64, 10), nn.Softmax(dim=-1))
    return model, torch.rand(4, 1, 8, 8, generator=generator), 13, None


class DetectorTail(torch.nn.Module):
    """A detector's tail split across GPU and host: conv head (GPU) ->
    per-location scores -> TopK (host, kiln's CPU fallback) -> Gather of the
    chosen boxes and a scale by their scores (GPU again)."""

    def __init__(self):
        super().__init__()
        self.body = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.head = torch.nn.Conv2d(8, 5, 1)

    def forward(self, x):
        h = self.head(torch.relu(self.body(x))).flatten(2)[0]  # [5, 64]
        scores = torch.sigmoid(h[4])
        boxes = h[:4].t()
        top, index = torch.topk(scores, 10)
        return boxes[index] * top.unsqueeze(1)


def detector_tail(generator):
    torch.manual_seed(31)
    return DetectorTail(), torch.rand(1, 3, 8, 8, generator=generator), 13, None


class ShapeOps(torch.nn.Module):
    """Shape arithmetic as traced code emits it: Shape/Gather/Concat chains,
    int64 index tensors, bool masks and Where/Equal/Expand that the
    compiler must fold, around run-time float work."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 4, 6)

    def forward(self, x):
        y = self.conv(x)
        n, c, h, w = y.shape
        y = y.view(n, c, h * w).transpose(1, 2)          # Shape/Gather/Mul
        y = y.reshape(n, h, w, -1).permute(0, 3, 1, 2)
        y = torch.nn.functional.adaptive_max_pool2d(y, (2, 2))
        y = y.flatten(1).unsqueeze(1).expand(n, 3, c * 4)  # Expand
        steps = torch.arange(y.shape[1])                   # int64
        odd = (steps % 2) == 1                             # bool
        scale = torch.where(odd, steps * 2, steps + 1).float()
        z = self.fc(y) * scale.unsqueeze(-1)
        return z.sum(dim=1, keepdim=False) + z.amax(dim=1)


def shape_ops(generator):
    torch.manual_seed(25)
    return ShapeOps(), torch.rand(1, 3, 8, 8, generator=generator), 13, None


# --- Text models: int64 token ids in, as PyTorch exports them.

class TextClassifier(torch.nn.Module):
    """Embedding + 2-layer TransformerEncoder + mean pool + Linear."""

    def __init__(self, vocab=1000, width=64, classes=5):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        layer = torch.nn.TransformerEncoderLayer(
            d_model=width, nhead=4, dim_feedforward=128, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers=2,
                                                   enable_nested_tensor=False)
        self.fc = torch.nn.Linear(width, classes)

    def forward(self, ids):
        return self.fc(self.encoder(self.embed(ids)).mean(dim=1))


def text_classifier(generator):
    torch.manual_seed(34)
    ids = torch.randint(0, 1000, (1, 16), generator=generator)
    return TextClassifier(), ids, 14, None


class TinyBert(torch.nn.Module):
    """Token + position embeddings (position ids from torch.arange, which
    the exporter turns into Shape/Range/Unsqueeze/Expand), LayerNorm, one
    GELU encoder layer, [CLS] pooling with tanh, and a classifier."""

    def __init__(self, vocab=500, width=32, length=16, classes=3):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, width)
        self.positions = torch.nn.Embedding(length, width)
        self.norm = torch.nn.LayerNorm(width)
        self.layer = torch.nn.TransformerEncoderLayer(
            d_model=width, nhead=2, dim_feedforward=64, activation="gelu",
            batch_first=True)
        self.pool = torch.nn.Linear(width, width)
        self.fc = torch.nn.Linear(width, classes)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1]).unsqueeze(0).expand_as(ids)
        x = self.norm(self.tokens(ids) + self.positions(positions))
        x = self.layer(x)
        return self.fc(torch.tanh(self.pool(x[:, 0])))


def tiny_bert(generator):
    torch.manual_seed(35)
    ids = torch.randint(0, 500, (1, 16), generator=generator)
    return TinyBert(), ids, 14, None


class MaskedAttentionEncoder(torch.nn.Module):
    """Token ids plus an int64 attention mask, as BERT-style exports take
    them: the mask becomes (1 - mask) * -10000 on the attention scores and
    the weights of a masked mean pool (Unsqueeze/Cast of a run-time int64
    input)."""

    def __init__(self, vocab=300, width=32, length=16, classes=4):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, width)
        self.positions = torch.nn.Embedding(length, width)
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, width)
        self.norm = torch.nn.LayerNorm(width)
        self.fc = torch.nn.Linear(width, classes)

    def forward(self, ids, mask):
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.tokens(ids) + self.positions(positions)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(1, 2) / (x.shape[-1] ** 0.5)
        scores = scores + (1.0 - mask[:, None, :].float()) * -10000.0
        x = self.norm(x + self.out(torch.softmax(scores, dim=-1) @ v))
        weights = mask.unsqueeze(-1).float()
        pooled = (x * weights).sum(dim=1) / weights.sum(dim=1)
        return self.fc(pooled)


def masked_encoder(generator):
    torch.manual_seed(36)
    ids = torch.randint(0, 300, (1, 16), generator=generator)
    mask = torch.ones(1, 16, dtype=torch.int64)
    mask[0, 11:] = 0  # padding
    return MaskedAttentionEncoder(), (ids, mask), 14, None


MODELS = {
    "mobilenet_v2": mobilenet_v2,
    "resnet18": resnet18,
    "transformer_encoder": transformer_encoder,
    "squeezenet1_1": squeezenet1_1,
    "shufflenet_v2": shufflenet_v2,
    "mobilenet_v3_small": mobilenet_v3_small,
    "efficientnet_b0": efficientnet_b0,
    "mnasnet0_5": mnasnet0_5,
    "googlenet": googlenet,
    "densenet121": densenet121,
    "regnet_y_400mf": regnet_y_400mf,
    "resnext_small": resnext_small,
    "alexnet_small": alexnet_small,
    "vit_tiny": vit_tiny,
    "swin_small": swin_small,
    "maxvit_small": maxvit_small,
    "transformer_gelu": transformer_gelu,
    "unet_small": unet_small,
    "conv1d_net": conv1d_net,
    "mlp_softmax": mlp_softmax,
    "lstm_net": lstm_net,
    "gpt_block": gpt_block,
    "gpt2_block": gpt2_block,
    "super_resolution": super_resolution,
    "style_transfer": style_transfer,
    "dcgan_generator": dcgan_generator,
    "activation_zoo": activation_zoo,
    "gru_net": gru_net,
    "lstm_bidir_net": lstm_bidir_net,
    "rnn_net": rnn_net,
    "shape_ops": shape_ops,
    "text_classifier": text_classifier,
    "tiny_bert": tiny_bert,
    "masked_encoder": masked_encoder,
    "detector_tail": detector_tail,
}


def save_tensor(array, name, path):
    tensor = numpy_helper.from_array(np.ascontiguousarray(array), name)
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


def export(name, out_dir):
    generator = torch.Generator().manual_seed(1234)
    model, x, opset, dynamic = MODELS[name](generator)
    inputs = x if isinstance(x, tuple) else (x,)
    names = ["input"] + ["input_%d" % i for i in range(1, len(inputs))]
    model.eval()
    directory = os.path.join(out_dir, name)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "model.onnx")
    # Exported with autograd on: PyTorch's fused inference fast path for
    # TransformerEncoderLayer (which has no ONNX form) is then not taken.
    # TrainingMode.PRESERVE on an eval-mode model exports inference
    # BatchNormalization nodes instead of letting the exporter fold them, so
    # kiln's own folding is what gets tested.
    torch.onnx.export(model, inputs, path, opset_version=opset,
                      input_names=names, output_names=["output"],
                      dynamic_axes=dynamic, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE)
    with torch.no_grad():
        # Token ids stay int64; only float inputs are widened.
        wide = [t.double() if t.is_floating_point() else t for t in inputs]
        reference = copy.deepcopy(model).double()(*wide).numpy()
    onnx.checker.check_model(onnx.load(path))
    for i, t in enumerate(inputs):
        saved = t.numpy().astype(np.float32 if t.is_floating_point() else np.int64)
        save_tensor(saved, names[i], os.path.join(directory, "input_%d.pb" % i))
    save_tensor(reference.astype(np.float32), "output", os.path.join(directory, "output_0.pb"))
    print("%s: input %s, output %s, opset %d" % (name, tuple(inputs[0].shape), reference.shape,
                                                 opset))


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(__doc__)
        return 2
    torch.set_num_threads(1)
    args = sys.argv[2:]
    stamp = os.path.join(sys.argv[1], "models.stamp")
    if len(args) >= 2 and args[0] == "--stamp":
        stamp, args = args[1], args[2:]
    names = args or list(MODELS)
    for name in names:
        export(name, sys.argv[1])
    # A stamp lets the build system track all outputs at once.
    with open(stamp, "w") as f:
        f.write("\n".join(names) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
