#!/usr/bin/env bash
# Builds the libFuzzer targets with clang + ASan/UBSan into build-fuzz/ and
# runs each for a bounded time on a seed corpus (the test modules; ONNX node-test models for the ONNX importer;
# sample modules and compiled ONNX models for the module interface fuzzer).
# Usage: scripts/fuzz.sh [seconds per target, default 60]. Exits non-zero
# when a target crashes, leaks, times out or fails to build.
set -euo pipefail
seconds=${1:-60}
here=$(cd "$(dirname "$0")/.." && pwd)
build="$here/build-fuzz"
cd "$here"

# Every C file gets coverage instrumentation (fuzzer-no-link); the targets
# themselves link libFuzzer (tests/fuzz/meson.build).
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ meson setup "$build" -Dfuzzers=true -Dtests=true \
    -Db_sanitize=address,undefined -Db_lundef=false -Dvulkan=disabled \
    -Donnx=enabled -Dc_args=-fsanitize=fuzzer-no-link
else
  # Older fuzz builds were configured without the ONNX front end.
  meson configure "$build" -Donnx=enabled >/dev/null
fi
# Sample modules (GLSL kernels + assembly) seed the interface fuzzer.
sample_modules=$(ninja -C "$build" -t targets all | sed -n 's|^\(samples/[a-z_]*\.kiln\):.*|\1|p')
ninja -C "$build" -j2 tests/fuzz/kiln_module_load_fuzzer \
  tests/fuzz/kiln_module_run_fuzzer tests/fuzz/kiln_input_fuzzer \
  tests/fuzz/kiln_onnx_import_fuzzer tests/fuzz/kiln_module_interface_fuzzer \
  tools/compile/kiln-compile $sample_modules

# Seed corpus: every test assembly file compiled to a module.
seeds="$build/fuzz-seeds"
rm -rf "$seeds"
mkdir -p "$seeds"
for source in tests/vm/testdata/*.kasm; do
  "$build/tools/compile/kiln-compile" "$source" \
    -o "$seeds/$(basename "${source%.kasm}").kiln"
done

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Seeds for the input fuzzer: --input texts and a small .npy file.
input_seeds="$build/fuzz-input-seeds"
rm -rf "$input_seeds"
mkdir -p "$input_seeds"
printf '2x2xf32=[1 2][3 4]' > "$input_seeds/list.txt"
printf '1x3xi8=7' > "$input_seeds/splat.txt"
printf 'f64=-1.5e3' > "$input_seeds/scalar.txt"
printf "\x93NUMPY\x01\x00\x36\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n\x00\x00\x80\x3f\x00\x00\x00\x40" \
  > "$input_seeds/two.npy"

# Seeds for the ONNX fuzzer: the small models of ONNX's node tests.
onnx_seeds="$build/fuzz-onnx-seeds"
rm -rf "$onnx_seeds"
mkdir -p "$onnx_seeds"
for model in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
  [ -f "$model" ] || continue
  if [ "$(stat -c %s "$model")" -lt 4096 ]; then
    cp "$model" "$onnx_seeds/$(basename "$(dirname "$model")").onnx"
  fi
done

# Seeds for the interface fuzzer: real modules with real SPIR-V (the
# samples, and ONNX node-test models compiled for every default target).
interface_seeds="$build/fuzz-interface-seeds"
rm -rf "$interface_seeds"
mkdir -p "$interface_seeds"
cp "$seeds"/*.kiln "$interface_seeds/"
for module in $sample_modules; do
  cp "$build/$module" "$interface_seeds/"
done
for name in conv_with_strides_padding matmul_2d softmax_axis_1 relu add \
            maxpool_2d_default gemm_default_no_bias reduce_mean_default_axes_keepdims_example; do
  model=/usr/share/libonnx-testdata/data/node/test_$name/model.onnx
  [ -f "$model" ] || continue
  "$build/tools/compile/kiln-compile" "$model" -o "$interface_seeds/$name.kiln" >/dev/null
done

# KILN_FUZZ_RUNS=N makes a run reproducible: a fixed seed and at most N
# executions per target (the test script uses this, so CI explores exactly
# what was explored before landing; time stays an upper bound).
determinism=""
if [ -n "${KILN_FUZZ_RUNS:-}" ]; then
  determinism="-runs=$KILN_FUZZ_RUNS -seed=${KILN_FUZZ_SEED:-1}"
fi
status=0
for target in kiln_module_load_fuzzer kiln_module_run_fuzzer kiln_input_fuzzer \
              kiln_onnx_import_fuzzer kiln_module_interface_fuzzer; do
  work="$build/fuzz-out/$target"
  rm -rf "$work/corpus"
  mkdir -p "$work/corpus"
  if [ "$target" = kiln_input_fuzzer ]; then
    cp "$input_seeds"/* "$work/corpus/"
  elif [ "$target" = kiln_onnx_import_fuzzer ]; then
    cp "$onnx_seeds"/* "$work/corpus/"
  elif [ "$target" = kiln_module_interface_fuzzer ]; then
    cp "$interface_seeds"/* "$work/corpus/"
  else
    cp "$seeds"/*.kiln "$work/corpus/"
    # Inputs that once crashed a fuzzer stay in the corpus for good.
    cp tests/vm/testdata/fuzz_regressions/* "$work/corpus/"
  fi
  # Real modules (SPIR-V for several targets) need room to mutate in.
  max_len=8192
  if [ "$target" = kiln_module_interface_fuzzer ]; then max_len=262144; fi
  echo "== $target for ${seconds}s"
  if ! (cd "$work" && "$build/tests/fuzz/$target" -max_total_time="$seconds" $determinism \
          -timeout=10 -rss_limit_mb=2048 -max_len=$max_len -print_final_stats=1 \
          corpus > log.txt 2>&1); then
    echo "$target FAILED; see $work/log.txt and crash files in $work"
    tail -40 "$work/log.txt"
    status=1
  else
    grep -E "stat::number_of_executed_units|Done" "$work/log.txt" | tail -2
  fi
done
exit $status
