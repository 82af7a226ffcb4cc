// Fused attention, flash-attention style: for each (batch b, head h) and
// query row i, O[i] = softmax_j(scale * Q[i].K[j] + mask[i][j]) . V[j], with
// an online softmax (running max m and sum l, the accumulator rescaled as
// the max grows) over key tiles of TILE rows staged in shared memory, so
// the scores never reach memory and any sequence length fits. fp32 all
// through. KEY_LANES invocations per query row, each taking every
// KEY_LANES-th key of a tile with its own (m, l, acc), merged through
// shared memory at the end (desktop GPUs: 4, so BERT's 128-token heads
// fill 16 workgroups each, not 4); one workgroup per block of
// WG / KEY_LANES rows of one (b, h); grid (ceil(sq / (WG / KEY_LANES)),
// heads, batch * chunks).
//
// Every tensor is addressed through a view (element offset and strides for
// b, h and the row; the last dim contiguous), so head split/merge
// transposes and Q/K/V slices of one projection are read in place.
//
// Keys are split into `chunks` ranges of `key_chunk` when one invocation
// would loop past llvmpipe's pass budget (kernels_loops.h; the lowering's
// model is in onnx-emit/lower_attention.c): PHASE_PARTIAL then writes (m,
// l, acc[dv]) per (b, h, i, chunk) to binding 4 and PHASE_MERGE reads them
// from binding 0 and writes O. A NaN score makes the row NaN, and a row
// whose keys are all masked (-inf) is NaN, as in PyTorch's softmax.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_ATTN_DIM4) const uint D4 = 16;  // vec4s per q/k/v row (capacity)
layout(constant_id = KILN_SPEC_ATTN_KEY_TILE) const uint TILE = 16;
layout(constant_id = KILN_SPEC_ATTN_MASK) const uint MASK = KILN_ATTN_MASK_NONE;
layout(constant_id = KILN_SPEC_ATTN_CAUSAL) const bool CAUSAL = false;
layout(constant_id = KILN_SPEC_ATTN_PHASE) const uint PHASE = KILN_ATTN_PHASE_FULL;
layout(constant_id = KILN_SPEC_ATTN_KEY_LANES) const uint KEY_LANES = 1;

layout(set = 0, binding = 0) readonly buffer QBuffer { STORAGE_T q[]; };
layout(set = 0, binding = 1) readonly buffer KBuffer { STORAGE_T k[]; };
layout(set = 0, binding = 2) readonly buffer VBuffer { STORAGE_T v[]; };
layout(set = 0, binding = 3) readonly buffer MaskBuffer { STORAGE_T mask[]; };
layout(set = 0, binding = 4) writeonly buffer OutBuffer { STORAGE_T o[]; };

// Mirrors kiln_kernel_attention_params_t.
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

// K rows then V rows of a tile; after the key loop, the partial states of
// lanes 1.. of each row (acc, then m, l, nan in one vec4). With
// KEY_LANES > 1 the lanes of a row read different rows at once, so row r's
// vec4s are rotated by r (kiln_tile_at) to spread them over the banks.
const uint ROW4 = D4;
shared vec4 kv_tile[2 * TILE * ROW4];

uint kiln_tile_at(uint r, uint e) {
  if (KEY_LANES == 1) return r * ROW4 + e;
  const uint x = e + r % D4;
  return r * ROW4 + (x >= D4 ? x - D4 : x);
}

#define kNegInf uintBitsToFloat(0xff800000u)

// Scratch record of one (b, h, i, chunk): m, l, acc[dv].
uint kiln_scratch_index(uint b, uint h, uint i, uint c) {
  return (((b * p.heads + h) * p.sq + i) * p.chunks + c) * (p.dv + 2);
}

void kiln_store_row(uint b, uint h, uint i, vec4 acc[D4], float inv_l) {
  uint base = p.o_off + b * p.o_sb + h * p.o_sh + i * p.o_ss;
  for (uint e = 0; e < D4; ++e) {
    vec4 value = acc[e] * inv_l;
    for (uint c = 0; c < 4; ++c) {
      if (e * 4 + c < p.dv) o[base + e * 4 + c] = STORE(value[c]);
    }
  }
}

