// GEMM for CPU Vulkan devices (llvmpipe): same ABI, bindings, push block and
// grid formula as gemm.comp, but no shared memory and no barriers. llvmpipe
// runs a workgroup's invocations as the SIMD lanes of one thread and turns
// every storage-buffer load into a loop over lanes, so cost is counted in
// load instructions: each invocation keeps an 8 x 8 register tile and loads
// vec4s along whichever dimension is contiguous (k for A, k or n for B).
// 8 rows rather than 4 halve the B loads per multiply-add (the 1x1
// convolutions load B per lane): MobileNetV2 1x1 convs ran 1.3-1.6x faster.
// The tile is written out by hand (no arrays): an array that the compiler
// does not fully unroll becomes per-lane scratch memory. The TM/TN spec
// constants must therefore be 8 and 8 (config.c; kernels_target_test);
// there is no TK.
// Invocation (tx, ty) owns rows m0 + [0,8) and columns n0 + [0,8);
// out-of-range rows/columns are clamped for loads and skipped for stores,
// so no lane diverges inside the k loop.
// Inputs (bindings 0-3) are uniform texel buffers of vec4 f32 (samplerBuffer,
// texelFetch): llvmpipe gathers a texel for all 8 lanes without a branch,
// where a storage-buffer load loops over the lanes (4.6x cheaper per vec4
// load in a lavapipe micro-benchmark). The bridge marks these bindings
// `texel` (kiln_kernel_spirv_t.texel_bindings); the output stays storage.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "activation.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_GEMM_TM) const uint TM = 8;
layout(constant_id = KILN_SPEC_GEMM_TN) const uint TN = 8;
layout(constant_id = KILN_SPEC_GEMM_ACTIVATION) const uint ACTIVATION = 0;
layout(constant_id = KILN_SPEC_GEMM_HAS_BIAS) const bool HAS_BIAS = false;
layout(constant_id = KILN_SPEC_GEMM_HAS_RESIDUAL) const bool HAS_RESIDUAL = false;
// The paths built in (KILN_GEMM_CPU_* bits): llvmpipe runs every loop body
// at least once (masked) and both sides of every branch, so a path that a
// layout never takes still cost a pass of texel fetches per workgroup
// (MobileNetV2's k = 16 1x1 convs: about as many fetches as the real
// work). The bridge builds each dispatch's layout alone; a layout that
// needs a path left out writes NaN (never a silent partial sum).
layout(constant_id = KILN_SPEC_GEMM_CPU_PATHS) const uint PATHS = KILN_GEMM_CPU_ALL;
bool built(uint path) { return (PATHS & path) != 0; }

// Declared as vec4 arrays; scalar element i is x4[i >> 2][i & 3], which
// compiles to a plain scalar load.
layout(set = 0, binding = 0) uniform samplerBuffer a4_t;
layout(set = 0, binding = 1) uniform samplerBuffer b4_t;
layout(set = 0, binding = 2) uniform samplerBuffer bias4_t;
layout(set = 0, binding = 3) uniform samplerBuffer residual4_t;
layout(set = 0, binding = 4) writeonly buffer CBuffer { vec4 c4[]; };

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

float a_at(uint i) { return texelFetch(a4_t, int(i >> 2))[i & 3]; }
float b_at(uint i) { return texelFetch(b4_t, int(i >> 2))[i & 3]; }

