// Batched GEMM on tensor cores through GL_NV_cooperative_matrix (SPIR-V
// SPV_NV_cooperative_matrix, the route Debian's glslang and SPIRV-Tools
// compile and validate): gemm's ABI (bindings, push constants, epilogue),
// f16 x f16 products accumulated in f32 16x16 matrices.
//
// A workgroup of WARPS_M x WARPS_N subgroups computes a BM x BN block of C;
// each subgroup a TILES_M x TILES_N grid of 16x16 accumulators (each A
// fragment used TILES_N times, each B fragment TILES_M times). Per step of
// BK, A (BM x BK, [m][k]) and B (BK x BN: [k][n], or [n][k] with B_KMAJOR,
// a transposed weight's layout) are staged in shared memory as f16, eight
// per uvec4 (rows padded by one uvec4 against bank conflicts), double
// buffered: step t+1 is fetched from global memory into registers while
// step t is multiplied, then stored into the other buffer; one barrier per
// step (BK 64 builds: one buffer, stored after a second barrier).
// Everything that picks a code path inside the step is a spec constant or
// a workgroup-uniform test of the push constants, so the multiply loop is
// straight-line once specialized.
// Bounds by construction: fetches return zeros outside [0,m) x [0,k) x
// [0,n) (so partial tiles multiply zeros), and the epilogue writes only
// inside C: any m, n, k, strides. Steps whose rows are whole and aligned
// load one uvec4 per run of 8 with one row test; the rest go element by
// element (edge steps, odd strides).
// Storage: built with KILN_FP16_STORAGE every buffer is f16 (A and B read
// as uvec4 = 8 halves); without it every buffer is f32 and A / B are
// converted to f16 while staging (fp32 models under --precision=f16).
// The workgroup is WARPS_M * WARPS_N subgroups of the device's subgroup
// size (spec id 0 = that product; SPIR-V 1.3 without varying-size flags
// gets exactly the reported subgroup size).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#include "kernels_codes.h"
#include "activation.glsl"
#include "storage.glsl"

layout(constant_id = KILN_SPEC_GEMM_ACTIVATION) const uint ACTIVATION = 0;
layout(constant_id = KILN_SPEC_GEMM_HAS_BIAS) const bool HAS_BIAS = false;
layout(constant_id = KILN_SPEC_GEMM_HAS_RESIDUAL) const bool HAS_RESIDUAL = false;
// One build per tiling (KILN_CM_*, default 2x4 subgroups of 2x1 tiles, BK
// 32: coopmat_tuning.c's small blocks; subgroups of 32): its loops unroll
// and its accumulators stay in registers at build time (spirv-opt
// --loop-unroll). Tilings as spec
// constants left that to the driver, and NVIDIA's kept the accumulators in
// local memory: 25-29 TFLOP/s on an H100 at 4096^3 against 139.
#ifndef KILN_CM_WM
#define KILN_CM_WM 2
#define KILN_CM_WN 4
#define KILN_CM_TM 2
#define KILN_CM_TN 1
#define KILN_CM_BK 32
#endif
const uint WARPS_M = KILN_CM_WM;
const uint WARPS_N = KILN_CM_WN;
const uint TILES_M = KILN_CM_TM;
const uint TILES_N = KILN_CM_TN;
const uint BK = KILN_CM_BK;
// BK 64 builds stage one buffer (KILN_COOPMAT_STAGES: the next step waits
// in registers until the multiply is done): double buffers of 128-row
// blocks at BK 64 would pass the 48 KiB NVIDIA gives Vulkan; one buffer
// halves the steps (each a round trip to global memory) for a second
// barrier per step.
const uint STAGES = KILN_COOPMAT_STAGES(BK);
const uint THREADS = WARPS_M * WARPS_N * 32;
// The config's tiling and workgroup (what the grid was computed from) as
// spec constants: declared so the HAL checks them against the module, and
// compared with the build's (the workgroup defaults to the build's); a
// mismatch writes NaN instead of a result.
layout(local_size_x = KILN_CM_WM * KILN_CM_WN * 32, local_size_x_id = 0, local_size_y = 1,
       local_size_z = 1) in;
