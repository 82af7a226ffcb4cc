#!/usr/bin/env python3
"""kiln next to PyTorch on the issue-16 bench models, in one run.

For each model: builds it in PyTorch with seeded weights, exports it to ONNX
(TorchScript exporter, opset 17), compiles it with kiln-compile, times
kiln-run-module --call_count --print_statistics (median wall time per warm call
from a run with --no_timestamps, median GPU time from a run with one timestamp
pair per submission (--span_timestamps; per-dispatch stamps cost GPU time of
their own); one submission per call), checks kiln's output against PyTorch's
(max|diff| <= TOL * max|ref|), and times PyTorch in the same run:
  with CUDA: eager, CUDA graph, torch.compile(mode="reduce-overhead"), TF32 off;
  without:   PyTorch CPU eager, and onnxruntime CPU on one thread if importable.
Prints one markdown table of medians and the ratio kiln wall / best reference.
With --precision f16 kiln compiles with --precision=f16 (fp16 weights and
activations, fp32 math; docs/precision.md), PyTorch runs model.half() on
half inputs (eager, CUDA graph, torch.compile; on the CPU PyTorch 1.13 has no
half kernels, so its column stays fp32), and the check is against the fp32
PyTorch output with TOL 1e-2.

Usage: bench_gpu.py BUILD_DIR [--calls N] [--models a,b,...] [--no-compile]
                    [--precision f32|f16] [--iree DIR]
--models heldout runs the models of heldout_models.py (kiln was not tuned on
them); a model PyTorch cannot export is listed as not exported, not failed.
--iree DIR adds IREE's time (iree-benchmark-module on the same Vulkan device,
median of 5 repetitions) for each model DIR holds a module of, as written by
scripts/bench_iree_modules.py where IREE's compiler is installed. Its weights
are zeros, so that column is timing only.
Environment: KILN_BENCH_DEVICE (default "vulkan"); KILN_BENCH_TARGET, the
target triple kiln-compile builds for (default: the device's own triple from
kiln-run-module --list_devices, as a deployment would; "default" keeps
kiln-compile's multi-target default); KILN_BENCH_STATS_DIR, a folder that
receives each model's kiln-run-module --print_statistics text (the profile
of every dispatch, and its stderr: with KILN_VULKAN_PIPELINE_STATS=1 the
registers of each pipeline) as MODEL_PRECISION.txt.
"""
import argparse
import copy
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import torch

# The legacy exporter's deprecation and tracer notes would interleave the table.
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", module="torch.onnx")
warnings.filterwarnings("ignore", message=".*TracerWarning.*|.*Converting a tensor to a Python.*")

CUDA = torch.cuda.is_available()


def seeded(model, seed):
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.randn(param.shape, generator=generator) * 0.05)
        for name, buf in model.named_buffers():
            if name.endswith("running_var"):
                buf.copy_(torch.rand(buf.shape, generator=generator) + 0.5)
            elif name.endswith("running_mean"):
                buf.copy_(torch.randn(buf.shape, generator=generator) * 0.1)
    return model.eval()


def vision(builder_name, batch=1, size=224):
    def build(seed):
        import torchvision
        model = seeded(getattr(torchvision.models, builder_name)(weights=None), seed)
        x = torch.randn(batch, 3, size, size, generator=torch.Generator().manual_seed(seed + 1))
        return model, (x,)
    return build


def bert_base(seed):
    layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, activation="gelu", batch_first=True,
                                             dropout=0.0)
    model = seeded(torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False), seed)
    x = torch.randn(1, 128, 768, generator=torch.Generator().manual_seed(seed + 1))
    return model, (x,)


class MatMul(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(n, n))

    def forward(self, x):
        return x @ self.weight


def matmul(n):
    def build(seed):
        model = seeded(MatMul(n), seed)
        x = torch.randn(n, n, generator=torch.Generator().manual_seed(seed + 1))
        return model, (x,)
    return build


def conv3x3(channels, size, batch=1):
    def build(seed):
        model = seeded(torch.nn.Conv2d(channels, channels, 3, padding=1), seed)
        generator = torch.Generator().manual_seed(seed + 1)
        x = torch.randn(batch, channels, size, size, generator=generator)
        return model, (x,)
    return build


