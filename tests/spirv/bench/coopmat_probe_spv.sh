#!/usr/bin/env bash
# The MMA-rate probes for `kiln-kernels-bench --coopmat`
# (KILN_COOPMAT_SPV_DIR): coopmat_peak.comp built twice, multiply-adds on
# fragments in registers (peak.spv) and with gemm_coopmat's shared-memory
# loads (peak_loads.spv): the driver's rate to hold gemm_coopmat against.
#   coopmat_probe_spv.sh OUT_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")/../../.." && pwd)
out=$1
mkdir -p "$out"
for loads in "" -DKILN_PEAK_LOADS; do
  glslc --target-env=vulkan1.1 -O $loads -I"$here/include/kiln/compiler" \
    -I"$here/compiler-bridge/kernels/glsl" -fshader-stage=comp \
    "$here/tests/spirv/bench/coopmat_peak.comp" -o "$out/peak${loads:+_loads}.spv"
  spirv-val --target-env vulkan1.1 "$out/peak${loads:+_loads}.spv"
done
