// Quantized-weight GEMV for a few rows of A (M <= 8): qgemm's push
// constants, bindings, layouts and epilogue (qgemm.comp), built for
// bandwidth: C[b][m][n] = act(scale * sum_k A[b][m][k] * W[n][k] + bias + residual).
// A workgroup owns TN weight rows (output columns) and TM rows of A; its WG
// lanes split k: 4 / SPAN lanes to a 32-element group, each lane reading
// SPAN quarters of it (SPAN x 8 elements: the codes' words, loaded together,
// plus the group's scale words) for every one of its TN rows, so a
// subgroup reads consecutive groups of a row as nearly contiguous words and
// its loads of A (2 SPAN vec4s per lane and row of A, reused for all TN
// weight rows) are coalesced. All lanes of the workgroup stride over k, so
// the weight loads in flight grow with the workgroup, not with k. Partial
// sums meet through subgroupAdd (the _subgroup build) or a shared-memory
// tree, in a fixed order (deterministic), then the lanes run the TM x TN
// epilogues. Grid: (ceil(n / TN), ceil(m / TM), batch). k a multiple of 32
// (q4_K: 256); the weight buffer ends with at least 4 readable bytes past
// the last row. Activations, bias, residual and output through storage.glsl
// (the _f16 build: fp16 in memory, fp32 math).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifdef KILN_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "kernels_codes.h"
#include "activation.glsl"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z = 1) in;  // y is 1
layout(constant_id = KILN_SPEC_GEMM_TM) const uint TM = 1;  // rows of A
layout(constant_id = KILN_SPEC_GEMM_TN) const uint TN = 1;  // weight rows per workgroup
// Groups per lane per step: their loads issued together (more bytes in
// flight per warp than one group's 4-byte words).
layout(constant_id = KILN_SPEC_GEMM_TK) const uint U = 1;
// Code words (4 bytes) per lane, group and row: 1, 2 or 4, i.e. the
// quarters of a group a lane reads in the 4-bit layouts; the 8-bit ones
// (a quarter is 8 bytes) read half as many quarters (at least one), so a
// lane loads the same code bytes in every layout; so do more than 2 rows
// of A (their 2 SPAN vec4 loads each: registers; H100, M = 4: 1 quarter
// 0.019 ms, 2 quarters 0.028).
layout(constant_id = KILN_SPEC_QGEMV_SPAN) const uint SPAN_WORDS = 1;
layout(constant_id = KILN_SPEC_GEMM_ACTIVATION) const uint ACTIVATION = 0;
layout(constant_id = KILN_SPEC_GEMM_HAS_BIAS) const bool HAS_BIAS = false;
layout(constant_id = KILN_SPEC_GEMM_HAS_RESIDUAL) const bool HAS_RESIDUAL = false;
layout(constant_id = KILN_SPEC_QGEMM_LAYOUT) const uint LAYOUT = KILN_QGEMM_Q4_0;
const bool EIGHT_BIT = LAYOUT == KILN_QGEMM_INT8 || LAYOUT == KILN_QGEMM_Q8_0;
const uint SPAN = (EIGHT_BIT || TM > 2u) && SPAN_WORDS > 1u ? SPAN_WORDS / 2u : SPAN_WORDS;

layout(set = 0, binding = 0) readonly buffer ABuffer { STORAGE_VEC4_T a4[]; };
layout(set = 0, binding = 1) readonly buffer BBuffer { uint bw[]; };
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

const uint WG = gl_WorkGroupSize.x;
const uint ACC = TM * TN;
shared float partial[WG * ACC];

// Codes to floats without conversion instructions (int-to-float runs at a
// quarter of the fp32 rate on NVIDIA, and was what bounded the GEMV per
// element on the H100): the float whose bits are 2^23's with the code in
// the low mantissa bits is 2^23 + code exactly; subtracting 2^23 + offset
// leaves code - offset exactly (codes below 2^8).
const uint kMagic = 0x4B000000u;  // 2^23
vec4 codes_minus(uvec4 codes, float offset) {
  return uintBitsToFloat(codes | kMagic) - (8388608.0 + offset);
}

// Nibbles 0, 2, 4, 6 of `word` (shift 0) or 1, 3, 5, 7 (shift 4), minus offset.
vec4 nibbles_minus(uint word, uint shift, float offset) {
  return codes_minus((uvec4(word) >> (uvec4(0, 8, 16, 24) + shift)) & 15u, offset);
}

