#!/usr/bin/env bash
# Fixed-tiling f16 builds of gemm_coopmat for `kiln-kernels-bench
# --coopmat` (KILN_COOPMAT_SPV_DIR): the tiling as literal constants
# (KILN_COOPMAT_FIXED_TILING; the epilogue and B layout stay spec
# constants), so glslc / spirv-opt unroll its loops before the driver sees
# the module. The bench times them beside the library build (rows
# "F16 ..."): the difference is what the driver's own specialization loses.
#   coopmat_fixed_spv.sh OUT_DIR "WM WN TM TN BK" ...
set -euo pipefail
here=$(cd "$(dirname "$0")/../../.." && pwd)
out=$1
shift
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The MMA-rate probes (coopmat_peak.comp), from registers and with loads.
for loads in "" -DKILN_PEAK_LOADS; do
  glslc --target-env=vulkan1.1 -O $loads -I"$here/include/kiln/compiler" \
    -I"$here/compiler-bridge/kernels/glsl" -fshader-stage=comp \
    "$here/tests/spirv/bench/coopmat_peak.comp" -o "$out/peak${loads:+_loads}.spv"
done
for tiling in "$@"; do
  read -r wm wn tm tn bk <<<"$tiling"
  name="$out/f16_${wm}x${wn}_${tm}x${tn}_bk${bk}.spv"
  glslc --target-env=vulkan1.1 -O -DKILN_FP16_STORAGE -DKILN_COOPMAT_FIXED_TILING \
    -DKILN_CM_WM="$wm" -DKILN_CM_WN="$wn" -DKILN_CM_TM="$tm" -DKILN_CM_TN="$tn" -DKILN_CM_BK="$bk" \
    -I"$here/include/kiln/compiler" -I"$here/compiler-bridge/kernels/glsl" -fshader-stage=comp \
    "$here/compiler-bridge/kernels/glsl/gemm_coopmat.comp" -o "$tmp/fixed.spv"
  spirv-opt --target-env=vulkan1.1 --loop-unroll -O "$tmp/fixed.spv" -o "$name"
  spirv-val --target-env vulkan1.1 "$name"
done
