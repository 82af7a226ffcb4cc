// Fused attention on tensor cores (GL_NV_cooperative_matrix, fp16 storage):
// attention.comp's ABI (bindings, push constants, mask kinds, causal) for
// head dims up to D (one build per D, 64 or 128), in one pass over the
// keys (no key chunks: it never runs on llvmpipe).
//
// A workgroup takes 16 query rows of one (b, h); its 8 subgroups split the
// keys in tiles of KT = 32 (subgroup w takes tiles w, w + WARPS, ...: one
// tile each up to 256 keys), each with its own online-softmax state,
// merged at the end as the SIMT kernel's key lanes are. Per tile:
//   S (16 x KT, f32) = Q K^T on 16x16x16 MMAs (Q's fragments in registers),
//   softmax in f32 by two lanes per row (scale, mask, causal, running max m
//   and sum l; P rounded to f16, l summed from the rounded P so numerator
//   and denominator agree), O (16 x D, f32 accumulators) rescaled by
//   exp(m_old - m_new) through shared memory, then O += P V.
// A tile's K and V rows come into registers at once (one round trip to
// memory; D 128 fetches V when it multiplies it) and go through the
// subgroup's shared memory 16 keys x 64 dims at a time, zero past the keys
// and dims. (Loads straight from the buffers would need
// cooperativeMatrixRobustBufferAccess to stay bounded: the H200's NV
// cooperative matrix does not report it.)
// Why: BERT's and ViT's attention ran 0.72 ms per call on the SIMT kernel
// at f16 on an H100, the largest piece not on tensor cores; then ViT's
// 197 keys gave 4 subgroups of 32-key tiles two tiles in series (22 us a
// dispatch against BERT's 10 on the H200).
//
// A NaN score makes the row NaN, and a row whose keys are all masked
// (-inf) is NaN, as in PyTorch's softmax and attention.comp. Rows past sq
// compute on zero queries and are not written; keys past the range are
// -inf with zero K/V rows. Loops the driver must keep in registers are
// unrolled at build time (spirv-opt --loop-unroll, as gemm_coopmat).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#include "kernels_codes.h"
#include "storage.glsl"

#ifndef KILN_AC_D
#define KILN_AC_D 64
#endif
const uint D = KILN_AC_D;
const uint KT = 32;  // keys per tile
const uint WARPS = KILN_ATTN_COOPMAT_THREADS / 32;
const uint THREADS = WARPS * 32;
layout(local_size_x = KILN_ATTN_COOPMAT_THREADS, local_size_x_id = 0, local_size_y = 1,
       local_size_z = 1) in;
// The config's head-dim capacity (what the lowering checked d and dv
// against) and workgroup: a build other than the config's writes NaN.
layout(constant_id = KILN_SPEC_ATTN_DIM4) const uint SPEC_D4 = KILN_AC_D / 4;
layout(constant_id = KILN_SPEC_ATTN_MASK) const uint MASK = KILN_ATTN_MASK_NONE;
layout(constant_id = KILN_SPEC_ATTN_CAUSAL) const bool CAUSAL = false;
const bool BUILD_MATCHES = SPEC_D4 * 4 == D && gl_WorkGroupSize.x == THREADS;

// Q, K and V read as uvec4s (8 halves) where a view's rows are 8-aligned,
// else half by half.
layout(set = 0, binding = 0) readonly buffer QBuffer { uvec4 q8[]; };
layout(set = 0, binding = 1) readonly buffer KBuffer { uvec4 k8[]; };
layout(set = 0, binding = 2) readonly buffer VBuffer { uvec4 v8[]; };
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

