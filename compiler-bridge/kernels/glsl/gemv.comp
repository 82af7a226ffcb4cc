// GEMV: gemm's ABI (bindings, push constants, epilogue spec ids) for
// C[b] = act(scale * A[b] x B[b] + bias + residual) with few rows: one
// workgroup per block of 4 * WG_X output columns of one row of A (grid:
// (ceil(n / (4 * WG_X)), m, batch)). Each invocation owns a column quad
// and a slice of k (WG_Y slices), accumulates a vec4 of partial dot
// products with vec4 loads of B, and the slices are summed through shared
// memory. Linear layers are memory-bound at one row: this reads every
// element of B once, coalesced, with all invocations of the device busy
// where a 128-row GEMM tile would idle 127 of its rows.
// B [k][n] (n contiguous): slice s takes k = s, s + WG_Y, ...; lanes go
// along column quads. B [n][k] (k contiguous, Gemm transB): slice s takes
// k quads s, s + WG_Y, ...; lanes go along k (coalesced rows).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "activation.glsl"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_GEMM_ACTIVATION) const uint ACTIVATION = 0;
layout(constant_id = KILN_SPEC_GEMM_HAS_BIAS) const bool HAS_BIAS = false;
layout(constant_id = KILN_SPEC_GEMM_HAS_RESIDUAL) const bool HAS_RESIDUAL = false;

layout(set = 0, binding = 0) readonly buffer ABuffer { STORAGE_VEC4_T a4[]; };
layout(set = 0, binding = 1) readonly buffer BBuffer { STORAGE_VEC4_T b4[]; };
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

const uint WG_X = gl_WorkGroupSize.x;  // column quads per workgroup
const uint WG_Y = gl_WorkGroupSize.y;  // k slices
shared vec4 partial[WG_X * WG_Y];       // [slice][quad]

float b_at(uint i) { return LOAD_AT(b4, i); }
float a_at(uint i) { return LOAD_AT(a4, i); }

// B [k][n]: row kk's quad at columns gn.. (c0..c3: clamped columns).
bool b_rows_vec4;
vec4 kiln_gemv_b_row(uint b_base, uint kk, uint gn, uint c0, uint c1, uint c2, uint c3) {
  const uint at = b_base + kk * p.b_row_stride;
  if (b_rows_vec4) return LOAD4(b4[(at + gn) >> 2]);
  const uint s = p.b_col_stride;
  return vec4(b_at(at + c0 * s), b_at(at + c1 * s), b_at(at + c2 * s), b_at(at + c3 * s));
}

