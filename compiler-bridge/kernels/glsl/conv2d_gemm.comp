// 2-D convolution as an implicit GEMM, NCHW, any groups/strides/pads/
// dilations, fused act(conv + bias + residual). Per image and group:
// out[co][pixel] = sum_k W[co][k] * X[k][pixel] with k = (ci, kh, kw), on
// gemm's register-tiled core (gemm_tile.glsl; same spec ids and tilings):
// A = the weights (quads along k, vec4 loads where aligned), B = the image,
// gathered while it is staged (implicit im2col, no buffer): quads of 4
// pixels of one k. Grid: (ceil(OH*OW / (WG_X*TN)), ceil((C_out/groups) /
// (WG_Y*TM)), N * groups).
// The qconv2d_gemm builds (KILN_QCONV; qconv2d_gemm_f16 adds
// KILN_FP16_STORAGE: image, bias, residual and output fp16, the weight
// words unchanged): the weights are a quantized matrix
// [C_out][C_in/groups*KH*KW] (rows in im2col's k order, one quant.h
// layout, spec constant LAYOUT), decoded by the A loader.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "activation.glsl"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_GEMM_TM) const uint TM = 8;
layout(constant_id = KILN_SPEC_GEMM_TN) const uint TN = 8;
layout(constant_id = KILN_SPEC_GEMM_TK) const uint TK = 8;
layout(constant_id = KILN_SPEC_GEMM_ACTIVATION) const uint ACTIVATION = 0;
layout(constant_id = KILN_SPEC_GEMM_HAS_BIAS) const bool HAS_BIAS = false;
layout(constant_id = KILN_SPEC_GEMM_HAS_RESIDUAL) const bool HAS_RESIDUAL = false;

layout(set = 0, binding = 0) readonly buffer InputBuffer { STORAGE_T x[]; };
#ifdef KILN_QCONV
layout(constant_id = KILN_SPEC_QGEMM_LAYOUT) const uint LAYOUT = KILN_QGEMM_Q4_0;
#include "qweight.glsl"  // binding 1
#else
layout(set = 0, binding = 1) readonly buffer WeightBuffer { STORAGE_VEC4_T w4[]; };  // [C_out, C_in/groups, KH, KW]
#endif
layout(set = 0, binding = 2) readonly buffer BiasBuffer { STORAGE_VEC4_T bias4[]; };
layout(set = 0, binding = 3) readonly buffer ResidualBuffer { STORAGE_VEC4_T residual4[]; };
KILN_OUTPUT_BUFFER(4)

#include "conv_params.glsl"
#include "gemm_tile.glsl"

uint cog, k_total, k_end, khw, pixels, x_base, w_base, image, group;

#ifdef KILN_QCONV
uint qrow_bytes;  // bytes of one packed weight row

vec4 kiln_gemm_load_a(uint row, uint k) {  // weights of channel row, k..k+3
  if (row >= cog) return vec4(0);
  const uint at = (group * cog + row) * qrow_bytes;
  if ((k & 3u) == 0 && k + 3 < k_end) return qweight_quad(at, k);
  // A split reduction's unaligned start or its end.
  return vec4(k < k_end ? qweight_elem(at, k) : 0.0, k + 1 < k_end ? qweight_elem(at, k + 1) : 0.0,
              k + 2 < k_end ? qweight_elem(at, k + 2) : 0.0,
              k + 3 < k_end ? qweight_elem(at, k + 3) : 0.0);
}

// kiln_quant_row_bytes (quant_layout.c) for k_total, a multiple of the block.
uint kiln_qrow_bytes(uint k) {
  if (LAYOUT == KILN_QGEMM_Q4_0) return k / 32u * 18u;
  if (LAYOUT == KILN_QGEMM_Q8_0) return k / 32u * 34u;
  if (LAYOUT == KILN_QGEMM_Q4_K) return k / 256u * 144u;
  if (LAYOUT == KILN_QGEMM_Q4_ZP) return k / 32u * 28u;
  return 4u + k;  // KILN_QGEMM_INT8
}
#else
vec4 kiln_gemm_load_a(uint row, uint k) {  // weights of channel row, k..k+3
  if (row >= cog) return vec4(0);
  const uint at = w_base + row * k_total + k;
  if ((at & 3) == 0 && k + 3 < k_end) return LOAD4(w4[at >> 2]);
  return vec4(k < k_end ? LOAD_AT(w4, at) : 0.0, k + 1 < k_end ? LOAD_AT(w4, at + 1) : 0.0,
              k + 2 < k_end ? LOAD_AT(w4, at + 2) : 0.0,
              k + 3 < k_end ? LOAD_AT(w4, at + 3) : 0.0);
}
#endif

