// qgemv for CPU Vulkan devices (llvmpipe): qgemm's ABI and layouts
// (qgemm.comp), written for llvmpipe's costs; the cpu variant of both
// qgemv and qgemm. 8 lanes along x (llvmpipe runs x as the SIMD lanes; y
// and z are loops: qgemm_cpu's 1 x 8 lanes fill one lane of 8). A lane owns
// TN (1..8) weight rows over all of k and walks the 32-element groups; each
// row's group is fetched as whole texels (2-3, words picked by selects)
// into one form for every layout (QGroup). One row of A (TM = 1, decode):
// A's group is loaded once (8 texel fetches) for the TN rows and each
// row's codes are dotted with it. TM = 2..8 rows of A (main_rows): each
// weight group is decoded once and used for all TM rows (the 16-row q4_0
// MLP on lavapipe ran 2x faster than decoding it once per row).
// No private arrays: llvmpipe turns an array the compiler does not fully
// unroll into per-lane scratch memory (gemm_cpu.comp), which made
// qgemm_cpu 18x slower than the fp32 gemv on a 4096 x 4096 GEMV.
// A and B are uniform texel buffers (vec4 f32; B's texels reinterpreted as
// 4 words). Grid: (ceil(n / (WG_X * TN)), ceil(m / TM), batch).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "activation.glsl"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z = 1) in;  // lanes x 1
layout(constant_id = KILN_SPEC_GEMM_TM) const uint TM = 1;
layout(constant_id = KILN_SPEC_GEMM_TN) const uint TN = 1;  // weight rows per lane, 1..8
layout(constant_id = KILN_SPEC_GEMM_ACTIVATION) const uint ACTIVATION = 0;
layout(constant_id = KILN_SPEC_GEMM_HAS_BIAS) const bool HAS_BIAS = false;
layout(constant_id = KILN_SPEC_GEMM_HAS_RESIDUAL) const bool HAS_RESIDUAL = false;
layout(constant_id = KILN_SPEC_QGEMM_LAYOUT) const uint LAYOUT = KILN_QGEMM_Q4_0;

layout(set = 0, binding = 0) uniform samplerBuffer a4_t;
layout(set = 0, binding = 1) uniform samplerBuffer b4_t;
layout(set = 0, binding = 2) readonly buffer BiasBuffer { vec4 bias4[]; };
layout(set = 0, binding = 3) readonly buffer ResidualBuffer { vec4 residual4[]; };
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

#define A4(i) texelFetch(a4_t, int(i))
uvec4 btexel(uint t) { return floatBitsToUint(texelFetch(b4_t, int(t))); }
// Words j .. j + 3 (j in 0..3, per lane) of the texels a, b: vector selects.
uvec4 shift4(uvec4 a, uvec4 b, uint j) {
  return j == 0u ? a : j == 1u ? uvec4(a.yzw, b.x) : j == 2u ? uvec4(a.zw, b.xy) : uvec4(a.w, b.xyz);
}
// The 4 words at bytes 2 + 4i (i = 0..3) of a 2-aligned block whose words
// from the one holding its first byte are w (odd: that byte is its upper
// half) then `next`'s first.
uvec4 block_words(uvec4 w, uint next, bool odd) {
  const uvec4 up = uvec4(w.yzw, next);
  return odd ? up : (w >> 16) | (up << 16);
}
float block_d(uint w0, bool odd) { return unpackHalf2x16(odd ? w0 >> 16 : w0).x; }

const uvec4 kLowNibbles = uvec4(0x0f0f0f0fu);
// The low 4 nibbles of each word, one to a byte.
uvec4 spread_nibbles(uvec4 x) {
  return (x & 0xfu) | ((x & 0xf0u) << 4) | ((x & 0xf00u) << 8) | ((x & 0xf000u) << 12);
}
// Sign-extended bytes, through int: x86 converts signed integers in one
// instruction.
vec4 bytes_signed(uint word) {
  return vec4((ivec4(word) << ivec4(24, 16, 8, 0)) >> 24);
}

// The group of A at vec4 `a`: 8 vec4s.
struct Group {
  vec4 v0, v1, v2, v3, v4, v5, v6, v7;
};

// One weight row's 32-element group, fetched and put in one form for
// every layout: element 4i + b's code in byte b of word i (w0 then w1;
// int8 for q8_0 / int8, 0..15 for the 4-bit layouts), and the (scale,
// offset) of elements 0..15 (s.xy) and 16..31 (s.zw): weight = code *
// scale + offset. One decoder (codes) then serves all layouts: the shader
// holds one copy of the dot loops, not one per layout.
struct QGroup {
  uvec4 w0, w1;
  vec4 s;
};

