#!/usr/bin/env bash
# The MMA-rate probes for `kiln-kernels-bench --coopmat`
# (KILN_COOPMAT_SPV_DIR): coopmat_peak.comp built twice, multiply-adds on
# fragments in registers (peak.spv) and with gemm_coopmat's shared-memory
# loads (peak_loads.spv), each also with 2x2 and 4x4 fragments per
# subgroup: the driver's rate to hold gemm_coopmat against.
#   coopmat_probe_spv.sh OUT_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")/../../.." && pwd)
out=$1
mkdir -p "$out"
# Fragments per subgroup (A x B): 2x4 (peak*.spv), 2x2 and 4x4
# (peak*_2x2.spv, peak*_4x4.spv: gemm_coopmat's medium and big blocks).
for tiles in "2 4" "2 2" "4 4"; do
  set -- $tiles
  suffix=$([ "$1x$2" = 2x4 ] || echo "_$1x$2")
  for loads in "" -DKILN_PEAK_LOADS; do
    spv="$out/peak${loads:+_loads}$suffix.spv"
    glslc --target-env=vulkan1.1 -O $loads -DKILN_PEAK_TA=$1 -DKILN_PEAK_TB=$2 \
      -I"$here/include/kiln/compiler" -I"$here/compiler-bridge/kernels/glsl" \
      -fshader-stage=comp "$here/tests/spirv/bench/coopmat_peak.comp" -o "$spv"
    spirv-val --target-env vulkan1.1 "$spv"
  done
done
