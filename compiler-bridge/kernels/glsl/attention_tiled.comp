// Fused attention for GPUs without tensor cores at this precision (fp32
// everywhere; fp16 storage with fp32 math): attention.comp's ABI (bindings,
// push constants, mask kinds, causal), head dims up to 64, every key in
// one pass (the only run-time loop is the one over key tiles, so even
// llvmpipe's pass budget allows ~2M keys; the lowering checks it).
//
// A workgroup of 128 takes 16 query rows of one (b, h), 8 invocations a
// row. Per tile of 32 keys staged in shared memory (K rows padded by one
// vec4 against bank conflicts):
//   S: each invocation scores 4 keys of its row (keys kl, kl + 8, ...)
//      against its scaled Q row, staged once in shared memory (in
//      registers, 64 of them, BERT-base's attention took 0.212 ms a call
//      on an H100 against 0.178): 4 independent dot products;
//   softmax: the row's max and sum meet through shared memory (8 partials
//      each), P goes to shared memory;
//   O: each invocation keeps 2 vec4s of its row's output (columns kl and
//      kl + 8 in vec4s) and adds P V over the tile's keys, rescaled by
//      exp(m_old - m_new) as the running max grows.
// Why: attention.comp gives one row's keys to 4 invocations walking them
// one at a time (a serial chain of dot, exp and update per key); BERT-base
// fp32 spent 45 us a layer in it on an H100.
//
// A NaN score makes the row NaN, and a row whose keys are all masked
// (-inf) is NaN, as in PyTorch's softmax and attention.comp. Rows past sq
// compute on the last row and are not written; keys past the range score
// -inf against zero K/V rows. Built with its loops unrolled (spirv-opt
// --loop-unroll): S and O stay in registers, and the tile loop is the one
// loop llvmpipe counts. (NVIDIA's driver unrolls it the same way: a build
// without the unroll ran as fast on an H100.)
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kernels_codes.h"
#include "storage.glsl"

const uint D4 = KILN_ATTN_TILED_DIM / 4;  // vec4s per q/k/v row (capacity)
const uint BR = KILN_ATTN_TILED_ROWS;     // query rows per workgroup
const uint BC = KILN_ATTN_TILED_KEYS;     // keys per tile
const uint THREADS = KILN_ATTN_TILED_THREADS;
const uint LANES = THREADS / BR;  // invocations per row
const uint KEYS = BC / LANES;     // scores per invocation per tile
const uint OUT4 = D4 / LANES;     // output vec4s per invocation
layout(local_size_x = KILN_ATTN_TILED_THREADS, local_size_x_id = 0, local_size_y = 1,
       local_size_z = 1) in;
// The config's head-dim capacity and workgroup (what the lowering and the
// grid assumed): any other writes NaN.
layout(constant_id = KILN_SPEC_ATTN_DIM4) const uint SPEC_D4 = D4;
layout(constant_id = KILN_SPEC_ATTN_MASK) const uint MASK = KILN_ATTN_MASK_NONE;
layout(constant_id = KILN_SPEC_ATTN_CAUSAL) const bool CAUSAL = false;
const bool BUILD_MATCHES = SPEC_D4 == D4 && gl_WorkGroupSize.x == THREADS;

layout(set = 0, binding = 0) readonly buffer QBuffer { STORAGE_VEC4_T q4[]; };
layout(set = 0, binding = 1) readonly buffer KBuffer { STORAGE_VEC4_T k4[]; };
layout(set = 0, binding = 2) readonly buffer VBuffer { STORAGE_VEC4_T v4[]; };
layout(set = 0, binding = 3) readonly buffer MaskBuffer { STORAGE_T mask[]; };
KILN_OUTPUT_BUFFER(4)

// Mirrors kiln_kernel_attention_params_t (key_chunk and chunks unused).
layout(push_constant) uniform Params {
  uint batch, heads, sq, sk, d, dv;
  float scale;
  uint key_chunk, chunks;
  uint q_off, q_sb, q_sh, q_ss;
  uint k_off, k_sb, k_sh, k_ss;
  uint v_off, v_sb, v_sh, v_ss;
  uint o_off, o_sb, o_sh, o_ss;
  uint m_sb, m_sh, m_si, m_sj;
} p;