// Group g of the weight row at byte `row`.
QGroup load_group(uint row, uint g) {
  if (LAYOUT == KILN_QGEMM_Q4_0) {
    // 18 bytes from a 2-aligned offset: within the 2 texels holding it.
    const uint o = row + g * 18u;
    const uint t = o >> 4, j = (o >> 2) & 3u;
    const bool odd = (o & 2u) != 0u;
    const uvec4 t0 = btexel(t), t1 = btexel(t + 1u);
    const uvec4 w = shift4(t0, t1, j);
    const float d = block_d(w.x, odd);
    // Code word i: elements 4i..4i+3 (low nibbles) and 16+4i.. (high).
    const uvec4 q = block_words(w, shift4(t1, uvec4(0), j).x, odd);
    return QGroup(q & kLowNibbles, (q >> 4) & kLowNibbles, vec4(d, -8.0 * d, d, -8.0 * d));
  } else if (LAYOUT == KILN_QGEMM_Q8_0) {
    // 34 bytes from a 2-aligned offset: within 3 texels.
    const uint o = row + g * 34u;
    const uint t = o >> 4, j = (o >> 2) & 3u;
    const bool odd = (o & 2u) != 0u;
    const uvec4 t0 = btexel(t), t1 = btexel(t + 1u), t2 = btexel(t + 2u);
    const uvec4 w0 = shift4(t0, t1, j), w1 = shift4(t1, t2, j);
    const float d = block_d(w0.x, odd);
    return QGroup(block_words(w0, w1.x, odd), block_words(w1, shift4(t2, uvec4(0), j).x, odd),
                  vec4(d, 0.0, d, 0.0));
  } else if (LAYOUT == KILN_QGEMM_Q4_K) {
    // Superblocks (144 = 9 texels) and rows are 16-aligned: the header is
    // one texel, a sub-block pair's codes two.
    const uint base = (row >> 4) + (g >> 3) * 9u;
    const uint j = g & 7u;
    const uvec4 head = btexel(base);
    const vec2 dm = unpackHalf2x16(head.x);
    uint sc, mn;  // get_scale_min_k4 (docs/quantization.md)
    if (j < 4u) {
      sc = (head.y >> (8u * j)) & 63u;
      mn = (head.z >> (8u * j)) & 63u;
    } else {
      const uint sh = 8u * (j - 4u);
      const uint hi = (head.w >> sh) & 255u;
      sc = (hi & 15u) | (((head.y >> sh) >> 6u) & 3u) << 4u;
      mn = (hi >> 4u) | (((head.z >> sh) >> 6u) & 3u) << 4u;
    }
    // Odd sub-blocks are the high nibbles.
    const uint sh = (j & 1u) * 4u;
    const uvec4 c0 = btexel(base + 1u + 2u * (j >> 1)), c1 = btexel(base + 2u + 2u * (j >> 1));
    const float d = dm.x * float(sc), m = -dm.y * float(mn);
    return QGroup((c0 >> sh) & kLowNibbles, (c1 >> sh) & kLowNibbles, vec4(d, m, d, m));
  } else if (LAYOUT == KILN_QGEMM_Q4_ZP) {
    // 7 words per group (scale 0..15, scale 16..31, zero points, 4 code
    // words), 4-aligned: within 3 texels.
    const uint w = (row >> 2) + 7u * g;
    const uint t = w >> 2, c = w & 3u;
    const uvec4 t0 = btexel(t), t1 = btexel(t + 1u);
    const uvec4 t2 = c > 1u ? btexel(t + 2u) : uvec4(0);
    const uvec4 w0 = shift4(t0, t1, c), w1 = shift4(t1, t2, c);
    const float s0 = uintBitsToFloat(w0.x), s1 = uintBitsToFloat(w0.y);
    const float z0 = float(w0.z & 255u), z1 = float((w0.z >> 8) & 255u);
    // Code word j: elements 8j..8j+7, low nibble first.
    return QGroup(spread_nibbles(uvec4(w0.w, w0.w >> 16, w1.x, w1.x >> 16)),
                  spread_nibbles(uvec4(w1.y, w1.y >> 16, w1.z, w1.z >> 16)),
                  vec4(s0, -z0 * s0, s1, -z1 * s1));
  } else {  // KILN_QGEMM_INT8: fp32 scale per row (applied by the caller), then k int8
    const uint w = (row >> 2) + 1u + 8u * g;
    const uint t = w >> 2, c = w & 3u;
    const uvec4 t0 = btexel(t), t1 = btexel(t + 1u);
    const uvec4 t2 = c > 0u ? btexel(t + 2u) : uvec4(0);
    return QGroup(shift4(t0, t1, c), shift4(t1, t2, c), vec4(1.0, 0.0, 1.0, 0.0));
  }
}