layout(constant_id = KILN_SPEC_COOPMAT_WARPS_M) const uint SPEC_WARPS_M = KILN_CM_WM;
layout(constant_id = KILN_SPEC_COOPMAT_WARPS_N) const uint SPEC_WARPS_N = KILN_CM_WN;
layout(constant_id = KILN_SPEC_COOPMAT_TILES_M) const uint SPEC_TILES_M = KILN_CM_TM;
layout(constant_id = KILN_SPEC_COOPMAT_TILES_N) const uint SPEC_TILES_N = KILN_CM_TN;
layout(constant_id = KILN_SPEC_COOPMAT_BK) const uint SPEC_BK = KILN_CM_BK;
const bool BUILD_MATCHES = SPEC_WARPS_M == WARPS_M && SPEC_WARPS_N == WARPS_N &&
                           SPEC_TILES_M == TILES_M && SPEC_TILES_N == TILES_N &&
                           SPEC_BK == BK && gl_WorkGroupSize.x == THREADS;
// B as a conv's windows over its input image (implicit GEMM, n-major runs
// of output pixels; kernels_codes.h packs the geometry): no columns copy
// of the windows before the product. Zero-valued or zero-sized fields
// read as 1 where they divide, so a malformed module cannot divide by 0.
layout(constant_id = KILN_SPEC_COOPMAT_CONV_IN) const uint CONV_IN = 0;
layout(constant_id = KILN_SPEC_COOPMAT_CONV_KERNEL) const uint CONV_KERNEL = 0x01010101;
layout(constant_id = KILN_SPEC_COOPMAT_CONV_PAD) const uint CONV_PAD = 0;
layout(constant_id = KILN_SPEC_COOPMAT_CONV_OUT) const uint CONV_OUT = 0x00010101;
const bool B_CONV = CONV_IN != 0;
const uint CV_IH = CONV_IN & 0xffffu, CV_IW = CONV_IN >> 16;
const uint CV_KH = CONV_KERNEL & 0xffu, CV_KW0 = (CONV_KERNEL >> 8) & 0xffu;
const uint CV_KW = CV_KW0 == 0 ? 1 : CV_KW0;
const uint CV_TAPS0 = CV_KH * CV_KW;
const uint CV_TAPS = CV_TAPS0 == 0 ? 1 : CV_TAPS0;
const uint CV_SH = (CONV_KERNEL >> 16) & 0xffu, CV_SW = CONV_KERNEL >> 24;
const uint CV_PT = CONV_PAD & 0xffffu, CV_PL = CONV_PAD >> 16;
const uint CV_DH = CONV_OUT & 0xffu, CV_DW = (CONV_OUT >> 8) & 0xffu;
const uint CV_OW0 = CONV_OUT >> 16;
const uint CV_OW = CV_OW0 == 0 ? 1 : CV_OW0;
const uint CV_PLANE = CV_IH * CV_IW;
// Windows stage n-major, whatever the layout constants say.
layout(constant_id = KILN_SPEC_COOPMAT_B_KMAJOR) const bool SPEC_B_KMAJOR = false;
layout(constant_id = KILN_SPEC_COOPMAT_B_QUADS) const bool SPEC_B_QUADS = false;
const bool B_KMAJOR = SPEC_B_KMAJOR && !B_CONV;
const bool B_QUADS = SPEC_B_QUADS && !B_CONV;

#ifdef KILN_FP16_STORAGE
layout(set = 0, binding = 0) readonly buffer ABuffer { uvec4 a8[]; };
layout(set = 0, binding = 1) readonly buffer BBuffer { uvec4 b8[]; };
// B's runs of 8 as two quads (8 bytes each) where they start 4-aligned
// but not 8 (B_QUADS: a 14x14 image's rows of 196).
layout(set = 0, binding = 1) readonly buffer BQuads { uvec2 b4q[]; };
#else
layout(set = 0, binding = 0) readonly buffer ABuffer { vec4 a4[]; };
layout(set = 0, binding = 1) readonly buffer BBuffer { vec4 b4[]; };
#endif
layout(set = 0, binding = 2) readonly buffer BiasBuffer { STORAGE_VEC4_T bias4[]; };
layout(set = 0, binding = 3) readonly buffer ResidualBuffer { STORAGE_VEC4_T residual4[]; };
KILN_OUTPUT_BUFFER(4)
#ifdef KILN_CM_SPLIT
// Split-K with its sum in the same dispatch (gemm_coopmat_split,
// lower_splitk.c): the batch is the parts of k. Each part's block stores
// its f32 block into `partials` ([part][m][n rounded up to 4]) instead of
// running the epilogue, then counts itself in its block's counter; the
// block that counts last sums the parts in the fixed order 0, 1, ... (so
// the result does not depend on which part ends last) and runs the
// epilogue into C. The module zeroes the counters before every call
// (emit_module.c's fill); `coherent`: the last block reads what other
// workgroups wrote.
layout(set = 0, binding = 5) coherent buffer PartialsBuffer { vec4 partials4[]; };
layout(set = 0, binding = 6) coherent buffer CountersBuffer { uint counters[]; };
shared bool kiln_last_part;
layout(constant_id = KILN_SPEC_COOPMAT_PARTS) const uint PARTS = 2;
#endif

