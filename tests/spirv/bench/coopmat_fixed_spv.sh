#!/usr/bin/env bash
# Pre-specialized f16 builds of gemm_coopmat for `kiln-kernels-bench
# --coopmat` (KILN_COOPMAT_SPV_DIR): each tiling's spec constants frozen and
# folded, then spirv-opt -O, so its loops are unrolled before the driver
# sees the module. The bench times them beside the library build (rows
# "F16 ..."): the difference is what the driver's own specialization loses.
#   coopmat_fixed_spv.sh OUT_DIR "WM WN TM TN BK" ...
set -euo pipefail
here=$(cd "$(dirname "$0")/../../.." && pwd)
out=$1
shift
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
glslc --target-env=vulkan1.1 -O -DKILN_FP16_STORAGE -I"$here/include/kiln/compiler" \
  -I"$here/compiler-bridge/kernels/glsl" -fshader-stage=comp \
  "$here/compiler-bridge/kernels/glsl/gemm_coopmat.comp" -o "$tmp/base.spv"
# The MMA-rate probes (coopmat_peak.comp), from registers and with loads.
for loads in "" -DKILN_PEAK_LOADS; do
  glslc --target-env=vulkan1.1 -O $loads -I"$here/include/kiln/compiler" \
    -I"$here/compiler-bridge/kernels/glsl" -fshader-stage=comp \
    "$here/tests/spirv/bench/coopmat_peak.comp" -o "$out/peak${loads:+_loads}.spv"
done
for tiling in "$@"; do
  read -r wm wn tm tn bk <<<"$tiling"
  for km in 0 1; do
    kb=$([ $km = 1 ] && echo true || echo false)
    name="$out/f16_${wm}x${wn}_${tm}x${tn}_bk${bk}_km${km}.spv"
    spirv-opt --target-env=vulkan1.1 \
      --set-spec-const-default-value "0:$((wm * wn * 32)) 9:$wm 10:$wn 11:$tm 12:$tn 13:$bk 14:$kb" \
      --freeze-spec-const --fold-spec-const-op-composite --unify-const -O --loop-unroll -O \
      "$tmp/base.spv" -o "$name"
    spirv-val --target-env vulkan1.1 "$name"
  done
done