// The codes of elements 4i..4i+3 of the group.
vec4 codes(QGroup q, uint i) { return bytes_signed(i < 4u ? q.w0[i & 3u] : q.w1[i & 3u]); }

// The weights of elements 4i..4i+3.
vec4 weights(QGroup q, uint i) {
  return i < 4u ? codes(q, i) * q.s.x + q.s.y : codes(q, i) * q.s.z + q.s.w;
}

// sum over group g of the weight row at byte `row` times A's group: codes
// dotted first, each half's scale and offset applied once.
float row_dot(uint row, uint g, Group a) {
  const QGroup q = load_group(row, g);
  const float lo = dot(codes(q, 0u), a.v0) + dot(codes(q, 1u), a.v1) +
                   dot(codes(q, 2u), a.v2) + dot(codes(q, 3u), a.v3);
  const float hi = dot(codes(q, 4u), a.v4) + dot(codes(q, 5u), a.v5) +
                   dot(codes(q, 6u), a.v6) + dot(codes(q, 7u), a.v7);
  if (LAYOUT == KILN_QGEMM_INT8) return lo + hi;
  if (LAYOUT == KILN_QGEMM_Q8_0) return q.s.x * (lo + hi);
  const vec4 one = vec4(1.0);
  const float sa_lo = dot(a.v0 + a.v1 + a.v2 + a.v3, one);
  const float sa_hi = dot(a.v4 + a.v5 + a.v6 + a.v7, one);
  if (LAYOUT == KILN_QGEMM_Q4_ZP) return q.s.x * lo + q.s.y * sa_lo + q.s.z * hi + q.s.w * sa_hi;
  return q.s.x * (lo + hi) + q.s.y * (sa_lo + sa_hi);  // one scale and offset per group
}