#include "gemm_params.glsl"
#define KILN_EPILOGUE_UNROLL [[unroll]]
#include "gemm_epilogue.glsl"

const uint WARPS = WARPS_M * WARPS_N;
const uint SG = THREADS / WARPS;
const uint WM = TILES_M * 16;  // rows of a subgroup's block
const uint WN = TILES_N * 16;
const uint BM = WARPS_M * WM;
const uint BN = WARPS_N * WN;
const uint BK8 = BK / 8;
const uint BN8 = BN / 8;
const uint KM = uint(B_KMAJOR);
// Staged rows in uvec4s (+1 padding): A [m][k]; B [k][n] or, B_KMAJOR,
// [n][k] (rows of B_RUN8 uvec4s, B_ROWS of them).
const uint A_S8 = BK8 + 1;
const uint B_RUN8 = KM * BK8 + (1 - KM) * BN8;
const uint B_ROWS = KM * BN + (1 - KM) * BK;
const uint B_S8 = B_RUN8 + 1;
const uint A_SIZE = BM * A_S8;
const uint B_SIZE = B_ROWS * B_S8;
const uint A_VECS = BM * BK8;
const uint B_VECS = BK * BN8;
const uint A_SLOTS = (A_VECS + THREADS - 1) / THREADS;
const uint B_SLOTS = (B_VECS + THREADS - 1) / THREADS;
// After the loop: per subgroup 16 rows of WN f32 (+4 padding) for the epilogue.
const uint E_S4 = WN / 4 + 1;
// Rounds of the subgroup over those 16 x WN / 4 quads.
const uint E_ROUNDS = (16 * (WN / 4) + SG - 1) / SG;

// All shared memory in one array of a fixed length (so the runtime's
// robust-access clamp can bound each cooperative-matrix load and store by
// its stride, hal/spirv_clamp_local.c): two A buffers, two B buffers, and
// after the main loop each subgroup's row of accumulators on its way to
// the epilogue. KILN_COOPMAT_SHARED_VEC4 (kernels_codes.h) is the most any
// tiling may use; kiln_kernel_coopmat_tiling_apply checks it.
shared uvec4 kiln_sh[KILN_COOPMAT_SHARED_VEC4];
const uint B_SH0 = STAGES * A_SIZE;  // first B buffer

uint a_base, b_base;
bool a_fast, b_fast;  // whole uvec4 loads along A's k / B's run

#ifdef KILN_FP16_STORAGE
float a_at(uint i) { return unpackHalf2x16(a8[i >> 3][(i >> 1) & 3] >> ((i & 1) * 16)).x; }
float b_at(uint i) { return unpackHalf2x16(b8[i >> 3][(i >> 1) & 3] >> ((i & 1) * 16)).x; }
uvec4 a_load8(uint i) { return a8[i >> 3]; }
// Element i of B as its 16 bits.
uint b_bits(uint i) { return (b8[i >> 3][(i >> 1) & 3] >> ((i & 1) * 16)) & 0xffffu; }
uvec4 b_load8(uint i) {
  return B_QUADS && !B_KMAJOR ? uvec4(b4q[i >> 2], b4q[(i >> 2) + 1]) : b8[i >> 3];
}
#else
float a_at(uint i) { return a4[i >> 2][i & 3]; }
float b_at(uint i) { return b4[i >> 2][i & 3]; }
uvec4 kiln_pack8(vec4 lo, vec4 hi) {
  return uvec4(packHalf2x16(lo.xy), packHalf2x16(lo.zw), packHalf2x16(hi.xy),
               packHalf2x16(hi.zw));
}
uvec4 a_load8(uint i) { return kiln_pack8(a4[i >> 2], a4[(i >> 2) + 1]); }
uint b_bits(uint i) { return packHalf2x16(vec2(b_at(i), 0.0)); }
uvec4 b_load8(uint i) { return kiln_pack8(b4[i >> 2], b4[(i >> 2) + 1]); }
#endif