# name -> (builder, FLOPs per call or None)
MODELS = {
    "mobilenet_v2": (vision("mobilenet_v2"), None),
    "resnet18": (vision("resnet18"), None),
    "resnet50": (vision("resnet50"), None),
    "efficientnet_b0": (vision("efficientnet_b0"), None),
    "bert_base_seq128": (bert_base, None),
    "vit_b_16": (vision("vit_b_16"), None),
    "resnet50_batch32": (vision("resnet50", batch=32), None),
    "matmul_4096": (matmul(4096), 2 * 4096 ** 3),
    "matmul_1024": (matmul(1024), 2 * 1024 ** 3),
    # One 3x3 conv whose columns (75 MB at f16) pass a 32 MiB binding
    # (--max-storage-range): gemm_coopmat reads its windows in place.
    "conv3x3_256ch_128px": (conv3x3(256, 128), 2 * 256 * 256 * 9 * 128 * 128),
}
DEFAULT_CUDA = ["mobilenet_v2", "resnet18", "resnet50", "efficientnet_b0", "bert_base_seq128",
                "vit_b_16", "resnet50_batch32", "matmul_4096"]
DEFAULT_CPU = ["mobilenet_v2", "resnet18", "matmul_1024"]


def export(model, inputs, path):
    kwargs = {"opset_version": 17, "input_names": ["input_%d" % i for i in range(len(inputs))],
              "output_names": ["output"], "do_constant_folding": True}
    try:
        torch.onnx.export(model, inputs, path, dynamo=False, **kwargs)
    except TypeError:  # PyTorch before 2.5 has no dynamo argument
        torch.onnx.export(model, inputs, path, **kwargs)


def device_triple(build):
    target = os.environ.get("KILN_BENCH_TARGET", "")
    if target:
        return "" if target == "default" else target
    text = subprocess.run([os.path.join(build, "tools/run-module/kiln-run-module"),
                           "--list_devices"], check=True, capture_output=True, text=True).stdout
    lines = [line.split() for line in text.splitlines() if line.strip()]
    return lines[0][-1] if lines else ""


def kiln_run(build, onnx_path, inputs, calls, work, triple, precision, name):
    module = os.path.join(work, "m.kiln")
    compile_args = [os.path.join(build, "tools/compile/kiln-compile"), onnx_path, "-o", module,
                    "--precision=" + precision]
    # Extra kiln-compile flags (e.g. --cooperative-matrix) for side-by-side runs.
    compile_args += os.environ.get("KILN_BENCH_COMPILE_FLAGS", "").split()
    if triple:
        compile_args.append("--target-triple=" + triple)
    subprocess.run(compile_args, check=True, capture_output=True, text=True)
    out = os.path.join(work, "out.npy")
    args = [os.path.join(build, "tools/run-module/kiln-run-module"),
            "--device=" + os.environ.get("KILN_BENCH_DEVICE", "vulkan"), "--module=" + module,
            "--function=predict", "--call_count=%d" % calls, "--print_statistics",
            "--output=@" + out]
    for i, x in enumerate(inputs):
        path = os.path.join(work, "input_%d.npy" % i)
        np.save(path, x.numpy())
        args.append("--input=@" + path)
    # First an unmeasured call: it fills the driver's shader cache. A
    # measured run whose first call compiles for seconds (f16 tensor-core
    # pipelines on an H100: 8.7 s) lets the GPU clock down, and its calls
    # ran 4x slow (MobileNetV2 f16: 3.1 ms a call, 0.79 after a cached
    # compile). Per-dispatch timestamps cost GPU time of their own
    # (MobileNetV2 f16: 0.90 ms a call against 0.79), so the wall time comes
    # from a run without timestamps and the GPU time and dispatch count from
    # one with a timestamp pair per submission (--span_timestamps); the
    # per-dispatch profile is taken only for KILN_BENCH_STATS_DIR.
    subprocess.run([a for a in args if not a.startswith("--call_count")] + ["--call_count=1"],
                   check=True, capture_output=True, text=True)
    text = subprocess.run(args + ["--span_timestamps"], check=True, capture_output=True,
                          text=True).stdout
    stats_dir = os.environ.get("KILN_BENCH_STATS_DIR", "")
    if stats_dir:
        os.makedirs(stats_dir, exist_ok=True)
        # Every dispatch of a call, slowest first.
        profile = subprocess.run(args + ["--slowest_dispatches=100000"], check=True,
                                 capture_output=True, text=True)
        with open(os.path.join(stats_dir, "%s_%s.txt" % (name, precision)), "w") as f:
            # stderr too: KILN_VULKAN_PIPELINE_STATS=1's registers per pipeline.
            f.write(profile.stdout + profile.stderr)
    untimed = subprocess.run(args + ["--no_timestamps"], check=True, capture_output=True,
                             text=True).stdout
    wall = (re.search(r"warm call \(median of calls 2..[0-9]+\): ([0-9.]+) ms", untimed)
            or re.search(r"median wall time: ([0-9.]+) ms", untimed))
    gpu = re.search(r"median GPU time of a call \(span timestamps\): ([0-9.]+) ms", text)
    dispatches = re.search(r"([0-9]+) dispatches per call", text)
    return (float(wall.group(1)) if wall else float("nan"),
            float(gpu.group(1)) if gpu else float("nan"),
            int(dispatches.group(1)) if dispatches else None,
            np.load(out))


