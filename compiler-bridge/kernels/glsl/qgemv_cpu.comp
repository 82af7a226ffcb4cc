// qgemv for CPU Vulkan devices (llvmpipe): qgemm's ABI and layouts
// (qgemm.comp), written for llvmpipe's costs. 8 lanes along x (llvmpipe
// runs x as the SIMD lanes; y and z are loops: qgemm_cpu's 1 x 8 lanes
// fill one lane of 8). A lane owns TN (1..8) weight rows over all of k and,
// one row of A after the other (TM of them), walks the 32-element groups:
// the group of A is loaded once (8 texel fetches) for its TN rows, each
// row's group is fetched as whole texels (2-3, words picked by selects) and
// decoded into 8 vec4s. No private arrays: llvmpipe turns an array the
// compiler does not fully unroll into per-lane scratch memory (gemm_cpu.comp),
// which made qgemm_cpu 18x slower than the fp32 gemv on a 4096 x 4096 GEMV.
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

// Through int: x86 converts signed integers in one instruction.
vec4 nibbles(uint word, uint shift) {
  return vec4(ivec4((uvec4(word) >> (uvec4(0, 8, 16, 24) + shift)) & 15u));
}
vec4 nibbles_seq(uint word, uint shift) {  // q4_zp: element order low nibble first
  return vec4(ivec4((uvec4(word) >> (uvec4(0, 4, 8, 12) + shift)) & 15u));
}
vec4 bytes_signed(uint word) {
  return vec4((ivec4(word) << ivec4(24, 16, 8, 0)) >> 24);  // sign-extended bytes
}

// The group of A at vec4 `a`: 8 vec4s.
struct Group {
  vec4 v0, v1, v2, v3, v4, v5, v6, v7;
};