const uint K_S = D4 + 1;  // staged K row stride in vec4s
const uint P_S = BC + 1;  // P row stride in floats
shared vec4 k_sh[BC * K_S];
shared vec4 v_sh[BC * D4];
shared float p_sh[BR * P_S];
shared float max_sh[THREADS];  // per (row, lane): the tile's max; at the end, NaN flags
shared float sum_sh[THREADS];  // per (row, lane): the tile's sum of P
shared vec4 q_sh[BR * K_S];     // the scaled Q rows

#define kNegInf uintBitsToFloat(0xff800000u)
#define kNaN uintBitsToFloat(0x7fc00000u)

// Quad e of a row of buffer BUF at element `at` with `dims` valid
// elements: one vec4 load where `quads` (the view is 4-aligned), else
// element by element.
#define KILN_ROW_QUAD(BUF)                                                      \
  vec4 kiln_row_quad_##BUF(uint at, uint e, uint dims, bool quads) {            \
    if (e * 4 >= dims) return vec4(0.0);                                        \
    if (quads) return LOAD4(BUF[(at >> 2) + e]);                                \
    vec4 r = vec4(0.0);                                                         \
    [[unroll]] for (uint c = 0; c < 4; ++c) {                                   \
      if (e * 4 + c < dims) r[c] = LOAD_AT(BUF, at + e * 4 + c);                \
    }                                                                           \
    return r;                                                                   \
  }
KILN_ROW_QUAD(q4)
KILN_ROW_QUAD(k4)
KILN_ROW_QUAD(v4)