def iree_ms(iree_dir, name):
    """IREE's median ms per call of bench_iree_modules.py's NAME module, or None."""
    vmfb = os.path.join(iree_dir, name + ".vmfb")
    if not iree_dir or not os.path.exists(vmfb):
        return None
    with open(os.path.join(iree_dir, name + ".args")) as f:
        flags = f.read().split()
    text = subprocess.run([os.path.join(iree_dir, "tools", "iree-benchmark-module"),
                           "--device=" + os.environ.get("KILN_BENCH_DEVICE", "vulkan"),
                           "--module=" + vmfb,
                           "--parameters=model=" + os.path.join(iree_dir, name + ".irpa")]
                          + flags + ["--benchmark_repetitions=5"],
                          check=True, capture_output=True, text=True).stdout
    found = re.search(r"real_time_median\s+([0-9.]+) (ns|us|ms|s)\b", text)
    if not found:
        raise RuntimeError("no real_time_median in iree-benchmark-module's output")
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[found.group(2)]
    return float(found.group(1)) * scale


def median_ms(fn, calls, sync):
    for _ in range(5):
        fn()
    sync()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def torch_cuda_times(model, inputs, calls, use_compile):
    model = model.cuda()
    xs = [x.cuda() for x in inputs]
    sync = torch.cuda.synchronize
    times = {}
    with torch.no_grad():
        times["eager"] = median_ms(lambda: model(*xs), calls, sync)
        try:
            static = [x.clone() for x in xs]
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for _ in range(3):
                    model(*static)
            torch.cuda.current_stream().wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                model(*static)
            times["graph"] = median_ms(graph.replay, calls, sync)
        except Exception as error:  # noqa: BLE001 - a model that cannot be captured
            print("  CUDA graph failed: %s" % str(error).splitlines()[0][:160], file=sys.stderr)
        if use_compile:
            try:
                compiled = torch.compile(model, mode="reduce-overhead")
                for _ in range(3):
                    compiled(*xs)
                times["compile"] = median_ms(lambda: compiled(*xs), calls, sync)
            except Exception as error:  # noqa: BLE001
                print("  torch.compile failed: %s" % str(error).splitlines()[0][:160],
                      file=sys.stderr)
        reference = model(*xs).float().cpu().numpy()
    return times, reference