// 8 values of A at (gm, gk..gk+7), element by element, zero outside.
uvec4 kiln_fetch_a(uint gm, uint gk) {
  if (gm >= p.m || gk >= p.k) return uvec4(0);
  const uint at = a_base + gm * p.a_row_stride + gk * p.a_col_stride;
  const uint s = p.a_col_stride;
  uvec4 r;
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    const uint k0 = gk + 2 * j;
    r[j] = packHalf2x16(vec2(k0 < p.k ? a_at(at + 2 * j * s) : 0.0,
                             k0 + 1 < p.k ? a_at(at + (2 * j + 1) * s) : 0.0));
  }
  return r;
}

// 8 values of B from (gk, gn) along its run (k when B_KMAJOR, else n),
// element by element, zero outside.
uvec4 kiln_fetch_b(uint gk, uint gn) {
  if (gk >= p.k || gn >= p.n) return uvec4(0);
  const uint at = b_base + gk * p.b_row_stride + gn * p.b_col_stride;
  const uint lim = B_KMAJOR ? p.k - gk : p.n - gn;  // values left along the run
  const uint s = B_KMAJOR ? p.b_row_stride : p.b_col_stride;
  uvec4 r;
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    r[j] = packHalf2x16(vec2(2 * j < lim ? b_at(at + 2 * j * s) : 0.0,
                             2 * j + 1 < lim ? b_at(at + (2 * j + 1) * s) : 0.0));
  }
  return r;
}

#ifdef KILN_FP16_STORAGE
// Rows of quads: stride 1 along w, and image rows of whole quads in x and
// in the output, so 4 output pixels from a multiple of 4 are 4 adjacent
// input values of one row, at most two quads.
const bool CV_QUADS = CV_SW == 1 && CV_OW % 4 == 0 && CV_IW % 4 == 0;
bool cv_quads;  // and B's batches start on quads (set in main)

// Input values (ih, iw0 .. iw0 + 3) of the plane at `at` as 4 halves,
// zero outside the plane: two quad loads and a shift by iw0's place.
uvec2 kiln_fetch4_conv(uint at, int ih, int iw0, bool live) {
  // Negative only where masked (the lowering keeps x below 2^31 values).
  const int a = int(at) + ih * int(CV_IW) + iw0;
  const int q = a >> 2;                           // floor
  const uint o = uint(a) & 3u;
  const uvec2 q0 = b4q[uint(max(q, 0))], q1 = b4q[uint(max(q + 1, 0))];
  const uint x0 = o >= 2 ? q0.y : q0.x, x1 = o >= 2 ? q1.x : q0.y, x2 = o >= 2 ? q1.y : q1.x;
  const uvec2 r = (o & 1u) != 0 ? uvec2((x0 >> 16) | (x1 << 16), (x1 >> 16) | (x2 << 16))
                                : uvec2(x0, x1);
  const bool row = live && uint(ih) < CV_IH;
  const uint m0 = (row && uint(iw0) < CV_IW ? 0xffffu : 0u) |
                  (row && uint(iw0 + 1) < CV_IW ? 0xffff0000u : 0u);
  const uint m1 = (row && uint(iw0 + 2) < CV_IW ? 0xffffu : 0u) |
                  (row && uint(iw0 + 3) < CV_IW ? 0xffff0000u : 0u);
  return r & uvec2(m0, m1);
}
#endif