// The 4 signed bytes of `word`: biased to unsigned (x ^ 0x80 = x + 128).
vec4 bytes_signed(uint word) {
  return codes_minus(((uvec4(word) >> uvec4(0, 8, 16, 24)) & 255u) ^ 128u, 128.0);
}

// The fp16 d at the 2-aligned byte offset o.
float half_at(uint o) {
  const uint word = bw[o >> 2];
  return unpackHalf2x16((o & 2u) != 0 ? word >> 16 : word).x;
}

// Quarters q0 .. q0 + SPAN - 1 (8 elements each) of group g of the weight
// row at byte `row`: scale * w[i] multiplies the vec4 of A at 8 g + ai[i]
// (i < 2 SPAN); the group's scale is applied once to the span's dot
// products where the layout allows. A span's code words are loaded
// together, one word more where they start mid-word (2-aligned blocks; the
// buffer's tail makes it readable), and picked by funnel shifts.
void decode_span(uint row, uint g, uint q0, out vec4 w[8], out uint ai[8], out float scale) {
  [[unroll]] for (uint i = 0; i < 2u * SPAN; ++i) ai[i] = 2u * q0 + i;
  scale = 1.0;
  if (LAYOUT == KILN_QGEMM_Q4_0) {
    // Code word q holds elements 4q..4q+3 (low nibbles) and 16+4q.. (high).
    const uint o = row + g * 18u;
    scale = half_at(o);
    const uint c = (o + 2u + 4u * q0) >> 2;
    const bool mid = ((o + 2u) & 2u) != 0u;
    uint cw[5];
    [[unroll]] for (uint i = 0; i <= SPAN; ++i) cw[i] = bw[c + i];
    [[unroll]] for (uint e = 0; e < SPAN; ++e) {
      const uint word = mid ? (cw[e] >> 16) | (cw[e + 1] << 16) : cw[e];
      w[2 * e] = nibbles_minus(word, 0u, 8.0);
      w[2 * e + 1] = nibbles_minus(word, 4u, 8.0);
      ai[2 * e] = q0 + e;
      ai[2 * e + 1] = 4u + q0 + e;
    }
  } else if (LAYOUT == KILN_QGEMM_Q8_0) {
    const uint o = row + g * 34u;
    scale = half_at(o);
    const uint c = (o + 2u + 8u * q0) >> 2;
    const bool mid = ((o + 2u) & 2u) != 0u;
    uint cw[9];
    [[unroll]] for (uint i = 0; i <= 2u * SPAN; ++i) cw[i] = bw[c + i];
    [[unroll]] for (uint i = 0; i < 2u * SPAN; ++i) {
      w[i] = bytes_signed(mid ? (cw[i] >> 16) | (cw[i + 1] << 16) : cw[i]);
    }
  } else if (LAYOUT == KILN_QGEMM_Q4_K) {
    const uint base = (row + (g >> 3) * 144u) >> 2;  // superblocks are 4-aligned
    const uint j = g & 7u;
    const vec2 dm = unpackHalf2x16(bw[base]);
    const uint s0 = bw[base + 1], s1 = bw[base + 2], s2 = bw[base + 3];
    uint sc, mn;  // get_scale_min_k4 (docs/quantization.md)
    if (j < 4u) {
      sc = (s0 >> (8u * j)) & 63u;
      mn = (s1 >> (8u * j)) & 63u;
    } else {
      const uint sh = 8u * (j - 4u);
      const uint hi = (s2 >> sh) & 255u;
      sc = (hi & 15u) | (((s0 >> sh) >> 6u) & 3u) << 4u;
      mn = (hi >> 4u) | (((s1 >> sh) >> 6u) & 3u) << 4u;
    }
    const float d = dm.x * float(sc), mm = dm.y * float(mn);
    const uint qw = base + 4u + 8u * (j >> 1) + 2u * q0;
    const uint shift = (j & 1u) * 4u;
    [[unroll]] for (uint i = 0; i < 2u * SPAN; ++i) w[i] = nibbles_minus(bw[qw + i], shift, 0.0) * d - mm;
  } else if (LAYOUT == KILN_QGEMM_Q4_ZP) {
    // 7 words per group: scale 0..15, scale 16..31, zero points, 4 code words.
    const uint base = (row >> 2) + 7u * g;
    [[unroll]] for (uint e = 0; e < SPAN; ++e) {
      const uint q = q0 + e, h = q >> 1;
      const float s = uintBitsToFloat(bw[base + h]);
      const float z = float((bw[base + 2u] >> (8u * h)) & 255u);
      const uint word = bw[base + 3u + q];  // elements 8q .. 8q + 7, low nibble first
      w[2 * e] = codes_minus((uvec4(word) >> uvec4(0, 4, 8, 12)) & 15u, z) * s;
      w[2 * e + 1] = codes_minus((uvec4(word) >> uvec4(16, 20, 24, 28)) & 15u, z) * s;
    }
  } else {  // KILN_QGEMM_INT8: fp32 scale per row, then k int8
    scale = uintBitsToFloat(bw[row >> 2]);
    const uint qw = (row >> 2) + 1u + 8u * g + 2u * q0;
    [[unroll]] for (uint i = 0; i < 2u * SPAN; ++i) w[i] = bytes_signed(bw[qw + i]);
  }
}

