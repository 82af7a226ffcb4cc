#!/bin/sh
# kiln next to IREE (iree-run-module's peer) on the same ONNX model, the same
# Vulkan device and the same input, measured in one run. IREE is not a
# Debian package: install its wheels yourself first (this script downloads
# nothing), e.g.
#   python3 -m venv /tmp/iree-venv &&
#   /tmp/iree-venv/bin/pip install iree-base-compiler iree-base-runtime onnx
#
# Usage: scripts/bench_iree.sh IREE_VENV MODEL.onnx [BUILD_DIR] [CALLS] [IREE_VULKAN_TARGET]
#   IREE_VENV:  the venv holding iree-compile, iree-import-onnx, iree-benchmark-module
#   BUILD_DIR:  a plain (non-sanitized) kiln build (default: build)
#   CALLS:      kiln calls (default 20); IREE runs its own benchmark loop
#   IREE_VULKAN_TARGET: e.g. ampere, rdna3 (default: IREE's generic target)
# Both sides get the same input (all 0.5) of the model's first input shape.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv=${1:?usage: bench_iree.sh IREE_VENV MODEL.onnx [BUILD_DIR] [CALLS] [TARGET]}
model=${2:?usage: bench_iree.sh IREE_VENV MODEL.onnx [BUILD_DIR] [CALLS] [TARGET]}
build=${3:-build}
calls=${4:-20}
target=${5:-}
for tool in iree-compile iree-import-onnx iree-benchmark-module; do
  if [ ! -x "$venv/bin/$tool" ]; then
    echo "bench_iree.sh: $venv/bin/$tool not found; install IREE's wheels into $venv (see the header of this script)" >&2
    exit 2
  fi
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# IREE's ONNX importer wants opset >= 17 for some ops (BatchNormalization).
"$venv/bin/python" - "$model" "$work/model17.onnx" <<'PY'
import sys, onnx
from onnx import version_converter
m = onnx.load(sys.argv[1])
onnx.save(version_converter.convert_version(m, 17), sys.argv[2])
dims = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
open(sys.argv[2] + ".shape", "w").write("x".join(str(d) for d in dims))
PY
shape=$(cat "$work/model17.onnx.shape")
"$venv/bin/iree-import-onnx" "$work/model17.onnx" -o "$work/model.mlir"
target_flag=""
[ -n "$target" ] && target_flag="--iree-vulkan-target=$target"
"$venv/bin/iree-compile" "$work/model.mlir" --iree-hal-target-device=vulkan $target_flag \
  -o "$work/model.vmfb"
function=$("$venv/bin/iree-dump-module" "$work/model.vmfb" | \
           sed -n 's/^ *\[ *[0-9]*\] \([A-Za-z0-9_]*\)(.*/\1/p' | grep -v '^__' | head -n 1)

"$build/tools/compile/kiln-compile" "$model" -o "$work/model.kiln"
kiln_ms=$("$build/tools/run-module/kiln-run-module" --module="$work/model.kiln" \
  --input="${shape}xf32=0.5" --call_count="$calls" --print_statistics \
  --output_max_element_count=1 | sed -n 's/.*median wall time: \([0-9.]*\) ms.*/\1/p')
iree_ms=$("$venv/bin/iree-benchmark-module" --device=vulkan --module="$work/model.vmfb" \
  --function="$function" --input="${shape}xf32=0.5" --benchmark_repetitions=5 2>/dev/null | \
  awk '/real_time_median/ { print $2 }')

printf '%-44s %14s\n' "$(basename "$(dirname "$model")")/$(basename "$model"), input ${shape}xf32" "median ms/call"
printf '%-44s %14s\n' "kiln (kiln-run-module, $calls calls)" "$kiln_ms"
printf '%-44s %14s\n' "IREE $("$venv/bin/iree-compile" --version | sed -n 's/.*compiler version \([^ ]*\).*/\1/p') (iree-benchmark-module)" "$iree_ms"
printf '%-44s %14s\n' "ratio IREE / kiln (>1: kiln faster)" \
  "$(awk -v k="$kiln_ms" -v i="$iree_ms" 'BEGIN { printf "%.2f", i / k }')"