// 8 values of B at (gk, gn..gn+7) as a conv's windows (B_CONV): input
// channel c, tap (i, j) of row gk; output pixels gn.. walking the rows of
// the output image; zero outside x (the conv's pad), past n and past k.
// By quads where the rows allow, else value by value; the 8 pixels'
// coordinates are independent of each other (a row of at least 8 wraps
// at most once), so their loads issue together.
uvec4 kiln_fetch_b_conv(uint gk, uint gn) {
  const bool live = gk < p.k;
  const uint c = gk / CV_TAPS, tap = gk - c * CV_TAPS;
  const uint i = tap / CV_KW, j = tap - i * CV_KW;
  const int dy = int(i * CV_DH) - int(CV_PT), dx = int(j * CV_DW) - int(CV_PL);
  const uint at = b_base + c * CV_PLANE;
#ifdef KILN_FP16_STORAGE
  if (CV_QUADS && cv_quads) {
    uvec2 h[2];
    [[unroll]] for (uint e = 0; e < 2; ++e) {
      const uint n = gn + 4 * e;
      const uint oh = n / CV_OW, ow = n - oh * CV_OW;
      h[e] = kiln_fetch4_conv(at, int(oh * CV_SH) + dy, int(ow) + dx, live && n < p.n);
    }
    return uvec4(h[0], h[1]);
  }
#endif
  const uint oh0 = gn / CV_OW, ow0 = gn - oh0 * CV_OW;
  uvec4 r = uvec4(0);
  [[unroll]] for (uint e = 0; e < 8; ++e) {
    uint oh, ow;
    if (CV_OW >= 8) {
      const bool wrap = ow0 + e >= CV_OW;
      ow = wrap ? ow0 + e - CV_OW : ow0 + e;
      oh = oh0 + uint(wrap);
    } else {
      oh = (gn + e) / CV_OW;
      ow = gn + e - oh * CV_OW;
    }
    const int ih = int(oh * CV_SH) + dy, iw = int(ow * CV_SW) + dx;
    // Unsigned compares take the negative coordinates too. Every load
    // issues (a value outside reads B's first), so none waits on a branch.
    const bool inside = live && gn + e < p.n && uint(ih) < CV_IH && uint(iw) < CV_IW;
    const uint bits = b_bits(inside ? at + uint(ih) * CV_IW + uint(iw) : 0u);
    r[e >> 1] |= (inside ? bits : 0u) << ((e & 1) * 16);
  }
  return r;
}

uvec4 kiln_a_stage[A_SLOTS];
uvec4 kiln_b_stage[B_SLOTS];

// Step k0's A and B into registers. `whole`: the step's k range is inside
// k and both operands load by uvec4 (uniform over the workgroup).
void kiln_fetch(uint row0, uint col0, uint k0, bool whole) {
  const uint tid = gl_LocalInvocationID.x;
  [[unroll]] for (uint s = 0; s < A_SLOTS; ++s) {
    const uint q = tid + s * THREADS;
    const uint gm = row0 + q / BK8, gk = k0 + (q % BK8) * 8;
    uvec4 v = uvec4(0);
    if (q < A_VECS && gm < p.m) {
      v = whole ? a_load8(a_base + gm * p.a_row_stride + gk) : kiln_fetch_a(gm, gk);
    }
    kiln_a_stage[s] = v;
  }
  [[unroll]] for (uint s = 0; s < B_SLOTS; ++s) {
    const uint q = tid + s * THREADS;
    const uint r = q / B_RUN8, c = (q % B_RUN8) * 8;
    uvec4 v = uvec4(0);
    if (B_CONV) {
      const uint gk = k0 + r, gn = col0 + c;
      if (q < B_VECS) v = kiln_fetch_b_conv(gk, gn);
    } else if (B_KMAJOR) {
      const uint gn = col0 + r, gk = k0 + c;
      if (q < B_VECS && gn < p.n) {
        v = whole ? b_load8(b_base + gn * p.b_col_stride + gk) : kiln_fetch_b(gk, gn);
      }
    } else {
      const uint gk = k0 + r, gn = col0 + c;
      if (q < B_VECS && gn < p.n) {
        v = whole && gn + 7 < p.n ? b_load8(b_base + gk * p.b_row_stride + gn)
                                  : kiln_fetch_b(gk, gn);
      }
    }
    kiln_b_stage[s] = v;
  }
}

void kiln_stage(uint buf) {
  const uint tid = gl_LocalInvocationID.x;
  [[unroll]] for (uint s = 0; s < A_SLOTS; ++s) {
    const uint q = tid + s * THREADS;
    if (q < A_VECS) kiln_sh[buf * A_SIZE + (q / BK8) * A_S8 + q % BK8] = kiln_a_stage[s];
  }
  [[unroll]] for (uint s = 0; s < B_SLOTS; ++s) {
    const uint q = tid + s * THREADS;
    if (q < B_VECS) {
      kiln_sh[B_SH0 + buf * B_SIZE + (q / B_RUN8) * B_S8 + q % B_RUN8] = kiln_b_stage[s];
    }
  }
}