const uint D8 = D / 8;        // uvec4s per f16 row
const uint Q_S = D8 + 1;      // staged Q row stride (+1 against bank conflicts)
const uint C_S = 9;           // staged chunk rows: 64 halves (K, V) + 1
const uint S_S4 = KT / 4 + 1;  // S rows: KT f32; also O's rescale, 32 f32
const uint P_S8 = KT / 8 + 1;  // P rows: KT f16
const uint M_S4 = 17;         // the merge's O rows: 64 f32 + 1
const uint MC = D < 64 ? D : 64;  // O columns per merge round
const uint DC = (D + 63) / 64;   // 64-dim chunks of a K or V row
// V fetched with K (D 64; D 128's would take 64 more registers).
const bool V_EARLY = D <= 64;
// Where, past its area's start, each cooperative-matrix access begins: S
// and the rescale's O at 0 and 4 (one shape, layout and stride), P at 1
// and 3, the merge's O at 2, 6, 10, 14; staged K at even, V at odd
// offsets. The optimizer merges equal addresses into one pointer, and the
// runtime's clamp takes a shared pointer only for accesses of one layout
// and stride (hal/spirv_clamp_local.c). The rows' padding leaves room.
const uint P_AT = 1, MERGE_AT = 2, V_AT = 1;
// One shared array (the runtime's robust-access clamp bounds each
// cooperative-matrix load and store by it): the workgroup's Q rows, then
// per subgroup its S / P rows (the merge's O runs on into the next area),
// its staged chunk and 16 uvec4s of row state and exchange (43264 bytes
// for D 128: KILN_ATTN_COOPMAT_SHARED_BYTES).
const uint Q_SIZE = 16 * Q_S;
const uint X_SIZE = 16 * S_S4;
const uint C_SIZE = 16 * C_S;
const uint SG_SIZE = X_SIZE + C_SIZE + 16;
shared uvec4 kiln_sh[Q_SIZE + WARPS * SG_SIZE];

#define kNegInf uintBitsToFloat(0xff800000u)
#define kNaN uintBitsToFloat(0x7fc00000u)

// 8 halves from element `at` of a buffer: one uvec4 when aligned and
// whole, else half by half, zero past `lim` values.
#define KILN_FETCH8(NAME, BUF)                                                   \
  uvec4 NAME(uint at, uint lim, bool aligned) {                                  \
    if (aligned && lim >= 8) return BUF[at >> 3];                                \
    uvec4 r = uvec4(0);                                                          \
    [[unroll]] for (uint j = 0; j < 8; ++j) {                                    \
      if (j < lim) {                                                             \
        const uint i = at + j;                                                   \
        const uint bits = (BUF[i >> 3][(i >> 1) & 3] >> ((i & 1) * 16)) & 0xffffu; \
        r[j >> 1] |= bits << ((j & 1) * 16);                                     \
      }                                                                          \
    }                                                                            \
    return r;                                                                    \
  }
KILN_FETCH8(kiln_fetch_q, q8)
KILN_FETCH8(kiln_fetch_k, k8)
KILN_FETCH8(kiln_fetch_v, v8)

// The exchange slot of `lane`: one float per lane.
float kiln_exchange(uint rb, uint lane, float value) {
  kiln_sh[rb + lane / 4][lane % 4] = floatBitsToUint(value);
  subgroupMemoryBarrierShared();
  subgroupBarrier();
  const uint other = lane ^ 1u;
  const float partner = uintBitsToFloat(kiln_sh[rb + other / 4][other % 4]);
  subgroupBarrier();  // read before the slot is written again
  return partner;
}