bool kiln_view_quads(uint off, uint sb, uint sh, uint ss, uint dims) {
  return ((off | sb | sh | ss | dims) & 3u) == 0;
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint r = tid / LANES, kl = tid % LANES;
  const uint i = gl_WorkGroupID.x * BR + r;
  const uint h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
  const bool live = i < p.sq;
  const uint row = live ? i : p.sq - 1;
  const bool q_quads = kiln_view_quads(p.q_off, p.q_sb, p.q_sh, p.q_ss, p.d);
  const bool k_quads = kiln_view_quads(p.k_off, p.k_sb, p.k_sh, p.k_ss, p.d);
  const bool v_quads = kiln_view_quads(p.v_off, p.v_sb, p.v_sh, p.v_ss, p.dv);

  const uint q_at = p.q_off + b * p.q_sb + h * p.q_sh + row * p.q_ss;
  [[unroll]] for (uint e = kl; e < D4; e += LANES) {
    q_sh[r * K_S + e] = kiln_row_quad_q4(q_at, e, p.d, q_quads) * p.scale;
  }
  vec4 o[OUT4];
  [[unroll]] for (uint c = 0; c < OUT4; ++c) o[c] = vec4(0.0);
  float m = kNegInf, l = 0.0;
  bool nan_row = false;

  uint end = p.sk;
  // Causal (top-left aligned, j <= i): no key past the block's last row.
  if (CAUSAL) end = min(end, min(p.sq, (gl_WorkGroupID.x + 1) * BR));
  const uint k_at0 = p.k_off + b * p.k_sb + h * p.k_sh;
  const uint v_at0 = p.v_off + b * p.v_sb + h * p.v_sh;
  const uint mask_at = b * p.m_sb + h * p.m_sh + row * p.m_si;
  for (uint t0 = 0; t0 < end; t0 += BC) {
    const uint n = min(BC, end - t0);
    barrier();  // the previous tile is consumed
    [[unroll]] for (uint s = 0; s < BC * D4 / THREADS; ++s) {
      const uint q = tid + s * THREADS;
      const uint kr = q / D4, e = q % D4;
      vec4 kv = vec4(0.0), vv = vec4(0.0);
      if (kr < n) {
        kv = kiln_row_quad_k4(k_at0 + (t0 + kr) * p.k_ss, e, p.d, k_quads);
        vv = kiln_row_quad_v4(v_at0 + (t0 + kr) * p.v_ss, e, p.dv, v_quads);
      }
      k_sh[kr * K_S + e] = kv;
      v_sh[kr * D4 + e] = vv;
    }
    barrier();
    float s[KEYS];
    float tile_max = kNegInf;
    [[unroll]] for (uint x = 0; x < KEYS; ++x) {
      const uint jl = kl + x * LANES, j = t0 + jl;
      float v = 0.0;
      [[unroll]] for (uint e = 0; e < D4; ++e) v += dot(q_sh[r * K_S + e], k_sh[jl * K_S + e]);
      if (jl >= n) {
        v = kNegInf;
      } else {
        if (MASK == KILN_ATTN_MASK_ADD) {
          v += LOAD(mask[mask_at + j * p.m_sj]);
        } else if (MASK == KILN_ATTN_MASK_SELECT) {
          const float fill = LOAD(mask[mask_at + j * p.m_sj]);
          if (floatBitsToUint(fill) != KILN_SELECT_KEEP_BITS) v = fill;
        }
        if (CAUSAL && j > row) v = kNegInf;
        if (isnan(v)) nan_row = true;
      }
      s[x] = v;
      tile_max = max(tile_max, v);
    }
    max_sh[tid] = tile_max;
    barrier();
    float m_new = m;
    [[unroll]] for (uint x = 0; x < LANES; ++x) m_new = max(m_new, max_sh[r * LANES + x]);
    // Every key so far masked: nothing to add, nothing to rescale.
    const bool none = m_new == kNegInf;
    const float correction = none || m == kNegInf ? (none ? 1.0 : 0.0) : exp(m - m_new);
    float part = 0.0;
    [[unroll]] for (uint x = 0; x < KEYS; ++x) {
      const float w = none || s[x] == kNegInf ? 0.0 : exp(s[x] - m_new);
      p_sh[r * P_S + kl + x * LANES] = w;
      part += w;
    }
    sum_sh[tid] = part;
    barrier();
    float tile_sum = 0.0;
    [[unroll]] for (uint x = 0; x < LANES; ++x) tile_sum += sum_sh[r * LANES + x];
    l = l * correction + tile_sum;
    m = m_new;
    [[unroll]] for (uint c = 0; c < OUT4; ++c) o[c] *= correction;
    [[unroll]] for (uint jl = 0; jl < BC; ++jl) {
      const float w = p_sh[r * P_S + jl];
      [[unroll]] for (uint c = 0; c < OUT4; ++c) o[c] += w * v_sh[jl * D4 + kl + c * LANES];
    }
  }
  // The row's lanes share their NaN flags.
  barrier();
  max_sh[tid] = nan_row ? 1.0 : 0.0;
  barrier();
  [[unroll]] for (uint x = 0; x < LANES; ++x) nan_row = nan_row || max_sh[r * LANES + x] != 0.0;
  if (!live) return;
  // l == 0: every key masked.
  const float inv_l = nan_row || l == 0.0 ? kNaN : 1.0 / l;
  const uint o_at = p.o_off + b * p.o_sb + h * p.o_sh + i * p.o_ss;
  const bool o_quads = kiln_view_quads(p.o_off, p.o_sb, p.o_sh, p.o_ss, p.dv);
  [[unroll]] for (uint c = 0; c < OUT4; ++c) {
    const uint e = kl + c * LANES;
    const vec4 value = BUILD_MATCHES ? o[c] * inv_l : vec4(kNaN);
    if (o_quads) {
      if (e * 4 < p.dv) kiln_store4(o_at + e * 4, value);
    } else {
      [[unroll]] for (uint x = 0; x < 4; ++x) {
        if (e * 4 + x < p.dv) kiln_store1(o_at + e * 4 + x, value[x]);
      }
    }
  }
}