// sum over group g of the weight row at byte `row` times A's group.
float row_dot(uint row, uint g, Group a) {
  if (LAYOUT == KILN_QGEMM_Q4_0) {
    // 18 bytes from a 2-aligned offset: within the 2 texels holding it.
    const uint o = row + g * 18u;
    const uint t = o >> 4, j = (o >> 2) & 3u;
    const bool odd = (o & 2u) != 0u;
    const uvec4 t0 = btexel(t), t1 = btexel(t + 1u);
    const uvec4 w = shift4(t0, t1, j);
    const uint w4 = shift4(t1, uvec4(0), j).x;
    const float d = block_d(w.x, odd);
    const uvec4 q = block_words(w, w4, odd);
    // Code word i: elements 4i..4i+3 (low nibbles) and 16+4i.. (high).
    const float s = dot(nibbles(q.x, 0u), a.v0) + dot(nibbles(q.y, 0u), a.v1) +
                    dot(nibbles(q.z, 0u), a.v2) + dot(nibbles(q.w, 0u), a.v3) +
                    dot(nibbles(q.x, 4u), a.v4) + dot(nibbles(q.y, 4u), a.v5) +
                    dot(nibbles(q.z, 4u), a.v6) + dot(nibbles(q.w, 4u), a.v7);
    const vec4 one = vec4(1.0);
    const float sa = dot(a.v0 + a.v1 + a.v2 + a.v3 + a.v4 + a.v5 + a.v6 + a.v7, one);
    return d * (s - 8.0 * sa);
  } else if (LAYOUT == KILN_QGEMM_Q8_0) {
    // 34 bytes from a 2-aligned offset: within 3 texels.
    const uint o = row + g * 34u;
    const uint t = o >> 4, j = (o >> 2) & 3u;
    const bool odd = (o & 2u) != 0u;
    const uvec4 t0 = btexel(t), t1 = btexel(t + 1u), t2 = btexel(t + 2u);
    const uvec4 w0 = shift4(t0, t1, j), w1 = shift4(t1, t2, j);
    const float d = block_d(w0.x, odd);
    const uvec4 q0 = block_words(w0, w1.x, odd), q1 = block_words(w1, shift4(t2, uvec4(0), j).x, odd);
    const float s = dot(bytes_signed(q0.x), a.v0) + dot(bytes_signed(q0.y), a.v1) +
                    dot(bytes_signed(q0.z), a.v2) + dot(bytes_signed(q0.w), a.v3) +
                    dot(bytes_signed(q1.x), a.v4) + dot(bytes_signed(q1.y), a.v5) +
                    dot(bytes_signed(q1.z), a.v6) + dot(bytes_signed(q1.w), a.v7);
    return d * s;
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
    const uvec4 c0 = btexel(base + 1u + 2u * (j >> 1)), c1 = btexel(base + 2u + 2u * (j >> 1));
    const uint sh = (j & 1u) * 4u;
    const float s = dot(nibbles(c0.x, sh), a.v0) + dot(nibbles(c0.y, sh), a.v1) +
                    dot(nibbles(c0.z, sh), a.v2) + dot(nibbles(c0.w, sh), a.v3) +
                    dot(nibbles(c1.x, sh), a.v4) + dot(nibbles(c1.y, sh), a.v5) +
                    dot(nibbles(c1.z, sh), a.v6) + dot(nibbles(c1.w, sh), a.v7);
    const float sa = dot(a.v0 + a.v1 + a.v2 + a.v3 + a.v4 + a.v5 + a.v6 + a.v7, vec4(1.0));
    return dm.x * float(sc) * s - dm.y * float(mn) * sa;
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
    const uint q0 = w0.w, q1 = w1.x, q2 = w1.y, q3 = w1.z;
    const float lo = dot(nibbles_seq(q0, 0u) - z0, a.v0) + dot(nibbles_seq(q0, 16u) - z0, a.v1) +
                     dot(nibbles_seq(q1, 0u) - z0, a.v2) + dot(nibbles_seq(q1, 16u) - z0, a.v3);
    const float hi = dot(nibbles_seq(q2, 0u) - z1, a.v4) + dot(nibbles_seq(q2, 16u) - z1, a.v5) +
                     dot(nibbles_seq(q3, 0u) - z1, a.v6) + dot(nibbles_seq(q3, 16u) - z1, a.v7);
    return s0 * lo + s1 * hi;
  } else {  // KILN_QGEMM_INT8: fp32 scale per row (applied by the caller), then k int8
    const uint w = (row >> 2) + 1u + 8u * g;
    const uint t = w >> 2, c = w & 3u;
    const uvec4 t0 = btexel(t), t1 = btexel(t + 1u);
    const uvec4 t2 = c > 0u ? btexel(t + 2u) : uvec4(0);
    const uvec4 w0 = shift4(t0, t1, c), w1 = shift4(t1, t2, c);
    return dot(bytes_signed(w0.x), a.v0) + dot(bytes_signed(w0.y), a.v1) +
           dot(bytes_signed(w0.z), a.v2) + dot(bytes_signed(w0.w), a.v3) +
           dot(bytes_signed(w1.x), a.v4) + dot(bytes_signed(w1.y), a.v5) +
           dot(bytes_signed(w1.z), a.v6) + dot(bytes_signed(w1.w), a.v7);
  }
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

void main() {
  const uint batch = gl_WorkGroupID.z;
  const uint n0 = (gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * TN;
  // The TN rows' sums in two vec4s (rows 0..3, 4..7), each row's added by
  // a mask: no array (a constant-trip loop, unrolled or not).
  const vec4 scale_lo = vec4(row_scale(ROW(0)), row_scale(ROW(1)), row_scale(ROW(2)),
                             row_scale(ROW(3)));
  const vec4 scale_hi = vec4(row_scale(ROW(4)), row_scale(ROW(5)), row_scale(ROW(6)),
                             row_scale(ROW(7)));
  const uint groups = p.k / 32u;
  for (uint t = 0; t < TM; ++t) {
    const uint gm = gl_WorkGroupID.y * TM + t;
    if (gm >= p.m) break;
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
}
