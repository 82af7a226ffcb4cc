#!/bin/sh
# lavapipe (or any device): a decode-shaped MLP (1 x 1024 -> 4096 -> 1024,
# Relu, and the same at 16 rows) compiled fp32 and with each --quantize
# layout, timed by kiln-run-module (median of CALLS calls), with module sizes.
# Usage: [PYTHON=python-with-numpy-and-onnx] scripts/bench_quant_mlp.sh [BUILD_DIR] [CALLS]
set -eu
build=${1:-build}
calls=${2:-30}
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
PY
printf '%-12s %-6s %12s %16s\n' model layout "module bytes" "median ms/call"
for rows in 1 16; do
  for layout in fp32 q4_0 q4_k q8_0 int8; do
    flag=""
    [ "$layout" = fp32 ] || flag="--quantize=$layout"
    "$build/tools/compile/kiln-compile" "$work/mlp_$rows.onnx" -o "$work/mlp_${rows}_$layout.kiln" \
      --target-triple=cpu-llvmpipe-linux --target-triple=hopper-h100-linux $flag >/dev/null
    "$build/tools/run-module/kiln-run-module" --module="$work/mlp_${rows}_$layout.kiln" \
      --input="${rows}x1024xf32=0.5" --call_count="$calls" --print_statistics \
      --output_max_element_count=1 >"$work/run.txt"
    ms=$(sed -n 's/.*median wall time: \([0-9.]*\) ms.*/\1/p' "$work/run.txt")
    size=$(wc -c <"$work/mlp_${rows}_$layout.kiln")
    printf '%-12s %-6s %12s %16s\n' "mlp ${rows}x1024" "$layout" "$size" "$ms"
  done
done
