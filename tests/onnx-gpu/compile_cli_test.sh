#!/bin/bash
# kiln-compile on ONNX: the module streams to OUTPUT.partial and is renamed
# only after it verifies; --dump-assembly is the disassembly of the written
# module and assembles back to identical bytes; a refused model leaves no
# output and no partial file; the progress line stays off when stderr is
# not a terminal. Usage: compile_cli_test.sh KILN_COMPILE [SOURCE_ROOT]
set -u
compile=$1
nodes=/usr/share/libonnx-testdata/data/node
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for name in test_conv_with_strides_padding test_split_equal_parts_1d; do
  "$compile" "$nodes/$name/model.onnx" -o "$dir/$name.kiln" \
      --dump-assembly="$dir/$name.kasm" 2> "$dir/stderr.txt" || fail "kiln-compile $name"
  [ -s "$dir/stderr.txt" ] && fail "$name: output on a non-terminal stderr: $(cat "$dir/stderr.txt")"
  [ -e "$dir/$name.kiln.partial" ] && fail "$name: partial file left behind"
  grep -q "call.import hal.command_buffer.dispatch" "$dir/$name.kasm" || fail "$name: no dispatch in the dump"
  "$compile" "$dir/$name.kasm" -o "$dir/$name.again.kiln" || fail "$name: the dump does not assemble"
  cmp "$dir/$name.kiln" "$dir/$name.again.kiln" || fail "$name: the dump reassembles to other bytes"
  echo "ok: $name"
done

# Refused: no module, no partial file, the node named.
if "$compile" "$nodes/test_convtranspose_3d/model.onnx" -o "$dir/bad.kiln" \
    2> "$dir/err.txt"; then
  fail "an unsupported model compiled"
fi
grep -q "ConvTranspose" "$dir/err.txt" || fail "refusal does not name the op: $(cat "$dir/err.txt")"
[ -e "$dir/bad.kiln" ] && fail "a refused model left a module"
[ -e "$dir/bad.kiln.partial" ] && fail "a refused model left a partial file"
echo "ok: refusal"

# --precision: f16 compiles (its executables are the _f16 builds; the
# portable target keeps a variant that needs 16-bit storage at run time,
# module feature bit 2 = 0x4, so an unnamed GPU with it still runs the
# module); an unknown precision is refused.
conv=$nodes/test_conv_with_strides_padding/model.onnx
"$compile" "$conv" -o "$dir/f16.kiln" --precision=f16 --dump-assembly="$dir/f16.kasm" \
    || fail "--precision=f16"
grep -qE "conv2d(_gemm)?_f16" "$dir/f16.kasm" || fail "--precision=f16: no conv2d_f16 / conv2d_gemm_f16 executable"
grep -qE 'variant "unknown-unknown-unknown" features 0x[0-9a-f]*[4567cdef] ' "$dir/f16.kasm" \
    || fail "--precision=f16: no portable variant requiring 16-bit storage"
if "$compile" "$conv" -o "$dir/f8.kiln" --precision=f8 2> "$dir/err.txt"; then
  fail "--precision=f8 accepted"
fi
grep -q "unknown precision 'f8'" "$dir/err.txt" || fail "precision refusal: $(cat "$dir/err.txt")"
echo "ok: --precision"
# --cooperative-matrix for a target with it: aligned products of 16+ rows
# and columns take gemm_coopmat_f16 (B staged k-major for Gemm's transposed B,
# last op value 1; n-major for MatMul); a small product keeps gemm_f16.
/usr/bin/python3 - "$dir" <<'PY' || fail "writing the coopmat models"
import sys
from onnx import TensorProto, helper, save
def model(name, node, b_shape):
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [2048, 64])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, b_shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2048, 2048])
    graph = helper.make_graph([node], name, [a, b], [y])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
         sys.argv[1] + "/" + name + ".onnx")
model("gemm_tb", helper.make_node("Gemm", ["a", "b"], ["y"], transB=1), [2048, 64])
model("matmul", helper.make_node("MatMul", ["a", "b"], ["y"]), [64, 2048])
PY
for case in "$dir/gemm_tb.onnx gemm_coopmat_f16_0_0_0_1" "$dir/matmul.onnx gemm_coopmat_f16_0_0_0_0" \
            "$nodes/test_matmul_2d/model.onnx gemm_small_f16"; do
  read -r model exe <<<"$case"
  "$compile" "$model" -o "$dir/coop.kiln" --precision=f16 --cooperative-matrix \
      --target-triple=hopper-h100-linux --dump-assembly="$dir/coop.kasm" || fail "coopmat $model"
  grep -q "$exe" "$dir/coop.kasm" || fail "coopmat $model: no $exe executable"