def cpu_times(model, inputs, onnx_path, calls):
    times = {}
    with torch.no_grad():
        times["torch_cpu"] = median_ms(lambda: model(*inputs), calls, lambda: None)
        reference = model(*inputs).numpy()
    try:
        import onnxruntime
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        session = onnxruntime.InferenceSession(onnx_path, options,
                                               providers=["CPUExecutionProvider"])
        feed = {"input_%d" % i: x.numpy() for i, x in enumerate(inputs)}
        times["ort_1t"] = median_ms(lambda: session.run(None, feed), calls, lambda: None)
    except ImportError:
        pass
    return times, reference


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build")
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--models", default="")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--precision", choices=("f32", "f16"), default="f32")
    parser.add_argument("--iree", default="", help="bench_iree_modules.py's output folder")
    args = parser.parse_args()
    iree_head = (" IREE ms | IREE / kiln wall |", "---|---|") if args.iree else ("", "")
    half = args.precision == "f16"
    names = args.models.split(",") if args.models else (DEFAULT_CUDA if CUDA else DEFAULT_CPU)
    import heldout_models  # models kiln was not tuned on
    for name, build in heldout_models.HELDOUT.items():
        MODELS.setdefault(name, (build, None))
    if "heldout" in names:
        at = names.index("heldout")
        names[at:at + 1] = list(heldout_models.HELDOUT)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    tolerance = 1e-2 if half else 1e-3 if CUDA else 1e-4
    device = (torch.cuda.get_device_name() if CUDA else "CPU")
    triple = device_triple(args.build)
    print("kiln (modules for %s) vs PyTorch %s on %s; medians of %d warm calls; %s, TF32 off; "
          "check: max|kiln-ref| <= %g * max|ref| (ref: PyTorch fp32)" % (
              triple or "kiln-compile's default targets", torch.__version__, device, args.calls,
              "fp16 (kiln --precision=f16, PyTorch model.half())" if half else "fp32", tolerance))
    if CUDA:
        print("| model | kiln wall ms | kiln GPU ms | dispatches | eager ms | CUDA graph ms | "
              "torch.compile ms | kiln wall / best PyTorch | check |" + iree_head[0])
        print("|---|---|---|---|---|---|---|---|---|" + iree_head[1])
    else:
        print("| model | kiln wall ms | dispatches | PyTorch CPU ms | onnxruntime 1 thread ms | "
              "kiln / PyTorch | check |" + iree_head[0])
        print("|---|---|---|---|---|---|---|" + iree_head[1])
    failures = 0
    for name in names:
        if name not in MODELS:
            print("unknown model %s; known: %s" % (name, ", ".join(MODELS)), file=sys.stderr)
            return 2
        builder, flops = MODELS[name]
        work = tempfile.mkdtemp(prefix="kiln-bench-")
        try:
            model, inputs = builder(1234)
            onnx_path = os.path.join(work, "model.onnx")
            try:
                export(model, inputs, onnx_path)
            except Exception as error:  # noqa: BLE001 - PyTorch's exporter, not kiln
                print("| %s | not exported (PyTorch %s's exporter: %s) |" % (
                    name, torch.__version__, str(error).strip().splitlines()[0][:160]))
                continue
            wall, gpu, dispatches, got = kiln_run(args.build, onnx_path, inputs, args.calls, work,
                                                  triple, args.precision, name)
            if CUDA and half:
                # Timed in fp16; checked against the fp32 model's output.
                with torch.no_grad():
                    fp32 = copy.deepcopy(model).cuda()
                    ref = fp32(*[x.cuda() for x in inputs]).float().cpu().numpy()
                    del fp32
                times, _ = torch_cuda_times(copy.deepcopy(model).half(),
                                            [x.half() if x.is_floating_point() else x
                                             for x in inputs], args.calls,
                                            not args.no_compile)
            elif CUDA:
                times, ref = torch_cuda_times(model, inputs, args.calls, not args.no_compile)
            else:
                times, ref = cpu_times(model, inputs, onnx_path, args.calls)
            error = float(np.max(np.abs(got.astype(np.float64) - ref))) if got.shape == ref.shape \
                else float("inf")
            scale = float(np.max(np.abs(ref))) or 1.0
            ok = error <= tolerance * scale
            failures += 0 if ok else 1
            check = "%s %.1e" % ("ok" if ok else "WRONG", error / scale)
            fmt = lambda key: "%.3f" % times[key] if key in times else "-"  # noqa: E731
            iree = ""
            if args.iree:
                iree_time = iree_ms(args.iree, name)
                iree = (" %.3f | %.2fx |" % (iree_time, iree_time / wall) if iree_time
                        else " - | - |")
            label = name
            if flops:
                label += " (kiln %.1f GFLOP/s)" % (flops / (wall * 1e-3) / 1e9)
            if CUDA:
                best = min(times[k] for k in ("eager", "graph", "compile") if k in times)
                print("| %s | %.3f | %.3f | %s | %s | %s | %s | %.2fx | %s |%s" % (
                    label, wall, gpu, dispatches or "-", fmt("eager"), fmt("graph"),
                    fmt("compile"), wall / best, check, iree), flush=True)
            else:
                print("| %s | %.3f | %s | %s | %s | %.2fx | %s |%s" % (
                    label, wall, dispatches or "-", fmt("torch_cpu"), fmt("ort_1t"),
                    wall / times["torch_cpu"], check, iree), flush=True)
        except subprocess.CalledProcessError as error:
            failures += 1
            detail = (error.stderr or error.stdout or "").strip().splitlines()
            print("| %s | failed: %s |" % (name, detail[-1][:200] if detail else error))
        except Exception as error:  # noqa: BLE001 - one model's failure does not stop the table
            failures += 1
            print("| %s | failed: %s |" % (name, str(error).splitlines()[0][:200] if str(error)
                                            else repr(error)))
        finally:
            subprocess.run(["rm", "-rf", work], check=False)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