void kiln_merge(uint b, uint h, uint i) {
  float m = kNegInf;
  bool nan_row = false;
  for (uint c = 0; c < p.chunks; ++c) {
    float mc = LOAD(q[kiln_scratch_index(b, h, i, c)]);
    if (isnan(LOAD(q[kiln_scratch_index(b, h, i, c) + 1]))) nan_row = true;
    m = max(m, mc);
  }
  vec4 acc[D4];
  for (uint e = 0; e < D4; ++e) acc[e] = vec4(0.0);
  float l = 0.0;
  for (uint c = 0; c < p.chunks; ++c) {
    uint at = kiln_scratch_index(b, h, i, c);
    float mc = LOAD(q[at]);
    // A chunk with every key masked contributes nothing.
    float w = mc == kNegInf ? 0.0 : exp(mc - m);
    l += w * LOAD(q[at + 1]);
    for (uint e = 0; e < D4; ++e) {
      vec4 part = vec4(0.0);
      for (uint x = 0; x < 4; ++x) {
        if (e * 4 + x < p.dv) part[x] = LOAD(q[at + 2 + e * 4 + x]);
      }
      acc[e] += w * part;
    }
  }
  kiln_store_row(b, h, i, acc, nan_row ? uintBitsToFloat(0x7fc00000u) : 1.0 / l);
}

// Folds lane state (m2, l2, acc2) into (m, l, acc): the online softmax's
// rescale, a state with every key masked (-inf) contributing nothing.
void kiln_fold(inout float m, inout float l, inout vec4 acc[D4], float m2, float l2,
               vec4 acc2[D4]) {
  const float m_new = max(m, m2);
  if (m_new == kNegInf) return;
  const float w1 = m == kNegInf ? 0.0 : exp(m - m_new);
  const float w2 = m2 == kNegInf ? 0.0 : exp(m2 - m_new);
  l = l * w1 + l2 * w2;
  for (uint e = 0; e < D4; ++e) acc[e] = acc[e] * w1 + acc2[e] * w2;
  m = m_new;
}