// One tap of the window for output pixel (oh, ow) = pix; `plane` is the
// input channel's first element, (ih0, iw0) the tap's offset.
float tap_at(uint plane, int ih0, int iw0, uint oh, uint ow, uint pix) {
  if (pix >= pixels) return 0.0;
  const int ih = int(oh * p.stride_h) + ih0;
  const int iw = int(ow * p.stride_w) + iw0;
  if (ih < 0 || ih >= int(p.in_height) || iw < 0 || iw >= int(p.in_width)) return 0.0;
  return LOAD(x[plane + uint(ih) * p.in_width + uint(iw)]);
}

// Pixels pix..pix+3 of k: the divisions that split k into (ci, kh, kw) and
// pix into (oh, ow) once per quad, the next pixels by stepping ow (they
// dominated the gather on GPUs).
vec4 kiln_gemm_load_b(uint k, uint pix) {
  if (k >= k_end || pix >= pixels) return vec4(0);
  const uint ci = k / khw, r = k - ci * khw;
  const uint kh = r / p.kernel_w, kw = r - kh * p.kernel_w;
  const int ih0 = int(kh * p.dilation_h) - int(p.pad_top);
  const int iw0 = int(kw * p.dilation_w) - int(p.pad_left);
  const uint plane = x_base + ci * p.in_height * p.in_width;
  uint oh = pix / p.out_width, ow = pix - oh * p.out_width;
  vec4 v;
  v.x = tap_at(plane, ih0, iw0, oh, ow, pix);
  if (++ow == p.out_width) { ow = 0; ++oh; }
  v.y = tap_at(plane, ih0, iw0, oh, ow, pix + 1);
  if (++ow == p.out_width) { ow = 0; ++oh; }
  v.z = tap_at(plane, ih0, iw0, oh, ow, pix + 2);
  if (++ow == p.out_width) { ow = 0; ++oh; }
  v.w = tap_at(plane, ih0, iw0, oh, ow, pix + 3);
  return v;
}

void kiln_gemm_epilogue(uint row, uint pix, vec4 v) {
  const uint co = group * cog + row;
  const uint o = (image * p.out_channels + co) * pixels + pix;
  if (HAS_BIAS) v += LOAD_AT(bias4, co);
  const bool whole = (pixels & 3) == 0;  // o is a multiple of 4 and pix + 3 < pixels
  if (HAS_RESIDUAL) {
    if (whole) {
      v += LOAD4(residual4[o >> 2]);
    } else {
      for (uint j = 0; j < 4; ++j) {
        if (pix + j < pixels) v[j] += LOAD_AT(residual4, o + j);
      }
    }
  }
  for (uint j = 0; j < 4; ++j) v[j] = kiln_activate(ACTIVATION, v[j], p.alpha, p.beta);
  if (whole) {
    kiln_store4(o, v);
  } else {
    for (uint j = 0; j < 4; ++j) {
      if (pix + j < pixels) kiln_store1(o + j, v[j]);
    }
  }
}

void main() {
  image = gl_WorkGroupID.z / p.groups;
  group = gl_WorkGroupID.z % p.groups;
  cog = p.out_channels / p.groups;
  const uint cig = p.in_channels / p.groups;
  khw = p.kernel_h * p.kernel_w;
  k_total = cig * khw;
  pixels = p.out_height * p.out_width;
  x_base = (image * p.in_channels + group * cig) * p.in_height * p.in_width;
  w_base = group * cog * k_total;
#ifdef KILN_QCONV
  qrow_bytes = kiln_qrow_bytes(k_total);
#endif
  // Input channels [ci_begin, ci_end) and kernel rows [kh_begin, kh_end)
  // as one k range: the split (lower_split.c) takes partial rows only of
  // a single channel, so the range is contiguous.
  const uint ci_end = kiln_ci_end(cig);
  const uint k_begin = p.ci_begin * khw + p.kh_begin * p.kernel_w;
  k_end = ci_end > p.ci_begin ? (ci_end - 1) * khw + kiln_kh_end() * p.kernel_w : k_begin;
  kiln_gemm_a_along_k = true;
  kiln_gemm_b_along_k = false;
  const uint row0 = gl_WorkGroupID.y * TILE_M;
  const uint col0 = gl_WorkGroupID.x * TILE_N;
  kiln_gemm_mainloop(row0, col0, k_begin, k_end);
  kiln_gemm_store(row0, col0, cog, pixels);
}
