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
if [ ! -d "$models" ]; then
  start=$(date +%s)
  # The current exporter defaults to dynamo; the tests' models are the
  # TorchScript exporter's, as with Debian's PyTorch. One model's failure
  # is reported and the others still export.
  python3 - "$models" <<'PY'
import functools, importlib.util, os, sys, torch
torch.onnx.export = functools.partial(torch.onnx.export, dynamo=False)
spec = importlib.util.spec_from_file_location("export_models", "scripts/export_models.py")
exporter = importlib.util.module_from_spec(spec)
spec.loader.exec_module(exporter)
os.makedirs(sys.argv[1], exist_ok=True)
for name in exporter.MODELS:
    try:
        exporter.export(name, sys.argv[1])
    except Exception as error:
        print("%s: export failed: %s" % (name, str(error).splitlines()[-1][:300] if str(error) else repr(error)))
PY
  echo "models exported in $(( $(date +%s) - start )) s: $(ls "$models" | wc -l)"
fi
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  tests=(hal_conformance hal_conformance_vk11 hal_variant_interface spirv_gpu
         spirv_gpu_hal spirv_hal samples samples_vk11 session_threads vulkan_floor
         onnx_gpu_nodes onnx_gpu_kiln_nodes onnx_gpu_loop_limits
         onnx_gpu_loop_limits_linear onnx_gpu_models onnx_gpu_models_vk11
         onnx_compile_cli onnx_gpu_token_ids_cli)
fi
KILN_TEST_DEVICE=vulkan KILN_VULKAN_VALIDATION=1 \
  python3 scripts/run-built-tests.py "$build" "${tests[@]}"