void main() {
  const uint batch = gl_WorkGroupID.z, gm = gl_WorkGroupID.y;
  const uint tid = gl_LocalInvocationID.y * WG_X + gl_LocalInvocationID.x;
  const bool along_k = p.b_row_stride == 1 && p.b_col_stride != 1;
  // Along k, consecutive invocations take consecutive slices.
  const uint quad = along_k ? tid / WG_Y : tid % WG_X;
  const uint slice = along_k ? tid % WG_Y : tid / WG_X;
  const uint gn = (gl_WorkGroupID.x * WG_X + quad) * 4;
  const uint a_row = batch * p.a_batch_stride + gm * p.a_row_stride;
  const uint b_base = batch * p.b_batch_stride;
  // Columns past n read column n - 1 (clamped; not stored).
  const uint last = p.n - 1;
  const uint c0 = min(gn, last), c1 = min(gn + 1, last), c2 = min(gn + 2, last),
             c3 = min(gn + 3, last);
  vec4 acc = vec4(0);
  if (along_k) {
    const bool a4ok = p.a_col_stride == 1 && (a_row & 3) == 0;
    const bool b4ok = (p.b_col_stride & 3) == 0 && (b_base & 3) == 0;
    const uint k4 = (a4ok && b4ok) ? p.k / 4 : 0;  // vec4 quads of k
    const uint r0 = b_base + c0 * p.b_col_stride, r1 = b_base + c1 * p.b_col_stride;
    const uint r2 = b_base + c2 * p.b_col_stride, r3 = b_base + c3 * p.b_col_stride;
    for (uint q = slice; q < k4; q += WG_Y) {
      const vec4 av = LOAD4(a4[(a_row >> 2) + q]);
      acc += vec4(dot(av, LOAD4(b4[(r0 >> 2) + q])), dot(av, LOAD4(b4[(r1 >> 2) + q])),
                  dot(av, LOAD4(b4[(r2 >> 2) + q])), dot(av, LOAD4(b4[(r3 >> 2) + q])));
    }
    for (uint kk = k4 * 4 + slice; kk < p.k; kk += WG_Y) {
      const float av = a_at(a_row + kk * p.a_col_stride);
      acc += av * vec4(b_at(r0 + kk), b_at(r1 + kk), b_at(r2 + kk), b_at(r3 + kk));
    }
  } else {
    b_rows_vec4 = p.b_col_stride == 1 && (p.b_row_stride & 3) == 0 && (b_base & 3) == 0 &&
                  gn + 3 < p.n;
    // Four k at a time, their loads issued before the adds (in k order as
    // one at a time): a loop of one load pair and one add waits out a
    // memory round trip per k, which is most of a split-K sum (k = parts).
    uint kk = slice;
    for (; kk + 3 * WG_Y < p.k; kk += 4 * WG_Y) {
      const float a0 = a_at(a_row + kk * p.a_col_stride);
      const float a1 = a_at(a_row + (kk + WG_Y) * p.a_col_stride);
      const float a2 = a_at(a_row + (kk + 2 * WG_Y) * p.a_col_stride);
      const float a3 = a_at(a_row + (kk + 3 * WG_Y) * p.a_col_stride);
      const vec4 b0 = kiln_gemv_b_row(b_base, kk, gn, c0, c1, c2, c3);
      const vec4 b1 = kiln_gemv_b_row(b_base, kk + WG_Y, gn, c0, c1, c2, c3);
      const vec4 b2 = kiln_gemv_b_row(b_base, kk + 2 * WG_Y, gn, c0, c1, c2, c3);
      const vec4 b3 = kiln_gemv_b_row(b_base, kk + 3 * WG_Y, gn, c0, c1, c2, c3);
      acc += a0 * b0;
      acc += a1 * b1;
      acc += a2 * b2;
      acc += a3 * b3;
    }
    for (; kk < p.k; kk += WG_Y) {
      acc += a_at(a_row + kk * p.a_col_stride) * kiln_gemv_b_row(b_base, kk, gn, c0, c1, c2, c3);
    }
  }
  partial[slice * WG_X + quad] = acc;
  barrier();
  // Halve the slices until one is left (WG_Y is a power of two).
  for (uint half_ = WG_Y / 2; half_ > 0; half_ /= 2) {
    if (slice < half_) partial[slice * WG_X + quad] += partial[(slice + half_) * WG_X + quad];
    barrier();
  }
  if (slice != 0 || gn >= p.n || gm >= p.m) return;
  vec4 v = partial[quad] * p.scale;
  const uint bias_row = batch * p.bias_batch_stride + gm * p.bias_row_stride;
  const uint r = batch * p.residual_batch_stride + gm * p.residual_row_stride + gn;
  const uint o = batch * p.c_batch_stride + gm * p.c_row_stride + gn;
  const bool whole = gn + 3 < p.n && (o & 3) == 0 && (!HAS_RESIDUAL || (r & 3) == 0);
  for (uint j = 0; j < 4; ++j) {
    if (HAS_BIAS && gn + j < p.n) v[j] += LOAD_AT(bias4, bias_row + (gn + j) * p.bias_col_stride);
    if (HAS_RESIDUAL && gn + j < p.n) v[j] += LOAD_AT(residual4, r + j);
    v[j] = kiln_activate(ACTIVATION, v[j], p.alpha, p.beta);
  }
  if (whole) {
    kiln_store4(o, v);
  } else {
    for (uint j = 0; j < 4; ++j) {
      if (gn + j < p.n) kiln_store1(o + j, v[j]);
    }
  }
}