void main() {
  const uint wg = gl_WorkGroupSize.x, lane = gl_LocalInvocationID.x;
  const uint rows = wg / KEY_LANES, key_lane = lane % KEY_LANES, row_in_wg = lane / KEY_LANES;
  const uint i = gl_WorkGroupID.x * rows + row_in_wg;
  const uint h = gl_WorkGroupID.y;
  const uint b = gl_WorkGroupID.z / p.chunks, chunk = gl_WorkGroupID.z % p.chunks;
  const bool live = i < p.sq && row_in_wg < rows;
  if (PHASE == KILN_ATTN_PHASE_MERGE) {
    if (live && key_lane == 0) kiln_merge(b, h, i);
    return;
  }
  const uint row = i < p.sq ? i : p.sq - 1;
  vec4 qr[D4], acc[D4];
  uint q_base = p.q_off + b * p.q_sb + h * p.q_sh + row * p.q_ss;
  for (uint e = 0; e < D4; ++e) {
    vec4 value = vec4(0.0);
    for (uint c = 0; c < 4; ++c) {
      if (e * 4 + c < p.d) value[c] = LOAD(q[q_base + e * 4 + c]);
    }
    qr[e] = value * p.scale;
    acc[e] = vec4(0.0);
  }
  uint begin = chunk * p.key_chunk;
  uint end = min(p.sk, begin + p.key_chunk);
  // Causal (top-left aligned, j <= i): no key past the block's last row.
  if (CAUSAL) end = min(end, min(p.sq, (gl_WorkGroupID.x + 1) * rows));
  float m = kNegInf, l = 0.0;
  bool nan_row = false;
  for (uint t0 = begin; t0 < end; t0 += TILE) {
    uint n = min(TILE, end - t0);
    barrier();  // the previous tile is consumed
    for (uint e = lane; e < TILE * D4; e += wg) {
      uint r = e / D4, dd = (e % D4) * 4;
      vec4 kv = vec4(0.0), vv = vec4(0.0);
      if (r < n) {
        uint kb = p.k_off + b * p.k_sb + h * p.k_sh + (t0 + r) * p.k_ss + dd;
        uint vb = p.v_off + b * p.v_sb + h * p.v_sh + (t0 + r) * p.v_ss + dd;
        for (uint c = 0; c < 4; ++c) {
          if (dd + c < p.d) kv[c] = LOAD(k[kb + c]);
          if (dd + c < p.dv) vv[c] = LOAD(v[vb + c]);
        }
      }
      kv_tile[kiln_tile_at(r, e % D4)] = kv;
      kv_tile[TILE * ROW4 + kiln_tile_at(r, e % D4)] = vv;
    }
    barrier();
    // Lanes past sq skip the math but keep to the barriers above.
    uint mask_base = b * p.m_sb + h * p.m_sh + i * p.m_si;
    for (uint r = key_lane; r < (live ? n : 0); r += KEY_LANES) {
      uint j = t0 + r;
      float s = 0.0;
      for (uint e = 0; e < D4; ++e) s += dot(qr[e], kv_tile[kiln_tile_at(r, e)]);
      if (MASK == KILN_ATTN_MASK_ADD) {
        s += LOAD(mask[mask_base + j * p.m_sj]);
      } else if (MASK == KILN_ATTN_MASK_SELECT) {
        float fill = LOAD(mask[mask_base + j * p.m_sj]);
        if (floatBitsToUint(fill) != KILN_SELECT_KEEP_BITS) s = fill;
      }
      if (CAUSAL && j > i) s = kNegInf;
      if (isnan(s)) nan_row = true;
      float m_new = max(m, s);
      if (m_new == kNegInf) continue;  // every key so far masked
      float correction = exp(m - m_new), weight = exp(s - m_new);
      l = l * correction + weight;
      for (uint e = 0; e < D4; ++e) {
        acc[e] = acc[e] * correction + weight * kv_tile[TILE * ROW4 + kiln_tile_at(r, e)];
      }
      m = m_new;
    }
  }
  if (KEY_LANES > 1) {
    // Lanes 1.. of each row hand their state to lane 0 through the tile
    // memory in two rounds, (m, l, nan) then acc: rows * (KEY_LANES - 1)
    // records of one and of D4 vec4s (the config keeps that <= 2 * TILE).
    const uint slot = row_in_wg * (KEY_LANES - 1) + key_lane - 1;
    barrier();  // the last tile is consumed
    if (key_lane > 0 && live) kv_tile[slot] = vec4(m, l, nan_row ? 1.0 : 0.0, 0.0);
    barrier();
    vec4 states[KEY_LANES];
    for (uint kl = 1; kl < KEY_LANES; ++kl) {
      states[kl] = key_lane == 0 && live ? kv_tile[row_in_wg * (KEY_LANES - 1) + kl - 1]
                                         : vec4(0.0);
    }
    barrier();
    if (key_lane > 0 && live) {
      for (uint e = 0; e < D4; ++e) kv_tile[slot * D4 + e] = acc[e];
    }
    barrier();
    if (key_lane > 0 || !live) return;
    for (uint kl = 1; kl < KEY_LANES; ++kl) {
      const uint at = (row_in_wg * (KEY_LANES - 1) + kl - 1) * D4;
      vec4 acc2[D4];
      for (uint e = 0; e < D4; ++e) acc2[e] = kv_tile[at + e];
      kiln_fold(m, l, acc, states[kl].x, states[kl].y, acc2);
      nan_row = nan_row || states[kl].z != 0.0;
    }
  }
  if (!live) return;
  if (PHASE == KILN_ATTN_PHASE_PARTIAL) {
    uint at = kiln_scratch_index(b, h, i, chunk);
    o[at] = STORE(m);
    o[at + 1] = STORE(nan_row ? uintBitsToFloat(0x7fc00000u) : l);
    for (uint e = 0; e < D4; ++e) {
      for (uint c = 0; c < 4; ++c) {
        if (e * 4 + c < p.dv) o[at + 2 + e * 4 + c] = STORE(acc[e][c]);
      }
    }
    return;
  }
  kiln_store_row(b, h, i, acc, nan_row ? uintBitsToFloat(0x7fc00000u) : 1.0 / l);
}