void main() {
  const uint lane = gl_LocalInvocationID.x;
  const uint lanes = 4u / SPAN;  // per group
  const uint q0 = (lane % lanes) * SPAN, slot = lane / lanes;
  const uint batch = gl_WorkGroupID.z;
  const uint n0 = gl_WorkGroupID.x * TN;
  const uint m0 = gl_WorkGroupID.y * TM;
  // Rows past the end read the last one (not stored). The constant-trip
  // loops are unrolled so that these arrays and the accumulators stay in
  // registers.
  uint w_rows[TN];
  [[unroll]] for (uint r = 0; r < TN; ++r) {
    w_rows[r] = min(n0 + r, p.n - 1u) * p.b_row_stride + batch * p.b_batch_stride;
  }
  uint a_rows[TM];
  [[unroll]] for (uint t = 0; t < TM; ++t) {
    a_rows[t] = (batch * p.a_batch_stride + min(m0 + t, p.m - 1u) * p.a_row_stride) >> 2;
  }
  float acc[ACC];
  [[unroll]] for (uint i = 0; i < ACC; ++i) acc[i] = 0.0;
  const uint groups = p.k / 32u, step = WG / lanes;
  for (uint g0 = slot; g0 < groups; g0 += U * step) {
    // U groups; one past the end reads the last group, weighted 0 (no
    // branch between the loads).
    [[unroll]] for (uint u = 0; u < U; ++u) {
      const uint gu = g0 + u * step;
      const uint g = min(gu, groups - 1u);
      const float live = gu < groups ? 1.0 : 0.0;
      [[unroll]] for (uint r = 0; r < TN; ++r) {
        vec4 w[8];
        uint ai[8];
        float scale;
        decode_span(w_rows[r], g, q0, w, ai, scale);
        scale *= live;
        [[unroll]] for (uint t = 0; t < TM; ++t) {
          const uint a = a_rows[t] + 8u * g;
          float s = 0.0;
          [[unroll]] for (uint i = 0; i < 2u * SPAN; ++i) s += dot(w[i], LOAD4(a4[a + ai[i]]));
          acc[t * TN + r] += s * scale;
        }
      }
    }
  }
#ifdef KILN_SUBGROUP
  // Subgroup sums, then the subgroups' sums through shared memory.
  [[unroll]] for (uint i = 0; i < ACC; ++i) acc[i] = subgroupAdd(acc[i]);
  if (subgroupElect()) {
    [[unroll]] for (uint i = 0; i < ACC; ++i) partial[gl_SubgroupID * ACC + i] = acc[i];
  }
  barrier();
#else
  [[unroll]] for (uint i = 0; i < ACC; ++i) partial[lane * ACC + i] = acc[i];
  barrier();
  // Halve the lanes until one is left (WG is a power of two).
  for (uint half_ = WG / 2; half_ > 0; half_ /= 2) {
    if (lane < half_) {
      for (uint i = 0; i < ACC; ++i) partial[lane * ACC + i] += partial[(lane + half_) * ACC + i];
    }
    barrier();
  }
#endif
  // Lane i stores accumulator i (and i + WG, ...): row t = i / TN of A,
  // weight row r = i % TN.
  for (uint i = lane; i < ACC; i += WG) {
#ifdef KILN_SUBGROUP
    float v = 0.0;
    for (uint s = 0; s < gl_NumSubgroups; ++s) v += partial[s * ACC + i];
#else
    float v = partial[i];
#endif
    const uint gm = m0 + i / TN, gn = n0 + i % TN;
    if (gm >= p.m || gn >= p.n) continue;
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
}
