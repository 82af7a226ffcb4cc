// Batched GEMM: C[b] = act(scale * A[b] x B[b] + bias + residual), on the
// register-tiled, double-buffered core of gemm_tile.glsl. Operands are
// addressed by element strides, so transposes and broadcasts cost nothing
// here, and a 1x1 convolution is this kernel with A = weights, B = the
// input image. Quads of A and B are fetched along whichever dimension is
// contiguous, as vec4 loads when aligned (buffers are declared as vec4
// arrays; descriptor ranges are 16-byte aligned and rounded up to 16,
// docs/security.md). Tile sizes are spec constants chosen per arch by
// gemm_tuning.c. Built twice: fp32 storage, and (KILN_FP16_STORAGE) fp16
// buffers with fp32 accumulation.
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

layout(set = 0, binding = 0) readonly buffer ABuffer { STORAGE_VEC4_T a4[]; };
layout(set = 0, binding = 1) readonly buffer BBuffer { STORAGE_VEC4_T b4[]; };
layout(set = 0, binding = 2) readonly buffer BiasBuffer { STORAGE_VEC4_T bias4[]; };
layout(set = 0, binding = 3) readonly buffer ResidualBuffer { STORAGE_VEC4_T residual4[]; };
KILN_OUTPUT_BUFFER(4)

#include "gemm_params.glsl"

#include "gemm_tile.glsl"
#include "gemm_epilogue.glsl"

uint a_base, b_base;
bool a_vec4, b_vec4;

float a_at(uint i) { return LOAD_AT(a4, i); }
float b_at(uint i) { return LOAD_AT(b4, i); }

vec4 kiln_gemm_load_a(uint gm, uint gk) {
  const uint at = a_base + gm * p.a_row_stride + gk * p.a_col_stride;
  if (kiln_gemm_a_along_k) {  // row gm, k gk..gk+3
    if (gm >= p.m) return vec4(0);
    if (a_vec4 && gk + 3 < p.k) return LOAD4(a4[at >> 2]);
    const uint s = p.a_col_stride;
    return vec4(gk < p.k ? a_at(at) : 0.0, gk + 1 < p.k ? a_at(at + s) : 0.0,
                gk + 2 < p.k ? a_at(at + 2 * s) : 0.0, gk + 3 < p.k ? a_at(at + 3 * s) : 0.0);
  }
  // rows gm..gm+3, k gk
  if (gk >= p.k) return vec4(0);
  if (a_vec4 && gm + 3 < p.m) return LOAD4(a4[at >> 2]);
  const uint s = p.a_row_stride;
  return vec4(gm < p.m ? a_at(at) : 0.0, gm + 1 < p.m ? a_at(at + s) : 0.0,
              gm + 2 < p.m ? a_at(at + 2 * s) : 0.0, gm + 3 < p.m ? a_at(at + 3 * s) : 0.0);
}

vec4 kiln_gemm_load_b(uint gk, uint gn) {
  const uint at = b_base + gk * p.b_row_stride + gn * p.b_col_stride;
  if (kiln_gemm_b_along_k) {  // column gn, k gk..gk+3
    if (gn >= p.n) return vec4(0);
    if (b_vec4 && gk + 3 < p.k) return LOAD4(b4[at >> 2]);
    const uint s = p.b_row_stride;
    return vec4(gk < p.k ? b_at(at) : 0.0, gk + 1 < p.k ? b_at(at + s) : 0.0,
                gk + 2 < p.k ? b_at(at + 2 * s) : 0.0, gk + 3 < p.k ? b_at(at + 3 * s) : 0.0);
  }
  // row gk, columns gn..gn+3
  if (gk >= p.k) return vec4(0);
  if (b_vec4 && gn + 3 < p.n) return LOAD4(b4[at >> 2]);
  const uint s = p.b_col_stride;
  return vec4(gn < p.n ? b_at(at) : 0.0, gn + 1 < p.n ? b_at(at + s) : 0.0,
              gn + 2 < p.n ? b_at(at + 2 * s) : 0.0, gn + 3 < p.n ? b_at(at + 3 * s) : 0.0);
}

void main() {
  batch = gl_WorkGroupID.z;
  const uint row0 = gl_WorkGroupID.y * TILE_M;
  const uint col0 = gl_WorkGroupID.x * TILE_N;
  a_base = batch * p.a_batch_stride;
  b_base = batch * p.b_batch_stride;
  // Quads along the contiguous dimension; vec4 loads when every quad start
  // is a multiple of 4 elements (quads start at multiples of 4 of that
  // dimension).
  kiln_gemm_a_along_k = !(p.a_row_stride == 1 && p.a_col_stride != 1);
  kiln_gemm_b_along_k = p.b_row_stride == 1 && p.b_col_stride != 1;
  a_vec4 = (p.a_batch_stride & 3) == 0 &&
           (kiln_gemm_a_along_k ? p.a_col_stride == 1 && (p.a_row_stride & 3) == 0
                                : (p.a_col_stride & 3) == 0);
  b_vec4 = (p.b_batch_stride & 3) == 0 &&
           (kiln_gemm_b_along_k ? (p.b_col_stride & 3) == 0
                                : p.b_col_stride == 1 && (p.b_row_stride & 3) == 0);
  c_vec4 = (p.c_batch_stride & 3) == 0 && (p.c_row_stride & 3) == 0 &&
           (!HAS_RESIDUAL || ((p.residual_batch_stride & 3) == 0 &&
                              (p.residual_row_stride & 3) == 0));
  kiln_gemm_mainloop(row0, col0, 0, p.k);
  kiln_gemm_store(row0, col0, p.m, p.n);
}
