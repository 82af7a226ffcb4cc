// Batched tiled GEMM: C[b] = act(A[b] x B[b] + bias + residual).
// Shared-memory tiles of (WG_Y*TM) x TK of A and TK x (WG_X*TN) of B; each
// invocation accumulates a TM x TN register tile. Operands are addressed by
// element strides, so transposes and broadcasts cost nothing here, and a
// 1x1 convolution is this kernel with A = weights, B = the input image.
// Built twice: fp32 storage, and (KILN_FP16_STORAGE) fp16 buffers with fp32
// accumulation.
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

layout(set = 0, binding = 0) readonly buffer ABuffer { STORAGE_T a[]; };
layout(set = 0, binding = 1) readonly buffer BBuffer { STORAGE_T b[]; };
layout(set = 0, binding = 2) readonly buffer BiasBuffer { STORAGE_T bias[]; };
layout(set = 0, binding = 3) readonly buffer ResidualBuffer { STORAGE_T residual[]; };
layout(set = 0, binding = 4) writeonly buffer CBuffer { STORAGE_T c[]; };

// Mirrors kiln_kernel_gemm_params_t (kernels_abi.h).
layout(push_constant) uniform Params {
  uint m, n, k, batch;
  uint a_batch_stride, a_row_stride, a_col_stride;
  uint b_batch_stride, b_row_stride, b_col_stride;
  uint c_batch_stride, c_row_stride;
  uint bias_batch_stride, bias_row_stride, bias_col_stride;
  uint residual_batch_stride, residual_row_stride;
  float scale, alpha, beta;
} p;

const uint WG_X = gl_WorkGroupSize.x;
const uint WG_Y = gl_WorkGroupSize.y;
const uint TILE_M = WG_Y * TM;
const uint TILE_N = WG_X * TN;
// Rows of the A tile are padded by one float: the loads below write down
// a column (consecutive invocations, consecutive k), which would otherwise
// hit one shared-memory bank.
const uint A_STRIDE = TILE_M + 1;
shared float a_tile[TK * A_STRIDE];  // [k][m]
shared float b_tile[TK * TILE_N];  // [k][n]

void main() {
  const uint batch = gl_WorkGroupID.z;
  const uint row0 = gl_WorkGroupID.y * TILE_M;
  const uint col0 = gl_WorkGroupID.x * TILE_N;
  const uint tx = gl_LocalInvocationID.x;
  const uint ty = gl_LocalInvocationID.y;
  const uint tid = ty * WG_X + tx;
  const uint threads = WG_X * WG_Y;
  const uint a_base = batch * p.a_batch_stride;
  const uint b_base = batch * p.b_batch_stride;

  float acc[TM * TN];
  for (uint i = 0; i < TM * TN; ++i) acc[i] = 0.0;

  for (uint k0 = 0; k0 < p.k; k0 += TK) {
    // Neighbouring invocations take neighbouring k of A (row-major A is
    // contiguous in k) and neighbouring n of B.
    for (uint i = tid; i < TK * TILE_M; i += threads) {
      uint kk = i % TK, mm = i / TK;
      uint gm = row0 + mm, gk = k0 + kk;
      a_tile[kk * A_STRIDE + mm] = (gm < p.m && gk < p.k)
          ? LOAD(a[a_base + gm * p.a_row_stride + gk * p.a_col_stride]) : 0.0;
    }
    for (uint i = tid; i < TK * TILE_N; i += threads) {
      uint nn = i % TILE_N, kk = i / TILE_N;
      uint gn = col0 + nn, gk = k0 + kk;
      b_tile[kk * TILE_N + nn] = (gn < p.n && gk < p.k)
          ? LOAD(b[b_base + gk * p.b_row_stride + gn * p.b_col_stride]) : 0.0;
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
    uint gm = row0 + ty + i * WG_Y;
    if (gm >= p.m) continue;
    for (uint j = 0; j < TN; ++j) {
      uint gn = col0 + tx + j * WG_X;
      if (gn >= p.n) continue;
      float v = acc[i * TN + j] * p.scale;
      if (HAS_BIAS) {
        v += LOAD(bias[batch * p.bias_batch_stride + gm * p.bias_row_stride +
                       gn * p.bias_col_stride]);
      }
      if (HAS_RESIDUAL) {
        v += LOAD(residual[batch * p.residual_batch_stride +
                           gm * p.residual_row_stride + gn]);
      }
      c[batch * p.c_batch_stride + gm * p.c_row_stride + gn] =
          STORE(kiln_activate(ACTIVATION, v, p.alpha, p.beta));
    }
  }
}
