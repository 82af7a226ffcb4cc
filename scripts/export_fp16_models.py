#!/usr/bin/python3
"""Exports fp16 copies of some export_models.py test models.

For each NAME writes <out>/<NAME>_fp16/model.onnx with float16 initializers,
constants, inputs and outputs (Casts to float become Casts to float16), as a
`model.half()` export has them; input_0.pb (float16) and output_0.pb: the
PyTorch float64 output of the model with its weights and input rounded to
float16 (stored as float32).

Debian's torch 1.13 has no CPU kernels for half convolutions or matrix
products, so its exporter cannot trace model.half() on this machine; the
float32 export of the same model is converted instead, tensor by tensor.
Run with Debian's /usr/bin/python3.

Usage: export_fp16_models.py OUTDIR [--stamp FILE] [NAME...]
"""
import copy
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402

NAMES = ["resnet18", "transformer_encoder", "mlp_softmax"]
FLOAT, FLOAT16 = onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16


def half_tensor(tensor):
    if tensor.data_type != FLOAT:
        return tensor
    array = numpy_helper.to_array(tensor).astype(np.float16)
    return numpy_helper.from_array(array, tensor.name)


def to_fp16(model):
    graph = model.graph
    for i, init in enumerate(graph.initializer):
        graph.initializer[i].CopyFrom(half_tensor(init))
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                attr.t.CopyFrom(half_tensor(attr.t))
            if node.op_type == "Cast" and attr.name == "to" and attr.i == FLOAT:
                attr.i = FLOAT16
    for info in list(graph.input) + list(graph.output) + list(graph.value_info):
        if info.type.tensor_type.elem_type == FLOAT:
            info.type.tensor_type.elem_type = FLOAT16
    return model


def export(name, out_dir):
    generator = torch.Generator().manual_seed(1234)
    model, x, opset, dynamic = export_models.MODELS[name](generator)
    model.eval()
    x = x.half().float()  # the input the fp16 model gets, exactly
    directory = os.path.join(out_dir, name + "_fp16")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "model.onnx")
    torch.onnx.export(model, (x,), path, opset_version=opset, input_names=["input"],
                      output_names=["output"], dynamic_axes=dynamic,
                      do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE)
    onnx_model = to_fp16(onnx.load(path))
    onnx.checker.check_model(onnx_model)
    onnx.save(onnx_model, path)
    with torch.no_grad():
        rounded = copy.deepcopy(model).double()
        for tensor in list(rounded.parameters()) + list(rounded.buffers()):
            if tensor.is_floating_point():
                tensor.copy_(tensor.half().double())
        reference = rounded(x.double()).numpy()
    export_models.save_tensor(x.numpy().astype(np.float16), "input",
                              os.path.join(directory, "input_0.pb"))
    export_models.save_tensor(reference.astype(np.float32), "output",
                              os.path.join(directory, "output_0.pb"))
    print("%s_fp16: input %s, output %s, opset %d" % (name, tuple(x.shape), reference.shape,
                                                      opset))


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(__doc__)
        return 2
    torch.set_num_threads(1)
    args = sys.argv[2:]
    stamp = os.path.join(sys.argv[1], "models_fp16.stamp")
    if len(args) >= 2 and args[0] == "--stamp":
        stamp, args = args[1], args[2:]
    names = args or NAMES
    for name in names:
        export(name, sys.argv[1])
    with open(stamp, "w") as f:
        f.write("\n".join(names) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
