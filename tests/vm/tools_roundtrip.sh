#!/usr/bin/env bash
# kiln-compile + kiln-dump-module from the command line: each test module
# assembles, dumps, and the dump reassembles to identical bytes; .onnx and
# unknown inputs give clear errors (a missing .onnx names the file).
set -euo pipefail
compile=$1
dump=$2
testdata=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for source in "$testdata"/*.kasm; do
  name=$(basename "${source%.kasm}")
  "$compile" "$source" -o "$work/$name.kiln"
  "$dump" "$work/$name.kiln" > "$work/$name.dump.kasm"
  "$compile" "$work/$name.dump.kasm" -o "$work/$name.again.kiln"
  cmp "$work/$name.kiln" "$work/$name.again.kiln"
  echo "ok: $name round-trips"
done
if "$compile" model.onnx -o "$work/x.kiln" 2> "$work/err.txt"; then
  echo "kiln-compile accepted an .onnx input"; exit 1
fi
grep -qE "cannot open 'model.onnx'|built without ONNX support" "$work/err.txt"
if "$compile" prog.txt -o "$work/x.kiln" 2> "$work/err.txt"; then exit 1; fi
grep -q "unknown input kind" "$work/err.txt"
printf 'func f "v_v"\n  bogus\nend\n' > "$work/bad.kasm"
if "$compile" "$work/bad.kasm" -o "$work/bad.kiln" 2> "$work/err.txt"; then exit 1; fi
grep -q "bad.kasm:2: unknown instruction 'bogus'" "$work/err.txt"
head -c 100 "$work/features.kiln" > "$work/cut.kiln"
if "$dump" "$work/cut.kiln" > /dev/null 2> "$work/err.txt"; then exit 1; fi
grep -q "OUT_OF_RANGE" "$work/err.txt"
echo "ok: errors"
