#!/usr/bin/env python3
"""IREE modules of bench_gpu.py's models, for its --iree column.

IREE's compiler wheel (84 MB) is not carried to the GPU machine, so its
modules are built where it is installed and only IREE's runtime goes there.
For each model this exports the bench's PyTorch model (the same builder and
exporter as bench_gpu.py, with the PyTorch found here), imports it with
iree-import-onnx with its weights externalized, compiles it for Vulkan, and
replaces the weights by zero splats (iree-convert-parameters --strip): the
timing does not depend on the values and the archive takes no storage, so the
whole folder is a few MB. kiln's column checks kiln's outputs; IREE's column
is timing only. Writes, into OUT:
  NAME.vmfb, NAME.irpa   the module and its (zero) parameters, scope "model"
  NAME.args              iree-benchmark-module's --function and --input flags
  tools/                 iree-benchmark-module and the libraries it loads

Usage: bench_iree_modules.py IREE_BIN OUT [--models a,b] [--target ampere]
  IREE_BIN: a folder holding iree-import-onnx, iree-compile, iree-dump-module,
            iree-convert-parameters and iree-benchmark-module (a venv's bin
            after `pip install iree-base-compiler iree-base-runtime onnx`)
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_gpu  # noqa: E402  (the model builders and the exporter)

DEFAULT_MODELS = ["bert_base_seq128", "vit_b_16", "resnet50", "mobilenet_v2"]


def tool(iree_bin, name):
    path = os.path.join(iree_bin, name)
    if not os.access(path, os.X_OK):
        sys.exit("bench_iree_modules.py: %s not found; install IREE's wheels (see --help)" % path)
    return path


def run(args):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("bench_iree_modules.py: %s failed:\n%s" % (os.path.basename(args[0]),
                                                          (result.stderr or result.stdout)[-2000:]))
    return result.stdout


def copy_runtime(iree_bin, out):
    """iree-benchmark-module is a launcher script in a venv; copy the binary
    it runs and the shared libraries beside it (ldd names them)."""
    probe = "import iree._runtime_libs as m, os; print(os.path.dirname(m.__file__))"
    python = os.path.join(iree_bin, "python3")
    libs = subprocess.run([python, "-c", probe], capture_output=True, text=True,
                          check=True).stdout.strip()
    tools = os.path.join(out, "tools")
    os.makedirs(tools, exist_ok=True)
    binary = os.path.join(libs, "iree-benchmark-module")
    shutil.copy2(binary, tools)
    for line in subprocess.run(["ldd", binary], capture_output=True, text=True).stdout.splitlines():
        parts = line.split("=>")
        if len(parts) == 2 and "iree" in parts[1]:
            shutil.copy2(parts[1].split()[0], tools)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("iree_bin")
    parser.add_argument("out")
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--target", default="ampere",
                        help="--iree-vulkan-target (default ampere, IREE's NVIDIA target)")
    args = parser.parse_args()
    importer = tool(args.iree_bin, "iree-import-onnx")
    compiler = tool(args.iree_bin, "iree-compile")
    converter = tool(args.iree_bin, "iree-convert-parameters")
    dumper = tool(args.iree_bin, "iree-dump-module")
    os.makedirs(args.out, exist_ok=True)
    copy_runtime(args.iree_bin, args.out)
    for name in args.models.split(","):
        if name not in bench_gpu.MODELS:
            sys.exit("bench_iree_modules.py: unknown model %s; known: %s" % (
                name, ", ".join(bench_gpu.MODELS)))
        with tempfile.TemporaryDirectory(prefix="kiln-iree-") as work:
            model, inputs = bench_gpu.MODELS[name][0](1234)
            onnx_path = os.path.join(work, "model.onnx")
            bench_gpu.export(model, inputs, onnx_path)
            mlir = os.path.join(work, "model.mlir")
            params = os.path.join(work, "model.irpa")
            run([importer, onnx_path, "-o", mlir, "--externalize-params",
                 "--save-params-to", params])
            vmfb = os.path.join(args.out, name + ".vmfb")
            run([compiler, mlir, "--iree-hal-target-device=vulkan",
                 "--iree-vulkan-target=" + args.target, "-o", vmfb])
            run([converter, "--parameters=" + params, "--strip", "--quiet",
                 "--output=" + os.path.join(args.out, name + ".irpa")])
        shapes = ["%sxf32=0.5" % "x".join(str(d) for d in x.shape) for x in inputs]
        # The importer names the entry point after the ONNX graph.
        listing = run([dumper, vmfb]).split("Exported Functions:")[-1]
        function = re.findall(r"^\s*\[\s*\d+\]\s*([A-Za-z0-9_.]+)\(", listing, re.M)
        function = [f for f in function if not f.startswith("__")][0]
        with open(os.path.join(args.out, name + ".args"), "w") as f:
            f.write("--function=%s\n" % function)
            f.writelines("--input=%s\n" % s for s in shapes)
        print("%s: %s (%d KB)" % (name, vmfb, os.path.getsize(vmfb) // 1024), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
