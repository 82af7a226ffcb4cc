#!/bin/sh
# lavapipe (or any device): a decode-shaped MLP (1 x 1024 -> 4096 -> 1024,
# Relu, and the same at 16 rows) and a 2-layer transformer encoder (d 256,
# 4 heads, feed-forward 1024, 1 x 16 tokens; needs torch, skipped without)
# compiled fp32 and with each --quantize layout, timed by kiln-run-module
# (median of CALLS calls) in ROUNDS interleaved rounds (every module once
# per round, so load on a shared machine hits them alike); prints module
# sizes, the median over rounds and each round's median.
# With BASELINE=OTHER_BUILD_DIR each module is also compiled by that
# build's kiln-compile and run in the same rounds (row "LAYOUT@base"): an
# A/B of two builds' kernels on one runtime.
# Usage: [PYTHON=python-with-numpy-and-onnx[-and-torch]] [LAYOUTS="fp32 q4_0 ..."]
#        [BASELINE=DIR] scripts/bench_quant_mlp.sh [BUILD_DIR] [CALLS] [ROUNDS]
set -eu
build=${1:-build}
calls=${2:-30}
rounds=${3:-1}
layouts=${LAYOUTS:-fp32 q4_0 q4_k q8_0 int8}
work=$build/quant-bench
mkdir -p "$work"
"${PYTHON:-python3}" - "$work" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
out = sys.argv[1]
rng = np.random.default_rng(3)
for rows in (1, 16):
    w1 = (rng.standard_normal((1024, 4096)) / 32).astype(np.float32)
    w2 = (rng.standard_normal((4096, 1024)) / 64).astype(np.float32)
    b1 = np.zeros(4096, np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"]),
             helper.make_node("Add", ["h0", "b1"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["h2"]),
             helper.make_node("MatMul", ["h2", "w2"], ["y"])]
    g = helper.make_graph(nodes, "mlp",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 1024])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, 1024])],
                          [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
                           numpy_helper.from_array(w2, "w2")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, "%s/mlp_%d.onnx" % (out, rows))
try:
    import torch
except ImportError:
    print("no torch: the encoder is skipped", file=sys.stderr)
    sys.exit(0)
torch.manual_seed(5)
layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                         dropout=0.0, batch_first=True)
enc = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
with torch.no_grad():  # the layers are clones: give each its own weights
    for prm in enc.parameters():
        prm.copy_(torch.randn_like(prm) * 0.05)
torch.onnx.export(enc, torch.rand(1, 16, 256) * 2 - 1, "%s/enc_16.onnx" % out,
                  opset_version=17, input_names=["x"], output_names=["y"])
PY
models="mlp_1:1x1024 mlp_16:16x1024"
[ -f "$work/enc_16.onnx" ] && models="$models enc_16:1x16x256"
compile() {  # compile BUILD MODEL LAYOUT OUT
  flag=""
  [ "$3" = fp32 ] || flag="--quantize=$3"
  "$1/tools/compile/kiln-compile" "$work/$2.onnx" -o "$4" \
    --target-triple=cpu-llvmpipe-linux --target-triple=hopper-h100-linux $flag >/dev/null
}
runs=""
for spec in $models; do
  model=${spec%%:*}
  for layout in $layouts; do
    compile "$build" "$model" "$layout" "$work/${model}_$layout.kiln"
    runs="$runs $model:$layout"
    if [ -n "${BASELINE:-}" ]; then
      compile "$BASELINE" "$model" "$layout" "$work/${model}_$layout@base.kiln"
      runs="$runs $model:$layout@base"
    fi
  done
done
: >"$work/times.txt"
for round in $(seq "$rounds"); do
  for run in $runs; do
    model=${run%%:*}
    layout=${run#*:}
    shape=$(echo " $models" | sed -n "s/.* $model:\([^ ]*\).*/\1/p")
    "$build/tools/run-module/kiln-run-module" --module="$work/${model}_$layout.kiln" \
      --input="${shape}xf32=0.5" --call_count="$calls" --print_statistics --no_timestamps \
      --output_max_element_count=1 >"$work/run.txt"
    ms=$(sed -n 's/.*median wall time: \([0-9.]*\) ms.*/\1/p' "$work/run.txt")
    echo "$model $layout $ms $(wc -c <"$work/${model}_$layout.kiln")" >>"$work/times.txt"
  done
done
"${PYTHON:-python3}" - "$work/times.txt" <<'PY'
import statistics
import sys
rows = [line.split() for line in open(sys.argv[1])]
print("%-8s %-11s %12s %10s  %s" % ("model", "layout", "module bytes", "median ms", "per round"))
seen = []
for model, layout, _, size in rows:
    if (model, layout) in seen:
        continue
    seen.append((model, layout))
    ms = [float(r[2]) for r in rows if r[0] == model and r[1] == layout]
    print("%-8s %-11s %12s %10.2f  %s" % (model, layout, size, statistics.median(ms),
                                          " ".join("%.2f" % v for v in ms)))
PY
