// Quantized-weight GEMM/GEMV: gemm's push constants and epilogue with B
// a quantized weight W [n][k] (one row per output column, k along the
// row) in a layout of include/kiln/compiler/quant.h, read from its words:
//   C[b][m][n] = act(scale * sum_k A[b][m][k] * W[n][k] + bias + residual).
// A is fp32 with k contiguous (a_col_stride 1, a_row_stride % 4 == 0);
// b_row_stride is the bytes of one weight row; the weight buffer ends with
// at least 4 readable bytes past the last row (2-aligned blocks are loaded
// as whole words, up to one word past their last byte).
// Workgroup: WG_X k slices x WG_Y invocations of TN columns; an invocation
// owns TN columns (weight rows) and TM rows of A, walks the 32-element
// groups g = slice, slice + WG_X, ..., decodes each group of its TN weight
// rows once into vec4s and dots them with each row of A, loaded once per
// group; the slices are summed through shared memory. CPU devices run
// qgemv_cpu.comp under this kernel's id instead (config.c).
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

layout(set = 0, binding = 0) readonly buffer ABuffer { vec4 a4[]; };
#define A4(i) a4[i]
layout(set = 0, binding = 1) readonly buffer BBuffer { uint bw[]; };
uint bword(uint i) { return bw[i]; }
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

const uint WG_X = gl_WorkGroupSize.x;  // k slices
const uint WG_Y = gl_WorkGroupSize.y;  // columns
shared float partial[WG_X > 1 ? WG_X * WG_Y * TM * TN : 1];

// A 2-aligned block: its words loaded once (`count`, from the word holding
// its first byte), then its fp16 d and the i-th 4 bytes after d by funnel
// shifts in registers.
uint blk[9];
void load_block(uint o, uint count) {
  for (uint i = 0; i < 9; ++i) {
    if (i < count) blk[i] = bw[(o >> 2) + i];
  }
}
float block_d(uint o) { return unpackHalf2x16((o & 2u) != 0 ? blk[0] >> 16 : blk[0]).x; }
uint block_word(uint o, uint i) {
  return (o & 2u) != 0 ? blk[i + 1] : (blk[i] >> 16) | (blk[i + 1] << 16);
}

vec4 nibbles(uint word, uint shift) {
  return vec4((uvec4(word) >> (uvec4(0, 8, 16, 24) + shift)) & 15u);
}

vec4 bytes_signed(uint word) {
  return vec4((ivec4(word) << ivec4(24, 16, 8, 0)) >> 24);  // sign-extended bytes
}

// Group g (32 elements) of the weight row starting at byte `row`.
void decode(uint row, uint g, out vec4 w[8]) {
  if (LAYOUT == KILN_QGEMM_Q4_0) {
    const uint o = row + g * 18u;
    load_block(o, 5u);  // 18 bytes from a 2-aligned offset span 5 words
    const float d = block_d(o);
    for (uint i = 0; i < 4; ++i) {
      const uint word = block_word(o, i);
      w[i] = (nibbles(word, 0u) - 8.0) * d;
      w[4 + i] = (nibbles(word, 4u) - 8.0) * d;
    }
  } else if (LAYOUT == KILN_QGEMM_Q8_0) {
    const uint o = row + g * 34u;
    load_block(o, 9u);  // 34 bytes: 9 words
    const float d = block_d(o);
    for (uint i = 0; i < 8; ++i) w[i] = bytes_signed(block_word(o, i)) * d;
  } else if (LAYOUT == KILN_QGEMM_Q4_K) {
    const uint base = (row + (g >> 3) * 144u) >> 2;  // superblocks are 4-aligned
    const uint j = g & 7u;
    // Superblocks (144 = 9 x 16 bytes) and weight rows are 16-aligned:
    // header and scales are one texel's worth of words.
    const vec2 dm = unpackHalf2x16(bword(base));
    const uint s0 = bword(base + 1), s1 = bword(base + 2), s2 = bword(base + 3);
    // get_scale_min_k4: bytes j, j + 4 (and j - 4 for j >= 4) of s0 s1 s2.
    uint sc, mn;
    if (j < 4u) {
      sc = (s0 >> (8u * j)) & 63u;
      mn = (s1 >> (8u * j)) & 63u;
    } else {
      const uint sh = 8u * (j - 4u);
      const uint hi = (s2 >> sh) & 255u;
      sc = (hi & 15u) | (((s0 >> sh) >> 6u) & 3u) << 4u;
      mn = (hi >> 4u) | (((s1 >> sh) >> 6u) & 3u) << 4u;
    }
    const float d = dm.x * float(sc), m = dm.y * float(mn);
    const uint q = base + 4u + 8u * (j >> 1);
    const uint shift = (j & 1u) * 4u;
    for (uint i = 0; i < 8; ++i) w[i] = nibbles(bword(q + i), shift) * d - m;
  } else if (LAYOUT == KILN_QGEMM_Q4_ZP) {
    // 7 words per group: scale 0..15, scale 16..31, zero points, 4 code words.
    const uint base = (row >> 2) + 7u * g;
    const vec2 s = vec2(uintBitsToFloat(bword(base)), uintBitsToFloat(bword(base + 1)));
    const uint zw = bword(base + 2);
    const vec2 z = vec2(float(zw & 255u), float((zw >> 8) & 255u));
    for (uint i = 0; i < 4; ++i) {
      const uint word = bword(base + 3 + i);  // elements 8i .. 8i + 7, low nibble first
      const uint h = i >> 1;
      w[2 * i] = (vec4((uvec4(word) >> uvec4(0, 4, 8, 12)) & 15u) - z[h]) * s[h];
      w[2 * i + 1] = (vec4((uvec4(word) >> uvec4(16, 20, 24, 28)) & 15u) - z[h]) * s[h];
    }
  } else {  // KILN_QGEMM_INT8: fp32 scale per row, then k int8
    const float s = uintBitsToFloat(bword(row >> 2));
    const uint q = (row >> 2) + 1u + 8u * g;
    for (uint i = 0; i < 8; ++i) w[i] = bytes_signed(bword(q + i)) * s;
  }
}

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
