#!/usr/bin/env bash
# On a GPU machine, from a checkout carrying .gpu/ (scripts/gpu-bundle.sh):
# exports the real-model tests with that machine's PyTorch, runs every suite
# that uses the device (full features, then as a plain Vulkan 1.1 device)
# under the validation layer, and lists the devices.
#   bash scripts/gpu-check.sh [TEST...]     (default: the device suites)
set -uo pipefail
. .gpu/setup.sh || exit 1
build=$kiln_build
run=$build/tools/run-module/kiln-run-module
"$run" --list_devices
"$run" --dump_devices | head -40
"$run" --dump_devices --device='vulkan://0?api=1.1' | grep -iE 'api|uses|timeline' | head
models=$build/tests/onnx/models
start=$(date +%s)
# The current exporter defaults to dynamo; the tests' models are the
# TorchScript exporter's, as with Debian's PyTorch. Models already exported
# (a warm machine) are kept. One model's failure is reported and recorded
# in <model>/export-failed.txt (its partial files removed): under
# KILN_GPU_CHECK=1 the tests that need it skip, naming the file and that
# reason (tests/onnx-gpu/model_compare.h), instead of failing for lack of it.
python3 - "$models" <<'PY'
import functools, importlib.util, inspect, os, shutil, sys, torch
if "dynamo" in inspect.signature(torch.onnx.export).parameters:
    torch.onnx.export = functools.partial(torch.onnx.export, dynamo=False)
sys.path.insert(0, "scripts")
def load(name):
    spec = importlib.util.spec_from_file_location(name, "scripts/%s.py" % name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
models, fp16 = load("export_models"), load("export_fp16_models")
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
# (directory, exporter): the float32 models, then their fp16 copies
# (tests/onnx-gpu/precision_gpu_test.c).
jobs = [(name, functools.partial(models.export, name)) for name in models.MODELS]
jobs += [(name + "_fp16", functools.partial(fp16.export, name)) for name in fp16.NAMES]
failed = 0
for directory, export in jobs:
    path = os.path.join(out, directory)
    if os.path.isfile(os.path.join(path, "output_0.pb")):
        continue
    shutil.rmtree(path, ignore_errors=True)
    try:
        export(out)
    except Exception as error:
        failed += 1
        lines = str(error).strip().splitlines()
        reason = "torch %s could not export it: %s: %s" % (
            torch.__version__, type(error).__name__, lines[-1][:300] if lines else repr(error))
        print("%s: export failed: %s" % (directory, reason))
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "export-failed.txt"), "w") as f:
            f.write(reason + "\n")
print("%d of %d models not exported" % (failed, len(jobs)))
PY
echo "models exported in $(( $(date +%s) - start )) s: $(ls "$models" | wc -l)"
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  tests=(hal_conformance hal_conformance_vk11 hal_variant_interface spirv_gpu
         spirv_gpu_hal spirv_hal samples samples_vk11 session_threads vulkan_floor
         onnx_gpu_nodes onnx_gpu_kiln_nodes onnx_gpu_loop_limits
         onnx_gpu_loop_limits_linear onnx_gpu_models onnx_gpu_models_vk11
         onnx_gpu_precision
         onnx_compile_cli onnx_gpu_token_ids_cli)
fi
# KILN_GPU_CHECK=1: a model this PyTorch could not export is skipped by
# name (tests/onnx-gpu/model_compare.h); everywhere else it fails.
KILN_GPU_CHECK=1 KILN_TEST_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 \
  python3 scripts/run-built-tests.py "$build" "${tests[@]}"
