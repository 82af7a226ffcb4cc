#!/usr/bin/python3
"""Exports the real-model test cases for kiln's ONNX front end.

For each model writes <out>/<name>/model.onnx, input_0.pb (float32) and
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
        if isinstance(module, torch.nn.BatchNorm2d):
            n = module.num_features
            with torch.no_grad():
                module.running_mean.copy_(torch.rand(n, generator=generator) - 0.5)
                module.running_var.copy_(torch.rand(n, generator=generator) * 1.5 + 0.5)
                module.weight.copy_(torch.rand(n, generator=generator) + 0.5)
                module.bias.copy_(torch.rand(n, generator=generator) - 0.5)


def mobilenet_v2(generator):
    torch.manual_seed(1)
    model = torchvision.models.mobilenet_v2(weights=None)
    randomize_batch_norms(model, generator)
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


MODELS = {
    "mobilenet_v2": mobilenet_v2,
    "resnet18": resnet18,
    "transformer_encoder": transformer_encoder,
}


def save_tensor(array, name, path):
    tensor = numpy_helper.from_array(np.ascontiguousarray(array), name)
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


def export(name, out_dir):
    generator = torch.Generator().manual_seed(1234)
    model, x, opset, dynamic = MODELS[name](generator)
    model.eval()
    directory = os.path.join(out_dir, name)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "model.onnx")
    # Exported with autograd on: PyTorch's fused inference fast path for
    # TransformerEncoderLayer (which has no ONNX form) is then not taken.
    # TrainingMode.PRESERVE on an eval-mode model exports inference
    # BatchNormalization nodes instead of letting the exporter fold them, so
    # kiln's own folding is what gets tested.
    torch.onnx.export(model, (x,), path, opset_version=opset,
                      input_names=["input"], output_names=["output"],
                      dynamic_axes=dynamic, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE)
    with torch.no_grad():
        reference = copy.deepcopy(model).double()(x.double()).numpy()
    onnx.checker.check_model(onnx.load(path))
    save_tensor(x.numpy().astype(np.float32), "input", os.path.join(directory, "input_0.pb"))
    save_tensor(reference.astype(np.float32), "output", os.path.join(directory, "output_0.pb"))
    print("%s: input %s, output %s, opset %d" % (name, tuple(x.shape), reference.shape, opset))


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
