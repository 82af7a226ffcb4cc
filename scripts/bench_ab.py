#!/usr/bin/env python3
"""A/B of kiln settings on the bench models (scripts/bench_gpu.py's), in one run.

Each --setting is NAME or NAME:VAR=VALUE,VAR=VALUE: environment variables for
kiln-compile (a temporary switch a kernel or lowering experiment reads, or
anything kiln-compile honours) and extra kiln-compile flags after `--flags`:
  --setting base --setting short:KILN_EXP_X=1 --setting cm:--flags=--cooperative-matrix
Every (model, setting) is compiled once (in parallel), run once unmeasured
(the driver's shader cache), then ROUNDS rounds alternate the settings, each
kiln-run-module --call_count=CALLS --no_timestamps (median warm call), so
that clock and thermal drift fall on every setting alike. Prints one
markdown table: the rounds' times, their median, the ratio to the first
setting's, the check against PyTorch fp32 (max|kiln-ref| / max|ref|) and
the largest difference from the first setting's output. --profiles DIR
writes each module's per-dispatch profile (every dispatch) as
MODEL_PRECISION_SETTING.txt and prints a second table: per model and
setting, the GPU time a call of each kernel (dispatches grouped by kernel
name, storage and specialization stripped).

Usage: bench_ab.py BUILD_DIR --models a,b --setting NAME[:...] [--setting ...]
                   [--precision f32|f16] [--rounds 4] [--calls 30] [--profiles DIR]
On the GPU machine: `. .gpu/setup.sh` first, then BUILD_DIR is $kiln_build.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_gpu  # noqa: E402  (the models, their export and the device's triple)
import heldout_models  # noqa: E402  (and the held-out ones, by name as bench_gpu.py takes them)

for _name, _build in heldout_models.HELDOUT.items():
    bench_gpu.MODELS.setdefault(_name, (_build, None))


def parse_setting(text):
    name, _, rest = text.partition(":")
    env, flags = {}, []
    for item in filter(None, rest.split(",")):
        if item.startswith("--flags="):
            flags += item[len("--flags="):].split()
        else:
            var, _, value = item.partition("=")
            env[var] = value
    return name, env, flags


def kernel_times(profile):
    """{kernel: [dispatches, mean GPU ms a call]} from kiln-run-module's
    --slowest_dispatches lines ("[statistics]  0.024  NAME grid X")."""
    totals = {}
    for found in re.finditer(r"^\[statistics\] +([0-9.]+) +([A-Za-z0-9_]+) grid ", profile,
                             re.MULTILINE):
        # gemm_coopmat_f16_8_1_0_0 -> gemm_coopmat; norm_parts_1_1_3 -> norm_parts
        # (the casts' names are whole: cast_f32_to_f16)
        kernel = found.group(2)
        if not kernel.startswith("cast_"):
            kernel = re.sub(r"(_f16.*|(_t?[0-9]+)+)$", "", kernel)
        entry = totals.setdefault(kernel, [0, 0.0])
        entry[0] += 1
        entry[1] += float(found.group(1))
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build")
    parser.add_argument("--models", required=True)
    parser.add_argument("--setting", action="append", required=True)
    parser.add_argument("--precision", choices=("f32", "f16"), default="f32")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--profiles", default="")
    args = parser.parse_args()
    settings = [parse_setting(s) for s in args.setting]
    compiler = os.path.join(args.build, "tools/compile/kiln-compile")
    runner = os.path.join(args.build, "tools/run-module/kiln-run-module")
    triple = bench_gpu.device_triple(args.build)
    work = tempfile.mkdtemp(prefix="kiln-ab-")
    models = {}
    jobs = []
    for name in args.models.split(","):
        model, inputs = bench_gpu.MODELS[name][0](0)
        onnx_path = os.path.join(work, name + ".onnx")
        bench_gpu.export(model, inputs, onnx_path)
        with torch.no_grad():
            reference = model(*inputs).numpy().astype(np.float64)
        paths = []
        for i, x in enumerate(inputs):
            paths.append(os.path.join(work, "%s_input_%d.npy" % (name, i)))
            np.save(paths[-1], x.numpy())
        models[name] = (paths, reference)
        for label, env, flags in settings:
            module = os.path.join(work, "%s_%s.kiln" % (name, label))
            command = [compiler, onnx_path, "-o", module, "--precision=" + args.precision] + flags
            if triple:
                command.append("--target-triple=" + triple)
            process = subprocess.Popen(command, env=dict(os.environ, **env),
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            jobs.append((name, label, module, process))
    for name, label, _, process in jobs:
        output, _ = process.communicate()
        if process.returncode:
            sys.exit("kiln-compile failed for %s (%s):\n%s" % (name, label, output[-2000:]))

    def run(name, module, extra):
        command = [runner, "--device=" + os.environ.get("KILN_BENCH_DEVICE", "vulkan"),
                   "--module=" + module, "--function=predict", "--print_statistics",
                   "--output=@" + module + ".out.npy"]
        command += ["--input=@" + p for p in models[name][0]] + extra
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        return done.stdout + done.stderr

    for name, _, module, _ in jobs:
        run(name, module, ["--call_count=1"])
    times = {}
    for _ in range(args.rounds):
        for name, label, module, _ in jobs:
            text = run(name, module, ["--call_count=%d" % args.calls, "--no_timestamps"])
            found = re.search(r"warm call \(median of calls 2..[0-9]+\): ([0-9.]+) ms", text)
            times.setdefault((name, label), []).append(float(found.group(1)) if found else
                                                       float("nan"))
    print("kiln A/B (modules for %s, --precision=%s): %d rounds alternating the settings, "
          "median warm call of %d each; check against PyTorch fp32" % (
              triple or "kiln-compile's default targets", args.precision, args.rounds,
              args.calls))
    print("| model | setting | wall ms per round | median | vs %s | check | diff vs %s |" % (
        settings[0][0], settings[0][0]))
    print("|---|---|---|---|---|---|---|")
    profiles = {}
    for name, label, module, _ in jobs:
        reference = models[name][1]
        got = np.load(module + ".out.npy").astype(np.float64).reshape(reference.shape)
        first = np.load(os.path.join(work, "%s_%s.kiln.out.npy" % (name, settings[0][0])))
        scale = np.abs(reference).max()
        median = statistics.median(times[(name, label)])
        base = statistics.median(times[(name, settings[0][0])])
        print("| %s | %s | %s | %.3f | %.3fx | %.1e | %.1e |" % (
            name, label, ", ".join("%.3f" % t for t in times[(name, label)]), median,
            median / base, np.abs(got - reference).max() / scale,
            np.abs(got - first.astype(np.float64).reshape(reference.shape)).max() / scale))
        if args.profiles:
            os.makedirs(args.profiles, exist_ok=True)
            # As many calls as the timed rounds: ten calls of a batch-1
            # model leave the GPU at its idle clock (345 MHz on the H200).
            text = run(name, module, ["--call_count=%d" % max(10, args.calls),
                                      "--slowest_dispatches=100000"])
            with open(os.path.join(args.profiles, "%s_%s_%s.txt" % (
                    name, args.precision, label)), "w") as f:
                f.write(text)
            profiles[(name, label)] = kernel_times(text)
    if profiles:
        print("\nGPU time a call by kernel (--profiles; mean of %d calls):" % max(10, args.calls))
        print("| model | setting | kernel | dispatches | ms a call |")
        print("|---|---|---|---|---|")
        for (name, label), totals in profiles.items():
            for kernel, (count, ms) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
                print("| %s | %s | %s | %d | %.3f |" % (name, label, kernel, count, ms))


if __name__ == "__main__":
    main()
