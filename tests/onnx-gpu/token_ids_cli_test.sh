#!/bin/bash
# kiln-compile + kiln-run-module on a model whose Gather indices are an
# int64 graph input: ids from an .npy file and from text, negative ids
# wrapping, out-of-range ids giving zeros, and a wrong element type refused.
# Usage: token_ids_cli_test.sh KILN_COMPILE KILN_RUN_MODULE
set -u
compile=$1 run=$2
model=/usr/share/libonnx-testdata/data/node/test_gather_negative_indices/model.onnx
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$compile" "$model" -o "$dir/gather.kiln" || fail "kiln-compile"

# A version 1.0 .npy of int64 [3, -1, 12]: magic, header padded to 64 bytes.
header="{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }"
while (( (10 + ${#header} + 1) % 64 )); do header+=" "; done
{
  printf '\x93NUMPY\x01\x00'
  printf "\\x$(printf %02x $(( (${#header} + 1) & 255 )))\\x$(printf %02x $(( (${#header} + 1) >> 8 )))"
  printf '%s\n' "$header"
  printf '\x03\x00\x00\x00\x00\x00\x00\x00'
  printf '\xff\xff\xff\xff\xff\xff\xff\xff'
  printf '\x0c\x00\x00\x00\x00\x00\x00\x00'
} > "$dir/ids.npy"

data='10xf32=1 2 3 4 5 6 7 8 9 10'
"$run" --module="$dir/gather.kiln" --input="$data" --input=@"$dir/ids.npy" \
    --expected_output='3xf32=4 10 0' || fail "ids from .npy"
"$run" --module="$dir/gather.kiln" --input="$data" --input='3xi64=-10 9 -11' \
    --expected_output='3xf32=1 10 0' || fail "ids as text"
out=$("$run" --module="$dir/gather.kiln" --input="$data" --input='3xi32=0 1 2' 2>&1)
[ $? -ne 0 ] || fail "an i32 view for an i64 input was accepted"
grep -q 'input 1: expected 3xi64' <<<"$out" || fail "unexpected error: $out"
echo "PASS"
