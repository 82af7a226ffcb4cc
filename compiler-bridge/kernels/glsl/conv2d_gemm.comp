// 2-D convolution as an implicit GEMM, NCHW, any groups/strides/pads/
// dilations, fused act(conv + bias + residual). Per image and group:
// out[co][pixel] = sum_k W[co][k] * X[k][pixel] with k = (ci, kh, kw); the
// X tile is gathered from the input while it is loaded into shared memory
// (no im2col buffer). Same tiling and spec ids as gemm, so the gemm configs
// apply; better operand reuse than conv2d for wide layers (3x3 ResNet
// convs). Grid: (ceil(OH*OW / (WG_X*TN)), ceil((C_out/groups) / (WG_Y*TM)),
// N * groups).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "activation.glsl"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_GEMM_TM) const uint TM = 4;
layout(constant_id = KILN_SPEC_GEMM_TN) const uint TN = 4;
layout(constant_id = KILN_SPEC_GEMM_TK) const uint TK = 16;
layout(constant_id = KILN_SPEC_GEMM_ACTIVATION) const uint ACTIVATION = 0;
layout(constant_id = KILN_SPEC_GEMM_HAS_BIAS) const bool HAS_BIAS = false;
layout(constant_id = KILN_SPEC_GEMM_HAS_RESIDUAL) const bool HAS_RESIDUAL = false;

layout(set = 0, binding = 0) readonly buffer InputBuffer { STORAGE_T x[]; };
layout(set = 0, binding = 1) readonly buffer WeightBuffer { STORAGE_T w[]; };  // [C_out, C_in/groups, KH, KW]
layout(set = 0, binding = 2) readonly buffer BiasBuffer { STORAGE_T bias[]; };
layout(set = 0, binding = 3) readonly buffer ResidualBuffer { STORAGE_T residual[]; };
layout(set = 0, binding = 4) writeonly buffer OutputBuffer { STORAGE_T y[]; };

#include "conv_params.glsl"

const uint WG_X = gl_WorkGroupSize.x;
const uint WG_Y = gl_WorkGroupSize.y;
const uint TILE_M = WG_Y * TM;
const uint TILE_N = WG_X * TN;
// Rows of the A tile are padded by one float: the loads below write down
// a column, which would otherwise hit one shared-memory bank.
const uint A_STRIDE = TILE_M + 1;
shared float a_tile[TK * A_STRIDE];  // [k][output channel]
shared float b_tile[TK * TILE_N];  // [k][pixel]

void main() {
  const uint n = gl_WorkGroupID.z / p.groups;
  const uint g = gl_WorkGroupID.z % p.groups;
  const uint cog = p.out_channels / p.groups;
  const uint cig = p.in_channels / p.groups;
  const uint khw = p.kernel_h * p.kernel_w;
  const uint k_total = cig * khw;
  const uint pixels = p.out_height * p.out_width;
  const uint plane = p.in_height * p.in_width;
  const uint row0 = gl_WorkGroupID.y * TILE_M;
  const uint col0 = gl_WorkGroupID.x * TILE_N;
  const uint tx = gl_LocalInvocationID.x;
  const uint ty = gl_LocalInvocationID.y;
  const uint tid = ty * WG_X + tx;
  const uint threads = WG_X * WG_Y;
  const uint x_base = (n * p.in_channels + g * cig) * plane;
  const uint w_base = g * cog * k_total;

  float acc[TM * TN];
  for (uint i = 0; i < TM * TN; ++i) acc[i] = 0.0;

  // Input channels [ci_begin, ci_end) as a k range (kernel rows: all).
  const uint k_end = kiln_ci_end(cig) * khw;
  for (uint k0 = p.ci_begin * khw; k0 < k_end; k0 += TK) {
    for (uint i = tid; i < TK * TILE_M; i += threads) {
      uint kk = i % TK, mm = i / TK;
      uint row = row0 + mm, k = k0 + kk;
      a_tile[kk * A_STRIDE + mm] =
          (row < cog && k < k_end) ? LOAD(w[w_base + row * k_total + k]) : 0.0;
    }
    for (uint i = tid; i < TK * TILE_N; i += threads) {
      uint nn = i % TILE_N, kk = i / TILE_N;
      uint pix = col0 + nn, k = k0 + kk;
      float v = 0.0;
      if (pix < pixels && k < k_end) {
        uint ci = k / khw, r = k % khw;
        uint kh = r / p.kernel_w, kw = r % p.kernel_w;
        int ih = int((pix / p.out_width) * p.stride_h + kh * p.dilation_h) - int(p.pad_top);
        int iw = int((pix % p.out_width) * p.stride_w + kw * p.dilation_w) - int(p.pad_left);
        if (ih >= 0 && ih < int(p.in_height) && iw >= 0 && iw < int(p.in_width)) {
          v = LOAD(x[x_base + ci * plane + uint(ih) * p.in_width + uint(iw)]);
        }
      }
      b_tile[kk * TILE_N + nn] = v;
    }
    barrier();
    for (uint kk = 0; kk < TK; ++kk) {
      float bv[TN];
      for (uint j = 0; j < TN; ++j) bv[j] = b_tile[kk * TILE_N + tx + j * WG_X];
      for (uint i = 0; i < TM; ++i) {
        float av = a_tile[kk * A_STRIDE + ty + i * WG_Y];
        for (uint j = 0; j < TN; ++j) acc[i * TN + j] += av * bv[j];
      }
    }
    barrier();
  }

  for (uint i = 0; i < TM; ++i) {
    uint row = row0 + ty + i * WG_Y;
    if (row >= cog) continue;
    uint co = g * cog + row;
    for (uint j = 0; j < TN; ++j) {
      uint pix = col0 + tx + j * WG_X;
      if (pix >= pixels) continue;
      uint out_index = (n * p.out_channels + co) * pixels + pix;
      float v = acc[i * TN + j];
      if (HAS_BIAS) v += LOAD(bias[co]);
      if (HAS_RESIDUAL) v += LOAD(residual[out_index]);
      y[out_index] = STORE(kiln_activate(ACTIVATION, v, p.alpha, p.beta));
    }
  }
}