// Writes row gm (columns n0..n0+7, values lo|hi) through the epilogue.
void store_row(uint batch, uint gm, uint n0, vec4 lo, vec4 hi, bool c_n4) {
  if (gm >= p.m) return;
  lo *= p.scale;
  hi *= p.scale;
  if (HAS_BIAS) {
    // Per-row bias (1x1 convolutions): one load. Any other layout: a loop
    // over the 8 columns that runs zero times (one masked pass) otherwise.
    const uint row = batch * p.bias_batch_stride + gm * p.bias_row_stride;
    const bool per_row = p.bias_col_stride == 0;
    const float b_row = texelFetch(bias4_t, int(row >> 2))[row & 3];
    if (per_row) {
      lo += b_row;
      hi += b_row;
    }
    const uint bias_cols = per_row ? 0 : min(8, p.n - n0);
    for (uint j = 0; built(KILN_GEMM_CPU_BIAS_COLS) && j < bias_cols; ++j) {
      const uint at = row + (n0 + j) * p.bias_col_stride;
      const float bv = texelFetch(bias4_t, int(at >> 2))[at & 3];
      if (j < 4) lo[j & 3] += bv;
      else hi[j & 3] += bv;
    }
  }
  const uint c_row = batch * p.c_batch_stride + gm * p.c_row_stride + n0;
  const uint r_row = batch * p.residual_batch_stride + gm * p.residual_row_stride + n0;
  // llvmpipe executes both sides of a branch (masked): the vec4 path is
  // straight-line, the scalar one a loop that runs zero times when unused.
  if (c_n4) {
    // n0 and n are multiples of 4, so each vec4 is wholly in or out.
    vec4 o0 = lo, o1 = hi;
    if (HAS_RESIDUAL) {
      o0 += texelFetch(residual4_t, int(r_row >> 2));
      o1 += texelFetch(residual4_t, int(min(r_row + 4, r_row + p.n - n0 - 4) >> 2));
    }
    for (uint e = 0; e < 4; ++e) {
      o0[e] = kiln_activate(ACTIVATION, o0[e], p.alpha, p.beta);
      o1[e] = kiln_activate(ACTIVATION, o1[e], p.alpha, p.beta);
    }
    c4[c_row >> 2] = o0;
    if (n0 + 4 < p.n) c4[(c_row >> 2) + 1] = o1;
  }
  const uint scalar_count = c_n4 ? 0 : min(8, p.n - n0);
  for (uint j = 0; built(KILN_GEMM_CPU_SCALAR_STORE) && j < scalar_count; ++j) {
    float o = j < 4 ? lo[j & 3] : hi[j & 3];
    if (HAS_RESIDUAL) o += texelFetch(residual4_t, int((r_row + j) >> 2))[(r_row + j) & 3];
    c4[(c_row + j) >> 2][(c_row + j) & 3] = kiln_activate(ACTIVATION, o, p.alpha, p.beta);
  }
}