void main() {
  const uint warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint tid = gl_LocalInvocationID.x;
  const uint i0 = gl_WorkGroupID.x * 16, h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
  const bool q_al = ((p.q_off | p.q_sb | p.q_sh | p.q_ss) & 7u) == 0;
  const bool k_al = ((p.k_off | p.k_sb | p.k_sh | p.k_ss) & 7u) == 0;
  const bool v_al = ((p.v_off | p.v_sb | p.v_sh | p.v_ss) & 7u) == 0;
  const uint q_base = p.q_off + b * p.q_sb + h * p.q_sh;
  const uint k_base = p.k_off + b * p.k_sb + h * p.k_sh;
  const uint v_base = p.v_off + b * p.v_sb + h * p.v_sh;

  // The workgroup's 16 query rows, zero past sq and d.
  for (uint e = tid; e < 16 * D8; e += THREADS) {
    const uint r = e / D8, c = (e % D8) * 8;
    uvec4 value = uvec4(0);
    if (i0 + r < p.sq && c < p.d) {
      value = kiln_fetch_q(q_base + (i0 + r) * p.q_ss + c, min(8u, p.d - c), q_al);
    }
    kiln_sh[r * Q_S + c / 8] = value;
  }
  barrier();
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> qf[D / 16];
  [[unroll]] for (uint kk = 0; kk < D / 16; ++kk) {
    coopMatLoadNV(qf[kk], kiln_sh, kk * 2, Q_S, false);
  }
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> oacc[D / 16];
  [[unroll]] for (uint j = 0; j < D / 16; ++j) {
    oacc[j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
  }

  const uint base = Q_SIZE + warp * SG_SIZE;
  const uint xb = base, cb = base + X_SIZE, rb = base + X_SIZE + C_SIZE;
  // Two lanes per query row, each half of a tile's keys.
  const uint r = lane >> 1, half_ = lane & 1u, i = i0 + r;
  uint end = p.sk;
  // Causal (top-left aligned, j <= i): no key past the block's last row.
  if (CAUSAL) end = min(end, min(p.sq, i0 + 16));
  const uint tiles = (end + KT - 1) / KT;
  const uint mask_base = b * p.m_sb + h * p.m_sh + min(i, p.sq - 1) * p.m_si;
  float m = kNegInf, l = 0.0;
  bool nan_row = false, first = true;
  for (uint t = warp; t < tiles; t += WARPS) {
    const uint j0 = t * KT, n = min(KT, end - j0);
    subgroupBarrier();  // the previous tile's S, P and staged V are consumed
    // The tile's K (and V, for D 64) into registers at once, zero past the
    // keys and dims: one round trip to memory for the tile.
    uvec4 kreg[KT / 16][DC][4];
    uvec4 vreg[KT / 16][V_EARLY ? DC : 1][4];
    [[unroll]] for (uint jn = 0; jn < KT / 16; ++jn) {
      [[unroll]] for (uint dc = 0; dc < DC; ++dc) {
        [[unroll]] for (uint s = 0; s < 4; ++s) {
          const uint e = lane + s * 32, key = jn * 16 + e / 8, c = dc * 64 + (e % 8) * 8;
          const uint row = j0 + key;
          kreg[jn][dc][s] = key < n && c < p.d
                                ? kiln_fetch_k(k_base + row * p.k_ss + c, min(8u, p.d - c), k_al)
                                : uvec4(0);
          if (V_EARLY) {
            vreg[jn][V_EARLY ? dc : 0][s] =
                key < n && c < p.dv
                    ? kiln_fetch_v(v_base + row * p.v_ss + c, min(8u, p.dv - c), v_al)
                    : uvec4(0);
          }
        }
      }
    }
    // S = Q K^T, K staged 16 keys x 64 dims at a time ([key][d]: K^T
    // loaded column-major).
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> sacc[KT / 16];
    [[unroll]] for (uint jn = 0; jn < KT / 16; ++jn) {
      sacc[jn] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
      [[unroll]] for (uint dc = 0; dc < DC; ++dc) {
        subgroupBarrier();  // the previous chunk is consumed
        [[unroll]] for (uint s = 0; s < 4; ++s) {
          const uint e = lane + s * 32;
          kiln_sh[cb + (e / 8) * C_S + e % 8] = kreg[jn][dc][s];
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        [[unroll]] for (uint kc = 0; kc < MC / 16; ++kc) {
          fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> kf;
          coopMatLoadNV(kf, kiln_sh, cb + kc * 2, C_S, true);
          sacc[jn] = coopMatMulAddNV(qf[dc * 4 + kc], kf, sacc[jn]);
        }
      }
    }
    [[unroll]] for (uint jn = 0; jn < KT / 16; ++jn) {
      coopMatStoreNV(sacc[jn], kiln_sh, xb + jn * 4, S_S4, false);
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    // This lane's KT / 2 scores of row r.
    float s[KT / 2];
    float tile_max = kNegInf;
    [[unroll]] for (uint c = 0; c < KT / 2; ++c) {
      const uint col = half_ * (KT / 2) + c, j = j0 + col;
      float v = uintBitsToFloat(kiln_sh[xb + r * S_S4 + col / 4][col % 4]) * p.scale;
      if (col >= n) {
        v = kNegInf;
      } else {
        if (MASK == KILN_ATTN_MASK_ADD) {
          v += LOAD(mask[mask_base + j * p.m_sj]);
        } else if (MASK == KILN_ATTN_MASK_SELECT) {
          float fill = LOAD(mask[mask_base + j * p.m_sj]);
          if (floatBitsToUint(fill) != KILN_SELECT_KEEP_BITS) v = fill;
        }
        if (CAUSAL && j > i) v = kNegInf;
        if (isnan(v)) nan_row = true;
      }
      s[c] = v;
      tile_max = max(tile_max, v);
    }
    tile_max = max(tile_max, kiln_exchange(rb, lane, tile_max));
    const float m_new = max(m, tile_max);
    // Rows with every key so far masked keep (m, l) and add nothing.
    const bool live = m_new != kNegInf;
    const float corr = live && m != kNegInf ? exp(m - m_new) : (live ? 0.0 : 1.0);
    uint packed[KT / 4];
    float sum = 0.0;
    [[unroll]] for (uint c = 0; c < KT / 2; c += 2) {
      const f16vec2 pr = f16vec2(live ? exp(s[c] - m_new) : 0.0,
                                 live ? exp(s[c + 1] - m_new) : 0.0);
      sum += float(pr.x) + float(pr.y);
      packed[c / 2] = packFloat2x16(pr);
    }
    sum += kiln_exchange(rb, lane, sum);  // its barriers: every lane has read S
    l = l * corr + sum;
    if (live) m = m_new;
    // O rescaled through the S rows, 32 columns at a time; then P over them.
    if (!first) {
      [[unroll]] for (uint c0 = 0; c0 < D / 16; c0 += 2) {
        coopMatStoreNV(oacc[c0], kiln_sh, xb, S_S4, false);
        coopMatStoreNV(oacc[c0 + 1], kiln_sh, xb + 4, S_S4, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        [[unroll]] for (uint c = 0; c < 4; ++c) {  // this lane's half row
          const uint at = xb + r * S_S4 + half_ * 4 + c;
          kiln_sh[at] = floatBitsToUint(uintBitsToFloat(kiln_sh[at]) * corr);
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        coopMatLoadNV(oacc[c0], kiln_sh, xb, S_S4, false);
        coopMatLoadNV(oacc[c0 + 1], kiln_sh, xb + 4, S_S4, false);
        subgroupBarrier();  // loaded before the next chunk is stored
      }
    }
    first = false;
    [[unroll]] for (uint u = 0; u < KT / 16; ++u) {
      kiln_sh[xb + P_AT + r * P_S8 + half_ * (KT / 16) + u] =
          uvec4(packed[4 * u], packed[4 * u + 1], packed[4 * u + 2], packed[4 * u + 3]);
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    // O += P V, V staged 16 keys x 64 dims at a time.
    [[unroll]] for (uint kk = 0; kk < KT / 16; ++kk) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> pf;
      coopMatLoadNV(pf, kiln_sh, xb + P_AT + kk * 2, P_S8, false);
      [[unroll]] for (uint dc = 0; dc < DC; ++dc) {
        subgroupBarrier();  // the previous chunk is consumed
        [[unroll]] for (uint s = 0; s < 4; ++s) {
          const uint e = lane + s * 32, key = kk * 16 + e / 8, c = dc * 64 + (e % 8) * 8;
          uvec4 vv;
          if (V_EARLY) {
            vv = vreg[kk][V_EARLY ? dc : 0][s];
          } else {
            vv = key < n && c < p.dv ? kiln_fetch_v(v_base + (j0 + key) * p.v_ss + c,
                                                    min(8u, p.dv - c), v_al)
                                     : uvec4(0);
          }
          kiln_sh[cb + V_AT + (e / 8) * C_S + e % 8] = vv;
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        [[unroll]] for (uint jc = 0; jc < MC / 16; ++jc) {
          fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> vf;
          coopMatLoadNV(vf, kiln_sh, cb + V_AT + jc * 2, C_S, false);
          oacc[dc * 4 + jc] = coopMatMulAddNV(pf, vf, oacc[dc * 4 + jc]);
        }
      }
    }
  }

  // Each subgroup's (m, l, nan) per row into its state slots; then per
  // round of 64 columns its O (unnormalized) over its S and chunk areas,
  // and the workgroup merges them.
  subgroupBarrier();
  if (half_ == 0) {
    kiln_sh[rb + r] = uvec4(floatBitsToUint(m), floatBitsToUint(l), nan_row ? 1u : 0u, 0u);
  }
  barrier();  // every subgroup's state is stored
  // Per round, 16 rows x MC / 4 quads: one each for the config's
  // workgroup, and every one for any other (which writes NaN).
  [[unroll]] for (uint round = 0; round < D / MC; ++round) {
    if (round > 0) barrier();  // the previous round's O is merged
    [[unroll]] for (uint j = 0; j < MC / 16; ++j) {
      coopMatStoreNV(oacc[round * (MC / 16) + j], kiln_sh, xb + MERGE_AT + j * 4, M_S4, false);
    }
    barrier();
    for (uint e = tid; e < 16 * (MC / 4); e += gl_WorkGroupSize.x) {
      const uint rr = e / (MC / 4), row = i0 + rr, cc = round * MC + (e % (MC / 4)) * 4;
      if (row >= p.sq || cc >= p.dv) continue;
      float mm = kNegInf, ll = 0.0;
      bool nan_out = false;
      for (uint w = 0; w < WARPS; ++w) {
        const uvec4 st = kiln_sh[Q_SIZE + w * SG_SIZE + X_SIZE + C_SIZE + rr];
        mm = max(mm, uintBitsToFloat(st.x));
        nan_out = nan_out || st.z != 0u;
      }
      vec4 acc = vec4(0.0);
      for (uint w = 0; w < WARPS; ++w) {
        const uint wb = Q_SIZE + w * SG_SIZE;
        const uvec4 st = kiln_sh[wb + X_SIZE + C_SIZE + rr];
        const float mw = uintBitsToFloat(st.x);
        // A subgroup whose keys were all masked (or that had none) adds nothing.
        const float weight = mw == kNegInf ? 0.0 : exp(mw - mm);
        ll += weight * uintBitsToFloat(st.y);
        acc += weight * uintBitsToFloat(kiln_sh[wb + MERGE_AT + rr * M_S4 + e % (MC / 4)]);
      }
      // Every key masked: NaN, as PyTorch's softmax gives.
      const float inv = nan_out || mm == kNegInf ? kNaN : (BUILD_MATCHES ? 1.0 / ll : kNaN);
      const uint at = p.o_off + b * p.o_sb + h * p.o_sh + row * p.o_ss + cc;
      [[unroll]] for (uint x = 0; x < 4; ++x) {
        if (cc + x < p.dv) o[at + x] = STORE(acc[x] * inv);
      }
    }
  }
}