// One k step t: fetch step t + 1 (by uvec4 where WHOLE), multiply step t
// from the other buffer (or the one buffer, then a barrier), stage step
// t + 1.
#define KILN_COOPMAT_STEP(WHOLE) \
  { \
    const uint next = (t + 1) * BK;                                                   \
    if (t + 1 < steps) kiln_fetch(row0, col0, next, WHOLE);                           \
    const uint a0 = (t & (STAGES - 1)) * A_SIZE + wm * WM * A_S8;                     \
    const uint b0 = B_SH0 + (t & (STAGES - 1)) * B_SIZE;                              \
    [[unroll]] for (uint kk = 0; kk < BK / 16; ++kk) {                                \
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> ma[TILES_M];                           \
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> mb[TILES_N];                           \
      [[unroll]] for (uint i = 0; i < TILES_M; ++i) {                                 \
        coopMatLoadNV(ma[i], kiln_sh, a0 + i * 16 * A_S8 + kk * 2, A_S8, false);      \
      }                                                                               \
      [[unroll]] for (uint j = 0; j < TILES_N; ++j) {                                 \
        const uint n = wn * WN + j * 16;                                              \
        if (B_KMAJOR) {                                                               \
          coopMatLoadNV(mb[j], kiln_sh, b0 + n * B_S8 + kk * 2, B_S8, true);          \
        } else {                                                                      \
          coopMatLoadNV(mb[j], kiln_sh, b0 + kk * 16 * B_S8 + n / 8, B_S8, false);    \
        }                                                                             \
      }                                                                               \
      [[unroll]] for (uint i = 0; i < TILES_M; ++i) {                                 \
        [[unroll]] for (uint j = 0; j < TILES_N; ++j) {                               \
          acc[i * TILES_N + j] = coopMatMulAddNV(ma[i], mb[j], acc[i * TILES_N + j]); \
        }                                                                             \
      }                                                                               \
    }                                                                                 \
    if (STAGES == 1) barrier();                                                       \
    if (t + 1 < steps) kiln_stage((t + 1) & (STAGES - 1));                            \
    barrier();                                                                        \
  }

#ifdef KILN_CM_SPLIT
// After a part's block is in `partials`: count it; the last part's block
// sums the block's parts in order and runs the epilogue (C's batch 0).
void kiln_sum_parts(uint row0, uint col0) {
  memoryBarrierBuffer();  // this part's partials before its count
  barrier();
  if (gl_LocalInvocationID.x == 0) {
    const uint block = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    kiln_last_part = atomicAdd(counters[block], 1u) == gl_NumWorkGroups.z - 1;
  }
  barrier();
  if (!kiln_last_part) return;
  memoryBarrierBuffer();  // the other parts' partials after their counts
  batch = 0;
  const uint row4 = (p.n + 3) >> 2;  // a partial row in vec4s
  const uint part4 = p.m * row4;
  // A spec count that is not the grid's (a malformed module): NaN.
  const bool counted = PARTS == gl_NumWorkGroups.z && PARTS <= KILN_COOPMAT_SPLIT_PARTS_MAX;
  [[dont_unroll]] for (uint q = gl_LocalInvocationID.x; q < BM * (BN / 4); q += THREADS) {
    const uint gm = row0 + q / (BN / 4), gn = col0 + (q % (BN / 4)) * 4;
    if (gm < p.m && gn < p.n) {
      const uint at = gm * row4 + (gn >> 2);
      vec4 t[KILN_COOPMAT_SPLIT_PARTS_MAX];
      [[unroll]] for (uint j = 0; j < KILN_COOPMAT_SPLIT_PARTS_MAX; ++j) {
        if (j < PARTS) t[j] = partials4[j * part4 + at];
      }
      vec4 sum = t[0];
      [[unroll]] for (uint j = 1; j < KILN_COOPMAT_SPLIT_PARTS_MAX; ++j) {
        if (j < PARTS) sum += t[j];
      }
      kiln_gemm_epilogue(gm, gn, counted ? sum : vec4(uintBitsToFloat(0x7fc00000u)));
    }
  }
}
#endif