void main() {
  const uint batch = gl_WorkGroupID.z;
  // Fewer columns than one row of lanes covers (the 7x7 layers: n = 49)
  // and at least 64 rows: lanes go down m instead, so none idles on
  // columns past n (grid.c swaps the grid to match).
  // A config built per layout says (KILN_GEMM_CPU_DOWN_M: whichever pads
  // less, e.g. 14x14 layers: n = 196 of 256 columns, of 200 down m).
  const bool down_m = gl_WorkGroupSize.y == 1 &&
                      (built(KILN_GEMM_CPU_LAYOUT_SET)
                           ? built(KILN_GEMM_CPU_DOWN_M)
                           : p.n < gl_WorkGroupSize.x * TN && p.m >= gl_WorkGroupSize.x * TM);
  const uint m_tile = down_m ? gl_WorkGroupID.y * gl_WorkGroupSize.x + gl_LocalInvocationID.x
                             : gl_WorkGroupID.y * gl_WorkGroupSize.y + gl_LocalInvocationID.y;
  const uint n_tile = down_m ? gl_WorkGroupID.x
                             : gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  const uint m0 = m_tile * TM;
  const uint n0 = n_tile * TN;
  if (TM != 8 || TN != 8) {
    // The tile below is 8 x 8; any other (a module config.c did not
    // make): NaN over the rows and columns the grid gave this invocation
    // (at most 64 of each), never an output left unwritten.
    const uint rows = min(TM, 64u), cols = min(TN, 64u);
    for (uint i = 0; i < rows * cols; ++i) {
      const uint m = m0 + i / cols, n = n0 + i % cols;
      const uint at = batch * p.c_batch_stride + m * p.c_row_stride + n;
      if (m < p.m && n < p.n) c4[at >> 2][at & 3] = uintBitsToFloat(0x7fc00000u);
    }
    return;
  }
  if (m0 >= p.m || n0 >= p.n) return;
  const uint a_base = batch * p.a_batch_stride;
  const uint b_base = batch * p.b_batch_stride;
  const uint last_m = p.m - 1, last_n = p.n - 1;
  const uint ar0 = a_base + min(m0, last_m) * p.a_row_stride;
  const uint ar1 = a_base + min(m0 + 1, last_m) * p.a_row_stride;
  const uint ar2 = a_base + min(m0 + 2, last_m) * p.a_row_stride;
  const uint ar3 = a_base + min(m0 + 3, last_m) * p.a_row_stride;
  const uint ar4 = a_base + min(m0 + 4, last_m) * p.a_row_stride;
  const uint ar5 = a_base + min(m0 + 5, last_m) * p.a_row_stride;
  const uint ar6 = a_base + min(m0 + 6, last_m) * p.a_row_stride;
  const uint ar7 = a_base + min(m0 + 7, last_m) * p.a_row_stride;

  // c<row><half>: columns n0..n0+3 (0) and n0+4..n0+7 (1).
  vec4 c00 = vec4(0), c01 = vec4(0), c10 = vec4(0), c11 = vec4(0);
  vec4 c20 = vec4(0), c21 = vec4(0), c30 = vec4(0), c31 = vec4(0);
  vec4 c40 = vec4(0), c41 = vec4(0), c50 = vec4(0), c51 = vec4(0);
  vec4 c60 = vec4(0), c61 = vec4(0), c70 = vec4(0), c71 = vec4(0);

  // vec4 paths need 16-byte aligned rows/columns (bindings are aligned to
  // the device's storage offset alignment, 16 on llvmpipe).
  const bool a_k4 = p.a_col_stride == 1 && (p.a_row_stride & 3) == 0 &&
                    (p.a_batch_stride & 3) == 0;
  const bool b_k4 = p.b_row_stride == 1 && (p.b_col_stride & 3) == 0 &&
                    (p.b_batch_stride & 3) == 0;
  const bool b_n4 = p.b_col_stride == 1 && (p.b_row_stride & 3) == 0 &&
                    (p.b_batch_stride & 3) == 0 && (p.n & 3) == 0;
  // B contiguous in n, rows not 16-byte aligned, B ending on a quad (the
  // NU loop below clamps its blocks to the binding).
  const uint b_end = (p.batch - 1) * p.b_batch_stride + (p.k - 1) * p.b_row_stride + p.n;
  const bool b_n1 = p.b_col_stride == 1 && !b_n4 && !b_k4 && (b_end & 3) == 0;
  // k handled by the vec4 loops below (a k-contiguous A and a B one of
  // them reads); the scalar loop takes the rest. B contiguous in n on
  // neither path (rows off 16 bytes, B not ending on a quad) is all
  // scalar: counting it here skipped its first k & ~3 terms.
  const uint k4_end = (a_k4 && (b_k4 || b_n4 || b_n1)) ? (p.k & ~3u) : 0;

  // Both operands contiguous in k (Gemm with transB, MatMul of B^T). One
  // row (m == 1, a classifier's Gemm) takes its own loop: one A load and 8
  // dot products per step instead of 8 and 64 on clamped copies of row 0.
  const bool gemv = p.m == 1;
  const uint kn_end = (b_k4 && !gemv) ? k4_end : 0;
  const uint kv_end = (b_k4 && gemv) ? k4_end : 0;
  uint bc[8];
  for (uint j = 0; j < 8; ++j) bc[j] = b_base + min(n0 + j, last_n) * p.b_col_stride;
  if (built(KILN_GEMM_CPU_GEMV)) {
    for (uint k = 0; k < kv_end; k += 4) {
      vec4 a0 = texelFetch(a4_t, int((ar0 + k) >> 2));
      vec4 b0 = texelFetch(b4_t, int((bc[0] + k) >> 2)), b1 = texelFetch(b4_t, int((bc[1] + k) >> 2));
      vec4 b2 = texelFetch(b4_t, int((bc[2] + k) >> 2)), b3 = texelFetch(b4_t, int((bc[3] + k) >> 2));
      vec4 b4_ = texelFetch(b4_t, int((bc[4] + k) >> 2)), b5 = texelFetch(b4_t, int((bc[5] + k) >> 2));
      vec4 b6 = texelFetch(b4_t, int((bc[6] + k) >> 2)), b7 = texelFetch(b4_t, int((bc[7] + k) >> 2));
      c00 += vec4(dot(a0, b0), dot(a0, b1), dot(a0, b2), dot(a0, b3));
      c01 += vec4(dot(a0, b4_), dot(a0, b5), dot(a0, b6), dot(a0, b7));
    }
  }
  if (built(KILN_GEMM_CPU_KN)) {
    for (uint k = 0; k < kn_end; k += 4) {
      vec4 a0 = texelFetch(a4_t, int((ar0 + k) >> 2)), a1 = texelFetch(a4_t, int((ar1 + k) >> 2));
      vec4 a2 = texelFetch(a4_t, int((ar2 + k) >> 2)), a3 = texelFetch(a4_t, int((ar3 + k) >> 2));
      vec4 a4_ = texelFetch(a4_t, int((ar4 + k) >> 2)), a5 = texelFetch(a4_t, int((ar5 + k) >> 2));
      vec4 a6 = texelFetch(a4_t, int((ar6 + k) >> 2)), a7 = texelFetch(a4_t, int((ar7 + k) >> 2));
      vec4 b0 = texelFetch(b4_t, int((bc[0] + k) >> 2)), b1 = texelFetch(b4_t, int((bc[1] + k) >> 2));
      vec4 b2 = texelFetch(b4_t, int((bc[2] + k) >> 2)), b3 = texelFetch(b4_t, int((bc[3] + k) >> 2));
      vec4 b4_ = texelFetch(b4_t, int((bc[4] + k) >> 2)), b5 = texelFetch(b4_t, int((bc[5] + k) >> 2));
      vec4 b6 = texelFetch(b4_t, int((bc[6] + k) >> 2)), b7 = texelFetch(b4_t, int((bc[7] + k) >> 2));
  #define KILN_ROW_DOT(c0, c1, a)                                         \
      c0 += vec4(dot(a, b0), dot(a, b1), dot(a, b2), dot(a, b3));         \
      c1 += vec4(dot(a, b4_), dot(a, b5), dot(a, b6), dot(a, b7));
      KILN_ROW_DOT(c00, c01, a0)
      KILN_ROW_DOT(c10, c11, a1)
      KILN_ROW_DOT(c20, c21, a2)
      KILN_ROW_DOT(c30, c31, a3)
      KILN_ROW_DOT(c40, c41, a4_)
      KILN_ROW_DOT(c50, c51, a5)
      KILN_ROW_DOT(c60, c61, a6)
      KILN_ROW_DOT(c70, c71, a7)
    }
  }

  // A contiguous in k, B in n (1x1 convolution: weights x image). Column
  // blocks past n (n % 4 == 0) are clamped to the last block.
  const uint nn_end = (b_n4 && !b_k4) ? k4_end : 0;
  const uint bn0 = b_base + n0;
  const uint bn1 = b_base + min(n0 + 4, p.n - 4);
  if (built(KILN_GEMM_CPU_NN)) {
    for (uint k = 0; k < nn_end; k += 4) {
      vec4 a0 = texelFetch(a4_t, int((ar0 + k) >> 2)), a1 = texelFetch(a4_t, int((ar1 + k) >> 2));
      vec4 a2 = texelFetch(a4_t, int((ar2 + k) >> 2)), a3 = texelFetch(a4_t, int((ar3 + k) >> 2));
      vec4 a4_ = texelFetch(a4_t, int((ar4 + k) >> 2)), a5 = texelFetch(a4_t, int((ar5 + k) >> 2));
      vec4 a6 = texelFetch(a4_t, int((ar6 + k) >> 2)), a7 = texelFetch(a4_t, int((ar7 + k) >> 2));
  #define KILN_K_STEP(kk)                                                 \
      {                                                                   \
        const uint row = (k + kk) * p.b_row_stride;                       \
        vec4 lo = texelFetch(b4_t, int((bn0 + row) >> 2)), hi = texelFetch(b4_t, int((bn1 + row) >> 2));        \
        c00 += a0[kk] * lo; c01 += a0[kk] * hi;                           \
        c10 += a1[kk] * lo; c11 += a1[kk] * hi;                           \
        c20 += a2[kk] * lo; c21 += a2[kk] * hi;                           \
        c30 += a3[kk] * lo; c31 += a3[kk] * hi;                           \
        c40 += a4_[kk] * lo; c41 += a4_[kk] * hi;                         \
        c50 += a5[kk] * lo; c51 += a5[kk] * hi;                           \
        c60 += a6[kk] * lo; c61 += a6[kk] * hi;                           \
        c70 += a7[kk] * lo; c71 += a7[kk] * hi;                           \
      }
      KILN_K_STEP(0)
      KILN_K_STEP(1)
      KILN_K_STEP(2)
      KILN_K_STEP(3)
    }
  }

  // A contiguous in k, B contiguous in n but rows not 16-byte aligned (the
  // 7x7 layers: n = 49): each 8-column run is cut out of three aligned
  // vec4s. The shift is the same for every lane (n0 is a multiple of 8).
  // Blocks are clamped to the binding, so B must end on a block boundary.
  const uint nu_end = (a_k4 && b_n1) ? (p.k & ~3u) : 0;
  const uint b_last4 = uint(textureSize(b4_t)) - 1;
  if (built(KILN_GEMM_CPU_NU)) {
    for (uint k = 0; k < nu_end; k += 4) {
      vec4 a0 = texelFetch(a4_t, int((ar0 + k) >> 2)), a1 = texelFetch(a4_t, int((ar1 + k) >> 2));
      vec4 a2 = texelFetch(a4_t, int((ar2 + k) >> 2)), a3 = texelFetch(a4_t, int((ar3 + k) >> 2));
      vec4 a4_ = texelFetch(a4_t, int((ar4 + k) >> 2)), a5 = texelFetch(a4_t, int((ar5 + k) >> 2));
      vec4 a6 = texelFetch(a4_t, int((ar6 + k) >> 2)), a7 = texelFetch(a4_t, int((ar7 + k) >> 2));
  #define KILN_K_STEP_U(kk)                                               \
      {                                                                   \
        const uint e = bn0 + (k + kk) * p.b_row_stride;                   \
        const uint q = e >> 2, sh = e & 3;                                \
        vec4 q0 = texelFetch(b4_t, int(min(q, b_last4))), q1 = texelFetch(b4_t, int(min(q + 1, b_last4)));      \
        vec4 q2 = texelFetch(b4_t, int(min(q + 2, b_last4)));                                \
        vec4 lo = sh == 0 ? q0 : sh == 1 ? vec4(q0.yzw, q1.x)             \
                : sh == 2 ? vec4(q0.zw, q1.xy) : vec4(q0.w, q1.xyz);      \
        vec4 hi = sh == 0 ? q1 : sh == 1 ? vec4(q1.yzw, q2.x)             \
                : sh == 2 ? vec4(q1.zw, q2.xy) : vec4(q1.w, q2.xyz);      \
        c00 += a0[kk] * lo; c01 += a0[kk] * hi;                           \
        c10 += a1[kk] * lo; c11 += a1[kk] * hi;                           \
        c20 += a2[kk] * lo; c21 += a2[kk] * hi;                           \
        c30 += a3[kk] * lo; c31 += a3[kk] * hi;                           \
        c40 += a4_[kk] * lo; c41 += a4_[kk] * hi;                         \
        c50 += a5[kk] * lo; c51 += a5[kk] * hi;                           \
        c60 += a6[kk] * lo; c61 += a6[kk] * hi;                           \
        c70 += a7[kk] * lo; c71 += a7[kk] * hi;                           \
      }
      KILN_K_STEP_U(0)
      KILN_K_STEP_U(1)
      KILN_K_STEP_U(2)
      KILN_K_STEP_U(3)
    }
  }

  // Any other layout, and the k tail of the vec4 paths.
  if (built(KILN_GEMM_CPU_SCALAR_K)) {
    for (uint k = k4_end; k < p.k; ++k) {
      const uint ka = k * p.a_col_stride, kb = k * p.b_row_stride;
      float a0 = a_at(ar0 + ka), a1 = a_at(ar1 + ka), a2 = a_at(ar2 + ka), a3 = a_at(ar3 + ka);
      float a4_ = a_at(ar4 + ka), a5 = a_at(ar5 + ka), a6 = a_at(ar6 + ka), a7 = a_at(ar7 + ka);
      vec4 lo = vec4(b_at(bc[0] + kb), b_at(bc[1] + kb), b_at(bc[2] + kb), b_at(bc[3] + kb));
      vec4 hi = vec4(b_at(bc[4] + kb), b_at(bc[5] + kb), b_at(bc[6] + kb), b_at(bc[7] + kb));
      c00 += a0 * lo; c01 += a0 * hi;
      c10 += a1 * lo; c11 += a1 * hi;
      c20 += a2 * lo; c21 += a2 * hi;
      c30 += a3 * lo; c31 += a3 * hi;
      c40 += a4_ * lo; c41 += a4_ * hi;
      c50 += a5 * lo; c51 += a5 * hi;
      c60 += a6 * lo; c61 += a6 * hi;
      c70 += a7 * lo; c71 += a7 * hi;
    }
  }

  const bool c_n4 = (p.c_row_stride & 3) == 0 && (p.c_batch_stride & 3) == 0 &&
                    (p.n & 3) == 0 &&
                    (!HAS_RESIDUAL || ((p.residual_row_stride & 3) == 0 &&
                                       (p.residual_batch_stride & 3) == 0));
  // The paths this layout takes (the NaN loop below: never a partial sum).
  const uint needed = (kv_end > 0 ? KILN_GEMM_CPU_GEMV : 0) | (kn_end > 0 ? KILN_GEMM_CPU_KN : 0) |
                      (nn_end > 0 ? KILN_GEMM_CPU_NN : 0) | (nu_end > 0 ? KILN_GEMM_CPU_NU : 0) |
                      (k4_end < p.k ? KILN_GEMM_CPU_SCALAR_K : 0) |
                      (c_n4 ? 0 : KILN_GEMM_CPU_SCALAR_STORE) |
                      (HAS_BIAS && p.bias_col_stride != 0 ? KILN_GEMM_CPU_BIAS_COLS : 0);
  const bool complete = (needed & ~PATHS) == 0;
  // One store_row in a loop rather than eight inlined copies: llvmpipe
  // compiles each texel fetch and storage store into a long sequence, and
  // eight copies doubled this kernel's pipeline build time.
  for (uint r = 0; r < 8; ++r) {
    const vec4 lo = r == 0 ? c00 : r == 1 ? c10 : r == 2 ? c20 : r == 3 ? c30
                  : r == 4 ? c40 : r == 5 ? c50 : r == 6 ? c60 : c70;
    const vec4 hi = r == 0 ? c01 : r == 1 ? c11 : r == 2 ? c21 : r == 3 ? c31
                  : r == 4 ? c41 : r == 5 ? c51 : r == 6 ? c61 : c71;
    store_row(batch, m0 + r, n0, lo, hi, c_n4);
  }
  // A layout that needs a path this pipeline was built without: NaN over
  // the whole tile, after the epilogue (an activation may map NaN to a
  // number); one masked pass otherwise.
  const uint nan_count = complete ? 0 : 64;
  for (uint i = 0; i < nan_count; ++i) {
    const uint gm = m0 + i / 8, gn = n0 + i % 8;
    const uint at = batch * p.c_batch_stride + gm * p.c_row_stride + gn;
    if (gm < p.m && gn < p.n) c4[at >> 2][at & 3] = uintBitsToFloat(0x7fc00000u);
  }
}