done
# The default is --cooperative-matrix; --no-cooperative-matrix keeps the
# SIMT kernel (gemm_f16's big tiling at 2048 x 2048).
"$compile" "$dir/matmul.onnx" -o "$dir/coop.kiln" --precision=f16 \
    --target-triple=hopper-h100-linux --dump-assembly="$dir/coop.kasm" || fail "coopmat default"
grep -q "gemm_coopmat_f16" "$dir/coop.kasm" || fail "coopmat is not the default"
"$compile" "$dir/matmul.onnx" -o "$dir/coop.kiln" --precision=f16 --no-cooperative-matrix \
    --target-triple=hopper-h100-linux --dump-assembly="$dir/coop.kasm" || fail "no coopmat"
grep -q "gemm_coopmat" "$dir/coop.kasm" && fail "--no-cooperative-matrix still runs gemm_coopmat"
grep -q "executable gemm_f16\|executable gemm_small_f16" "$dir/coop.kasm" ||
  fail "--no-cooperative-matrix: no SIMT gemm"
echo "ok: --cooperative-matrix"
# NonZero runs on the host (docs/partitioning.md): the module calls
# cpu.nonzero; --no-fallback refuses it instead, naming node and flag.
nz=$nodes/test_nonzero_example/model.onnx
"$compile" "$nz" -o "$dir/nz.kiln" --dump-assembly="$dir/nz.kasm" 2> "$dir/err.txt" ||
  fail "NonZero with the fallback: $(cat "$dir/err.txt")"
grep -q "call.import cpu.nonzero" "$dir/nz.kasm" || fail "no cpu.nonzero call in the dump"
if "$compile" "$nz" -o "$dir/strict.kiln" --no-fallback 2> "$dir/err.txt"; then
  fail "--no-fallback compiled a host op"
fi
grep -q "(op NonZero, opset .*--no-fallback forbids" "$dir/err.txt" ||
  fail "--no-fallback refusal: $(cat "$dir/err.txt")"
[ -e "$dir/strict.kiln" ] && fail "a refused model left a module"
echo "ok: --no-fallback"
# --quantize / --print-statistics (docs/quantization.md), with the source
# tree as $2: the dynamo MLP's two MatMul weights packed as q4_0, the
# module's weights smaller than the fp32 one's (this MLP's 10 KiB of
# weights are a sliver of its module, whose size is its kernels'; real
# models' module sizes: docs/quantization.md); an unknown layout refused.
src=${2:-}
if [ -n "$src" ]; then
  mlp=$src/tests/data/dynamo/mlp/model.onnx
  "$compile" "$mlp" -o "$dir/mlp.kiln" --print-statistics > "$dir/stats32.txt" 2> /dev/null ||
    fail "mlp fp32"
  "$compile" "$mlp" -o "$dir/mlp_q4.kiln" --quantize=q4_0 --print-statistics \
      > "$dir/stats.txt" 2> /dev/null || fail "mlp --quantize=q4_0"
  grep -q "^quantize q4_0: 2 weights, 10752 fp32 bytes -> 1520 bytes" "$dir/stats.txt" ||
    fail "statistics: $(cat "$dir/stats.txt")"
  w32=$(sed -n 's/^weights: \([0-9]*\) bytes.*/\1/p' "$dir/stats32.txt")
  w4=$(sed -n 's/^weights: \([0-9]*\) bytes.*/\1/p' "$dir/stats.txt")
  [ -n "$w32" ] && [ -n "$w4" ] && [ "$w4" -lt "$w32" ] ||
    fail "the q4_0 weights are not smaller: '$w4' against '$w32'"
  if "$compile" "$mlp" -o "$dir/bad.kiln" --quantize=q5_1 2> "$dir/err.txt"; then
    fail "an unknown layout was accepted"
  fi
  grep -q "unknown quantization 'q5_1'" "$dir/err.txt" || fail "layout refusal: $(cat "$dir/err.txt")"
  echo "ok: --quantize"
fi
