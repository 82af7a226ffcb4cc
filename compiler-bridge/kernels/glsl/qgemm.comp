// Quantized-weight GEMM/GEMV: gemm's push constants and epilogue with B
// a quantized weight W [n][k] (one row per output column, k along the
// row) in a layout of include/kiln/compiler/quant.h, read from its words:
//   C[b][m][n] = act(scale * sum_k A[b][m][k] * W[n][k] + bias + residual).
// A is fp32 (fp16 in the qgemm_f16 build: KILN_FP16_STORAGE, A, bias,
// residual and C in fp16, arithmetic in fp32, the weight words unchanged)
// with k contiguous (a_col_stride 1, a_row_stride % 4 == 0);
// b_row_stride is the bytes of one weight row; the weight buffer ends with
// at least 4 readable bytes past the last row (2-aligned blocks are loaded
// as whole words, up to one word past their last byte).
// Workgroup: WG_X k slices x WG_Y invocations of TN columns; an invocation
// owns TN columns (weight rows) and TM rows of A, walks the 32-element
// groups g = slice, slice + WG_X, ..., decodes each group of its TN weight
// rows once into vec4s and dots them with each row of A, loaded once per
// group; the slices are summed through shared memory (none when WG_X == 1:
// the CPU configuration, 8 lanes of 4 columns each, no barrier).
// Grid: (ceil(n / (WG_Y * TN)), ceil(m / TM), batch).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "activation.glsl"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_GEMM_TM) const uint TM = 1;
layout(constant_id = KILN_SPEC_GEMM_TN) const uint TN = 1;  // weight rows per invocation
layout(constant_id = KILN_SPEC_GEMM_ACTIVATION) const uint ACTIVATION = 0;
layout(constant_id = KILN_SPEC_GEMM_HAS_BIAS) const bool HAS_BIAS = false;
layout(constant_id = KILN_SPEC_GEMM_HAS_RESIDUAL) const bool HAS_RESIDUAL = false;
layout(constant_id = KILN_SPEC_QGEMM_LAYOUT) const uint LAYOUT = KILN_QGEMM_Q4_0;

#ifdef KILN_QGEMM_TEXEL_A
// The cpu variant reads A through a uniform texel buffer (vec4 f32): on
// llvmpipe a branch-free gather, cheaper than a storage load
// (kernels/README.md).
layout(set = 0, binding = 0) uniform samplerBuffer a4_t;
#define A4(i) texelFetch(a4_t, int(i))
#else
layout(set = 0, binding = 0) readonly buffer ABuffer { STORAGE_VEC4_T a4[]; };
#define A4(i) LOAD4(a4[i])
#endif
#include "qweight.glsl"
layout(set = 0, binding = 2) readonly buffer BiasBuffer { STORAGE_VEC4_T bias4[]; };
layout(set = 0, binding = 3) readonly buffer ResidualBuffer { STORAGE_VEC4_T residual4[]; };
KILN_OUTPUT_BUFFER(4)

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

const uint WG_X = gl_WorkGroupSize.x;  // k slices
const uint WG_Y = gl_WorkGroupSize.y;  // columns
shared float partial[WG_X > 1 ? WG_X * WG_Y * TM * TN : 1];

void main() {
  const uint slice = gl_LocalInvocationID.x, col = gl_LocalInvocationID.y;
  const uint batch = gl_WorkGroupID.z;
  const uint n0 = (gl_WorkGroupID.x * WG_Y + col) * TN;  // this invocation's TN weight rows
  const uint m0 = gl_WorkGroupID.y * TM;
  // Columns and rows past the end read the last one (not stored).
  uint w_rows[TN];
  for (uint r = 0; r < TN; ++r) {
    w_rows[r] = min(n0 + r, p.n - 1u) * p.b_row_stride + batch * p.b_batch_stride;
  }
  uint a_rows[TM];
  for (uint t = 0; t < TM; ++t) {
    a_rows[t] = (batch * p.a_batch_stride + min(m0 + t, p.m - 1u) * p.a_row_stride) >> 2;
  }
  float acc[TM * TN];
  for (uint i = 0; i < TM * TN; ++i) acc[i] = 0.0;
  const uint groups = p.k / 32u;
  for (uint g = slice; g < groups; g += WG_X) {
    // TN decoded groups, then each row of A loaded once for all of them.
    vec4 w[TN * 8];
    for (uint r = 0; r < TN; ++r) {
      vec4 wr[8];
      decode(w_rows[r], g, wr);
      for (uint i = 0; i < 8; ++i) w[r * 8 + i] = wr[i];
    }
    for (uint t = 0; t < TM; ++t) {
      const uint a = a_rows[t] + 8u * g;
      const vec4 a0 = A4(a), a1 = A4(a + 1), a2 = A4(a + 2), a3 = A4(a + 3);
      const vec4 a4_ = A4(a + 4), a5 = A4(a + 5), a6 = A4(a + 6), a7 = A4(a + 7);
      for (uint r = 0; r < TN; ++r) {
        const uint b = r * 8;
        acc[t * TN + r] += dot(w[b], a0) + dot(w[b + 1], a1) + dot(w[b + 2], a2) +
                           dot(w[b + 3], a3) + dot(w[b + 4], a4_) + dot(w[b + 5], a5) +
                           dot(w[b + 6], a6) + dot(w[b + 7], a7);
      }
    }
  }
  if (WG_X > 1) {
    const uint at = (col * WG_X + slice) * TM * TN;
    for (uint i = 0; i < TM * TN; ++i) partial[at + i] = acc[i];
    barrier();
    // Halve the slices until one is left (WG_X is a power of two).
    for (uint half_ = WG_X / 2; half_ > 0; half_ /= 2) {
      if (slice < half_) {
        for (uint i = 0; i < TM * TN; ++i) partial[at + i] += partial[at + half_ * TM * TN + i];
      }
      barrier();
    }
    for (uint i = 0; i < TM * TN; ++i) acc[i] = partial[at + i];
  }
  if (slice != 0) return;
  for (uint t = 0; t < TM; ++t) {
    const uint gm = m0 + t;
    if (gm >= p.m) break;
    for (uint r = 0; r < TN; ++r) {
      const uint gn = n0 + r;
      if (gn >= p.n) break;
      float v = acc[t * TN + r] * p.scale;
      if (HAS_BIAS) {
        v += LOAD_AT(bias4, batch * p.bias_batch_stride + gm * p.bias_row_stride +
                                gn * p.bias_col_stride);
      }
      if (HAS_RESIDUAL) {
        v += LOAD_AT(residual4, batch * p.residual_batch_stride + gm * p.residual_row_stride + gn);
      }
      kiln_store1(batch * p.c_batch_stride + gm * p.c_row_stride + gn,
                  kiln_activate(ACTIVATION, v, p.alpha, p.beta));
    }
  }
}