void main() {
  batch = gl_WorkGroupID.z;
  const uint row0 = gl_WorkGroupID.y * BM;
  const uint col0 = gl_WorkGroupID.x * BN;
  const uint warp = gl_SubgroupID;
  const uint wm = warp % WARPS_M, wn = warp / WARPS_M;
  a_base = batch * p.a_batch_stride;
  b_base = batch * p.b_batch_stride;
  // Whole uvec4 loads where every run of 8 starts aligned: A along k, B
  // along its run.
#ifdef KILN_FP16_STORAGE
  const uint ALIGN = 7;  // 8 halves per uvec4
  const uint B_ALIGN = B_QUADS && !B_KMAJOR ? 3 : 7;  // or two quads of 4
#else
  const uint ALIGN = 3;  // two vec4s
  const uint B_ALIGN = 3;
#endif
  a_fast = p.a_col_stride == 1 && (p.a_row_stride & ALIGN) == 0 &&
           (p.a_batch_stride & ALIGN) == 0;
#ifdef KILN_FP16_STORAGE
  cv_quads = (p.b_batch_stride & 3) == 0;
#endif
  b_fast = B_CONV || ((p.b_batch_stride & B_ALIGN) == 0 &&
                      (B_KMAJOR ? p.b_row_stride == 1 && (p.b_col_stride & B_ALIGN) == 0
                                : p.b_col_stride == 1 && (p.b_row_stride & B_ALIGN) == 0));
  const bool fast = a_fast && b_fast;
  c_vec4 = (p.c_batch_stride & 3) == 0 && (p.c_row_stride & 3) == 0 &&
           (!HAS_RESIDUAL || ((p.residual_batch_stride & 3) == 0 &&
                              (p.residual_row_stride & 3) == 0));

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[TILES_M * TILES_N];
  [[unroll]] for (uint i = 0; i < TILES_M * TILES_N; ++i) {
    acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
  }

  const uint steps = (p.k + BK - 1) / BK;
  if (steps > 0) {
    kiln_fetch(row0, col0, 0, fast && BK <= p.k);
    kiln_stage(0);
    barrier();
  }
  // Steps whose next fetch is whole get a loop of their own, with the
  // element-by-element path compiled out: beside it the loop ran 7-20%
  // slower on an H100.
  const uint whole_steps = fast ? p.k / BK : 0;
  uint t = 0;
  for (; t + 1 < whole_steps; ++t) KILN_COOPMAT_STEP(true)
  for (; t < steps; ++t) KILN_COOPMAT_STEP(fast && (t + 2) * BK <= p.k)

  // Each subgroup passes a row of its tiles (16 x WN f32) through its part
  // of the shared array (free after the loop's last barrier) to gemm's
  // epilogue, a quad of columns per invocation at a time, rows whole.
  const uint lane = gl_SubgroupInvocationID;
  const uint e0 = warp * 16 * E_S4;
  [[dont_unroll]] for (uint i = 0; i < TILES_M; ++i) {
    const uint gm0 = row0 + wm * WM + i * 16, gn0 = col0 + wn * WN;
    if (gm0 < p.m && gn0 < p.n) {  // uniform in the subgroup
      // Row i of the tiles by constant indices (this loop unrolls; the one
      // around it may not).
      [[unroll]] for (uint ii = 0; ii < TILES_M; ++ii) {
        if (ii == i) {
          [[unroll]] for (uint j = 0; j < TILES_N; ++j) {
            coopMatStoreNV(acc[ii * TILES_N + j], kiln_sh, e0 + j * 4, E_S4, false);
          }
        }
      }
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      [[dont_unroll]] for (uint it = 0; it < E_ROUNDS; ++it) {
        const uint q = lane + it * SG;
        const uint r = q / (WN / 4), c = (q % (WN / 4)) * 4;
        const uint gm = gm0 + r, gn = gn0 + c;
        if (q < 16 * (WN / 4) && gm < p.m && gn < p.n) {
          const vec4 v = uintBitsToFloat(kiln_sh[e0 + r * E_S4 + c / 4]);
#ifdef KILN_CM_SPLIT
          partials4[((batch * p.m + gm) * ((p.n + 3) & ~3u) + gn) >> 2] =
              BUILD_MATCHES ? v : vec4(uintBitsToFloat(0x7fc00000u));
#else
          kiln_gemm_epilogue(gm, gn, BUILD_MATCHES ? v : vec4(uintBitsToFloat(0x7fc00000u)));
#endif
        }
      }
      subgroupBarrier();
    }
  }
#ifdef KILN_CM_SPLIT
  kiln_sum_parts(row0, col0);
#endif
}
