#!/bin/sh
# MobileNetV2 per-call latency, in one run on this machine: kiln on the
# default Vulkan device (compiled with kiln-compile, timed by
# kiln-run-module --call_count --print_statistics: one submission per call
# after the first) next to Debian's PyTorch on the CPU.
#
# Usage: scripts/bench_mobilenet.sh [BUILD_DIR] [CALLS]
#   BUILD_DIR: a meson build dir holding kiln-compile and kiln-run-module
#              (default: build-rel; use a non-sanitized release build)
#   CALLS:     calls per side (default 20)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build-rel}
calls=${2:-20}
python=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

model="$work/models/mobilenet_v2/model.onnx"
"$python" "$here/export_models.py" "$work/models" mobilenet_v2 >/dev/null
"$build/tools/compile/kiln-compile" "$model" -o "$work/mobilenet_v2.kiln"

"$build/tools/run-module/kiln-run-module" --module="$work/mobilenet_v2.kiln" \
  --input=1x3x224x224xf32=0.5 --call_count="$calls" --print_statistics \
  --output_max_element_count=1 >"$work/kiln.txt"
kiln_ms=$(sed -n 's/.*median wall time: \([0-9.]*\) ms.*/\1/p' "$work/kiln.txt")
first_ms=$(sed -n 's/.*first call (records, builds pipelines): \([0-9.]*\) ms.*/\1/p' "$work/kiln.txt")
device=$("$build/tools/run-module/kiln-run-module" --dump_devices 2>/dev/null | \
         sed -n "s/^  name  *//p" | head -n 1 || true)

torch_line=$("$python" "$here/bench_torch_mobilenet.py" "$calls")
torch_ms=$(echo "$torch_line" | awk '{print $2}')
threads=$(echo "$torch_line" | awk '{print $4}')

printf '%-40s %14s\n' "MobileNetV2 1x3x224x224 f32, $calls calls" "median ms/call"
printf '%-40s %14s\n' "kiln, Vulkan ${device:-default device}" "$kiln_ms"
printf '%-40s %14s\n' "PyTorch $("$python" -c 'import torch; print(torch.__version__)') CPU, $threads threads" "$torch_ms"
printf '%-40s %14s\n' "ratio PyTorch / kiln (>1: kiln faster)" \
  "$(awk -v k="$kiln_ms" -v t="$torch_ms" 'BEGIN { printf "%.2f", t / k }')"
# PyTorch picks its thread count itself (one here); lavapipe uses every
# core, so also show PyTorch on every core for a like-for-like row.
cores=$(nproc)
if [ "$threads" != "$cores" ]; then
  all_line=$("$python" "$here/bench_torch_mobilenet.py" "$calls" "$cores")
  all_ms=$(echo "$all_line" | awk '{print $2}')
  printf '%-40s %14s\n' "PyTorch CPU, $cores threads (all cores)" "$all_ms"
  printf '%-40s %14s\n' "ratio PyTorch all cores / kiln" \
    "$(awk -v k="$kiln_ms" -v t="$all_ms" 'BEGIN { printf "%.2f", t / k }')"
fi
printf '(kiln first call, recording + pipelines: %s ms)\n' "$first_ms"