// The epilogue of weight row n0 + r (skipped past the end).
void store(uint batch, uint gm, uint gn, float v) {
  if (gn >= p.n) return;
  v *= p.scale;
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

// Row r's byte offset (rows past the end read the last one).
#define ROW(r) (min(n0 + (r), p.n - 1u) * p.b_row_stride + batch * p.b_batch_stride)

// int8's scale of the row at byte `row` (its first word).
float row_scale(uint row) {
  return LAYOUT == KILN_QGEMM_INT8 ? texelFetch(b4_t, int(row >> 4))[(row >> 2) & 3u] : 1.0;
}

// One row of A (TM = 1, the decode GEMV): per group, A's 8 vec4s fetched
// once for the TN weight rows, each row's codes dotted with them before
// its scale is applied.
void main_one_row(uint batch, uint n0, vec4 scale_lo, vec4 scale_hi) {
  const uint groups = p.k / 32u;
  const uint gm = gl_WorkGroupID.y;
  if (gm >= p.m) return;
  const uint a_row = (batch * p.a_batch_stride + gm * p.a_row_stride) >> 2;
  vec4 lo = vec4(0.0), hi = vec4(0.0);
  for (uint g = 0; g < groups; ++g) {
    const uint a = a_row + 8u * g;
    const Group ag = Group(A4(a), A4(a + 1), A4(a + 2), A4(a + 3), A4(a + 4), A4(a + 5),
                           A4(a + 6), A4(a + 7));
    for (uint r = 0; r < TN; ++r) {
      const float v = row_dot(ROW(r), g, ag);
      lo += v * vec4(equal(uvec4(r), uvec4(0, 1, 2, 3)));
      hi += v * vec4(equal(uvec4(r), uvec4(4, 5, 6, 7)));
    }
  }
  lo *= scale_lo;
  hi *= scale_hi;
  for (uint r = 0; r < TN; ++r) {
    store(batch, gm, n0 + r, r < 4u ? lo[r] : hi[r - 4u]);
  }
}

// TM (2..8) rows of A: per group, each weight row is fetched and decoded
// once (weights scaled in registers) and used for all TM rows, whose
// quads of A are fetched once for 4 weight rows (TN > 4: two passes of 4
// rows). Rows, accumulators (l<t>: the pass's weight rows of A row t) and
// the 8 quads of a group are written out: no array inside the group loop,
// and the rows past TM or TN fold away with the spec constants. (A loop
// over the quads, picking words by a dynamic index, ran 1.4x slower;
// written out, the 16-row MLP's two pipelines take about 0.7 s to build on
// lavapipe against 0.2 s before.)
#define KILN_Q(r) (TN > rb + r ? load_group(ROW(rb + r), g) : q0)
#define KILN_W(r, i) (TN > rb + r ? weights(q##r, i) : vec4(0.0))
#define KILN_D(r, x) (TN > rb + r ? dot(w##r, x) : 0.0)
#define KILN_ROW_STEP(t, i)                                               \
  if (TM > t) {                                                           \
    const vec4 x = A4(ar##t + 8u * g + i);                                \
    l##t += vec4(KILN_D(0, x), KILN_D(1, x), KILN_D(2, x), KILN_D(3, x)); \
  }
#define KILN_QUAD(i)                                                                       \
  {                                                                                        \
    const vec4 w0 = KILN_W(0, i), w1 = KILN_W(1, i), w2 = KILN_W(2, i), w3 = KILN_W(3, i); \
    KILN_ROW_STEP(0, i) KILN_ROW_STEP(1, i) KILN_ROW_STEP(2, i) KILN_ROW_STEP(3, i)        \
    KILN_ROW_STEP(4, i) KILN_ROW_STEP(5, i) KILN_ROW_STEP(6, i) KILN_ROW_STEP(7, i)        \
  }
void main_rows(uint batch, uint n0, vec4 scale_lo, vec4 scale_hi) {
  const uint groups = p.k / 32u;
  const uint gm0 = gl_WorkGroupID.y * TM;
  // A's rows gm0 + t in vec4s (rows past m read the last one, not stored).
  const uint a_base = batch * p.a_batch_stride, last = p.m - 1u;
  const uint ar0 = (a_base + min(gm0, last) * p.a_row_stride) >> 2;
  const uint ar1 = (a_base + min(gm0 + 1u, last) * p.a_row_stride) >> 2;
  const uint ar2 = (a_base + min(gm0 + 2u, last) * p.a_row_stride) >> 2;
  const uint ar3 = (a_base + min(gm0 + 3u, last) * p.a_row_stride) >> 2;
  const uint ar4 = (a_base + min(gm0 + 4u, last) * p.a_row_stride) >> 2;
  const uint ar5 = (a_base + min(gm0 + 5u, last) * p.a_row_stride) >> 2;
  const uint ar6 = (a_base + min(gm0 + 6u, last) * p.a_row_stride) >> 2;
  const uint ar7 = (a_base + min(gm0 + 7u, last) * p.a_row_stride) >> 2;
  // Written once and looped (glslc inlines every call: two calls would be
  // two copies in the module).
  for (uint pass = 0; pass < (TN + 3u) / 4u; ++pass) {
    const uint rb = TN > 4u ? 4u * pass : 0u;  // weight rows rb..rb + 3: 0 folds for TN <= 4
    vec4 l0 = vec4(0.0), l1 = vec4(0.0), l2 = vec4(0.0), l3 = vec4(0.0);
    vec4 l4 = vec4(0.0), l5 = vec4(0.0), l6 = vec4(0.0), l7 = vec4(0.0);
    for (uint g = 0; g < groups; ++g) {
      const QGroup q0 = load_group(ROW(rb), g);
      const QGroup q1 = KILN_Q(1), q2 = KILN_Q(2), q3 = KILN_Q(3);
      KILN_QUAD(0u) KILN_QUAD(1u) KILN_QUAD(2u) KILN_QUAD(3u)
      KILN_QUAD(4u) KILN_QUAD(5u) KILN_QUAD(6u) KILN_QUAD(7u)
    }
    // One epilogue in a loop (llvmpipe compiles each store into a long
    // sequence; gemm_cpu.comp).
    const vec4 scale = rb == 0u ? scale_lo : scale_hi;
    for (uint t = 0; t < TM; ++t) {
      const uint gm = gm0 + t;
      if (gm >= p.m) break;
      const vec4 v = t == 0u ? l0 : t == 1u ? l1 : t == 2u ? l2 : t == 3u ? l3
                   : t == 4u ? l4 : t == 5u ? l5 : t == 6u ? l6 : l7;
      for (uint r = 0; r < 4u && rb + r < TN; ++r) store(batch, gm, n0 + rb + r, v[r] * scale[r]);
    }
  }
}

void main() {
  const uint batch = gl_WorkGroupID.z;
  const uint n0 = (gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * TN;
  // int8's per-row scales (1 otherwise), applied to the sums.
  const vec4 scale_lo = vec4(row_scale(ROW(0)), row_scale(ROW(1)), row_scale(ROW(2)),
                             row_scale(ROW(3)));
  const vec4 scale_hi = vec4(row_scale(ROW(4)), row_scale(ROW(5)), row_scale(ROW(6)),
                             row_scale(ROW(7)));
  if (TM == 1) {
    main_one_row(batch, n0, scale_lo, scale_hi);
  } else {
    main_rows(batch, n0, scale_lo, scale_hi);
  }
}
