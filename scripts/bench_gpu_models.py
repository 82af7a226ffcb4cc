#!/usr/bin/env python3
"""kiln (Vulkan) next to PyTorch CUDA on the same models, in one run: for
each exported test model (scripts/export_models.py), compiles it with
kiln-compile, runs it with kiln-run-module --call_count and
--print_statistics (median wall and GPU time per call), and times the same
torch module (float32, eval, no_grad, TF32 off, batch as exported) on CUDA
with a synchronize per call. Prints a table with the ratio.

Usage: bench_gpu_models.py BUILD_DIR MODELS_DIR [CALLS] [NAME...]
"""
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper
import torch


def kiln_times(build, model_dir, calls):
    work = tempfile.mkdtemp()
    module = os.path.join(work, "m.kiln")
    subprocess.run([os.path.join(build, "tools/compile/kiln-compile"),
                    os.path.join(model_dir, "model.onnx"), "-o", module], check=True)
    args = [os.path.join(build, "tools/run-module/kiln-run-module"), "--device=vulkan",
            "--module=" + module, "--function=predict", "--call_count=%d" % calls,
            "--print_statistics", "--output=@" + os.path.join(work, "out.npy")]
    i = 0
    while os.path.exists(os.path.join(model_dir, "input_%d.pb" % i)):
        tensor = onnx.TensorProto()
        with open(os.path.join(model_dir, "input_%d.pb" % i), "rb") as f:
            tensor.ParseFromString(f.read())
        path = os.path.join(work, "input_%d.npy" % i)
        np.save(path, numpy_helper.to_array(tensor))
        args.append("--input=@" + path)
        i += 1
    text = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    wall = re.search(r"median wall time: ([0-9.]+) ms", text)
    gpu = re.search(r"median GPU time of a call \(timestamps\): ([0-9.]+) ms", text)
    return (float(wall.group(1)) if wall else float("nan"),
            float(gpu.group(1)) if gpu else float("nan"), text)


def torch_time(exporter, name, calls):
    generator = torch.Generator().manual_seed(1234)
    model, x, _, _ = exporter.MODELS[name](generator)
    inputs = x if isinstance(x, tuple) else (x,)
    model = model.eval().cuda()
    inputs = [t.cuda() for t in inputs]
    times = []
    with torch.no_grad():
        for _ in range(5):
            model(*inputs)
        torch.cuda.synchronize()
        for _ in range(calls):
            start = time.perf_counter()
            model(*inputs)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    build, models = sys.argv[1], sys.argv[2]
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    spec = importlib.util.spec_from_file_location(
        "export_models", os.path.join(os.path.dirname(__file__), "export_models.py"))
    exporter = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exporter)
    names = sys.argv[4:] or sorted(os.listdir(models))
    print("| model | kiln wall ms | kiln GPU ms | PyTorch CUDA ms | kiln wall / PyTorch |")
    print("|---|---|---|---|---|")
    for name in names:
        if not os.path.exists(os.path.join(models, name, "model.onnx")):
            continue
        try:
            wall, gpu, _ = kiln_times(build, os.path.join(models, name), calls)
            ref = torch_time(exporter, name, calls)
            print("| %s | %.3f | %.3f | %.3f | %.2fx |" % (name, wall, gpu, ref, wall / ref),
                  flush=True)
        except Exception as error:  # one model's failure does not stop the table
            print("| %s | failed: %s | | | |" % (name, str(error)[:120]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
