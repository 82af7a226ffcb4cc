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
if "$compile" "$nodes/test_maxpool_3d_default/model.onnx" -o "$dir/bad.kiln" \
    2> "$dir/err.txt"; then
  fail "an unsupported model compiled"
fi
grep -q "MaxPool" "$dir/err.txt" || fail "refusal does not name the op: $(cat "$dir/err.txt")"
[ -e "$dir/bad.kiln" ] && fail "a refused model left a module"
[ -e "$dir/bad.kiln.partial" ] && fail "a refused model left a partial file"
echo "ok: refusal"

# --quantize / --print-statistics (docs/quantization.md), with the source
# tree as $2: the dynamo MLP's two MatMul weights packed as q4_0, the
# module smaller than the fp32 one; an unknown layout refused.
src=${2:-}
if [ -n "$src" ]; then
  mlp=$src/tests/data/dynamo/mlp/model.onnx
  "$compile" "$mlp" -o "$dir/mlp.kiln" 2> /dev/null || fail "mlp fp32"
  "$compile" "$mlp" -o "$dir/mlp_q4.kiln" --quantize=q4_0 --print-statistics \
      > "$dir/stats.txt" 2> /dev/null || fail "mlp --quantize=q4_0"
  grep -q "^quantize q4_0: 2 weights, 10752 fp32 bytes -> 1520 bytes" "$dir/stats.txt" ||
    fail "statistics: $(cat "$dir/stats.txt")"
  [ "$(wc -c < "$dir/mlp_q4.kiln")" -lt "$(wc -c < "$dir/mlp.kiln")" ] ||
    fail "the q4_0 module is not smaller"
  if "$compile" "$mlp" -o "$dir/bad.kiln" --quantize=q5_1 2> "$dir/err.txt"; then
    fail "an unknown layout was accepted"
  fi
  grep -q "unknown quantization 'q5_1'" "$dir/err.txt" || fail "layout refusal: $(cat "$dir/err.txt")"
  echo "ok: --quantize"
fi
