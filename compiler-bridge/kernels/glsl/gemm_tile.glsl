// The register-tiled GEMM core shared by gemm.comp and conv2d_gemm.comp.
//
// A workgroup of WG_X x WG_Y invocations computes a TILE_M x TILE_N block
// of C (TILE_M = WG_Y * TM, TILE_N = WG_X * TN); each invocation a TM x TN
// register tile (TM, TN: 4 or 8) held as vec4s. Per step of TK (a multiple
// of 4) the A block (TILE_M x TK) and the B block (TK x TILE_N) are staged
// in shared memory as vec4 rows along m and n, double buffered: while the
// tile of step t is multiplied out of one buffer, step t+1 is fetched from
// global memory into registers and then stored into the other, so one
// barrier per step suffices.
// Invocation (tx, ty) owns rows ty*4 + [0,4) (+ TILE_M/2 when TM = 8) and
// columns tx*4 + [0,4) (+ TILE_N/2 when TN = 8): its shared reads are
// vec4s, consecutive tx read consecutive vec4s of B (no bank conflicts),
// invocations of one ty read the same A vec4 (a broadcast).
// Fetches move quads of 4 values along a contiguous dimension (vec4 global
// loads where aligned and in range, else 4 guarded scalar loads); a quad
// along k is transposed into its shared column (rows padded by one vec4 so
// that such columns spread over the banks).
// Bounds are handled by construction: loaders return 0 outside [0,m) x
// [k_begin,k_end) x [0,n), the epilogue skips rows/columns outside C.
//
// The includer declares TM, TN, TK (spec constants), defines
//   vec4 kiln_gemm_load_a(uint gm, uint gk);  // quad of A (along k or m)
//   vec4 kiln_gemm_load_b(uint gk, uint gn);  // quad of B (along k or n)
//   void kiln_gemm_epilogue(uint gm, uint gn, vec4 v);  // C[gm][gn..gn+3]
// after including this file, sets kiln_gemm_a_along_k /
// kiln_gemm_b_along_k, and calls kiln_gemm_mainloop then kiln_gemm_store.
// Loop structure (counted in loops.c, kiln_loops_tiled): per step of TK the
// A and B slot loops (A_SLOTS / B_SLOTS trips) and the TK / 4 compute loop.
//
// KSPLIT (spec constant, default 1) splits k inside the workgroup for
// products with few output blocks (issue 16: a 7x7 layer's GEMM gives a
// handful of blocks on a GPU of 100+ SMs): the workgroup's y dimension is
// KSPLIT slices of WG_Y rows, slice s running the mainloop over the TK
// steps s, s + KSPLIT, ... with its own staging buffers; kiln_gemm_store
// adds the slices' register tiles in slice order through shared memory
// (deterministic, no atomics) and slice 0 runs the epilogue. Every slice
// walks the same number of steps (steps past k_end stage zeros), so the
// barriers stay in uniform control flow.
#ifndef KILN_GEMM_TILE_GLSL_
#define KILN_GEMM_TILE_GLSL_

layout(constant_id = KILN_SPEC_GEMM_KSPLIT) const uint KSPLIT = 1;
const uint WG_X = gl_WorkGroupSize.x;
const uint WG_Y = gl_WorkGroupSize.y / KSPLIT;  // rows of one k slice
const uint THREADS = WG_X * WG_Y;
const uint TILE_M = WG_Y * TM;
const uint TILE_N = WG_X * TN;
const uint RM = TM / 4;  // row quads per invocation (1 or 2)
const uint RN = TN / 4;  // column quads per invocation (1 or 2)
const uint TK4 = TK / 4;
// vec4s per k row of a staged block (+1: padding, see above).
const uint A_S4 = TILE_M / 4 + 1;
const uint B_S4 = TILE_N / 4 + 1;
const uint A_QUADS = TILE_M * TK / 4;
const uint B_QUADS = TILE_N * TK / 4;
const uint A_SLOTS = (A_QUADS + THREADS - 1) / THREADS;
const uint B_SLOTS = (B_QUADS + THREADS - 1) / THREADS;

shared vec4 kiln_a_sh[KSPLIT * 2 * TK * A_S4];  // [slice][buffer][k][m / 4]
shared vec4 kiln_b_sh[KSPLIT * 2 * TK * B_S4];  // [slice][buffer][k][n / 4]
// Register tiles of slices 1.. for the in-workgroup k reduction:
// [slice - 1][quad][invocation of the slice].
const uint KILN_RED_VEC4 = KSPLIT > 1 ? (KSPLIT - 1) * TM * RN * THREADS : 1;
shared vec4 kiln_red_sh[KILN_RED_VEC4];

// Quads are along k (A row-major, B column-major: transposed into shared)
// or along m / n.
bool kiln_gemm_a_along_k = true;
bool kiln_gemm_b_along_k = false;
// The register tile: acc[r * 2 + c], row r (0..TM-1), column quad c.
vec4 kiln_acc[16];
vec4 kiln_a_stage[A_SLOTS];
vec4 kiln_b_stage[B_SLOTS];
// This invocation's k slice, row within it and index within it (set by
// kiln_gemm_mainloop).
uint kiln_slice = 0, kiln_ly = 0, kiln_tid = 0;

vec4 kiln_gemm_load_a(uint gm, uint gk);
vec4 kiln_gemm_load_b(uint gk, uint gn);
void kiln_gemm_epilogue(uint gm, uint gn, vec4 v);

// Tile-local row of register row r and column of column quad c.
uint kiln_gemm_row(uint r) { return (r >> 2) * (WG_Y * 4) + kiln_ly * 4 + (r & 3); }
uint kiln_gemm_col(uint c) { return c * (WG_X * 4) + gl_LocalInvocationID.x * 4; }

// Steps at or past k_end (a slice's last steps under KSPLIT) stage zeros.
void kiln_gemm_fetch(uint row0, uint col0, uint k0, uint k_end) {
  const uint tid = kiln_tid;
  const bool live = k0 < k_end;
  for (uint s = 0; s < A_SLOTS; ++s) {
    const uint q = tid + s * THREADS;
    vec4 v = vec4(0);
    if (live && q < A_QUADS) {
      v = kiln_gemm_a_along_k ? kiln_gemm_load_a(row0 + q / TK4, k0 + (q % TK4) * 4)
                              : kiln_gemm_load_a(row0 + (q % (TILE_M / 4)) * 4, k0 + q / (TILE_M / 4));
    }
    kiln_a_stage[s] = v;
  }
  for (uint s = 0; s < B_SLOTS; ++s) {
    const uint q = tid + s * THREADS;
    vec4 v = vec4(0);
    if (live && q < B_QUADS) {
      v = kiln_gemm_b_along_k ? kiln_gemm_load_b(k0 + (q % TK4) * 4, col0 + q / TK4)
                              : kiln_gemm_load_b(k0 + q / (TILE_N / 4), col0 + (q % (TILE_N / 4)) * 4);
    }
    kiln_b_stage[s] = v;
  }
}

void kiln_gemm_stage(uint buf) {
  const uint tid = kiln_tid;
  const uint a0 = (kiln_slice * 2 + buf) * TK * A_S4, b0 = (kiln_slice * 2 + buf) * TK * B_S4;
  for (uint s = 0; s < A_SLOTS; ++s) {
    const uint q = tid + s * THREADS;
    if (q >= A_QUADS) continue;
    const vec4 v = kiln_a_stage[s];
    if (kiln_gemm_a_along_k) {
      const uint mm = q / TK4, k = (q % TK4) * 4;
      const uint at = a0 + k * A_S4 + (mm >> 2), e = mm & 3;
      kiln_a_sh[at][e] = v.x;
      kiln_a_sh[at + A_S4][e] = v.y;
      kiln_a_sh[at + 2 * A_S4][e] = v.z;
      kiln_a_sh[at + 3 * A_S4][e] = v.w;
    } else {
      kiln_a_sh[a0 + (q / (TILE_M / 4)) * A_S4 + q % (TILE_M / 4)] = v;
    }
  }
  for (uint s = 0; s < B_SLOTS; ++s) {
    const uint q = tid + s * THREADS;
    if (q >= B_QUADS) continue;
    const vec4 v = kiln_b_stage[s];
    if (kiln_gemm_b_along_k) {
      const uint nn = q / TK4, k = (q % TK4) * 4;
      const uint at = b0 + k * B_S4 + (nn >> 2), e = nn & 3;
      kiln_b_sh[at][e] = v.x;
      kiln_b_sh[at + B_S4][e] = v.y;
      kiln_b_sh[at + 2 * B_S4][e] = v.z;
      kiln_b_sh[at + 3 * B_S4][e] = v.w;
    } else {
      kiln_b_sh[b0 + (q / (TILE_N / 4)) * B_S4 + q % (TILE_N / 4)] = v;
    }
  }
}

// One k of the staged block: RM x RN vec4 reads, TM x TN multiply-adds.
void kiln_gemm_step(uint a_at, uint b_at) {
  const vec4 a0 = kiln_a_sh[a_at];
  const vec4 b0 = kiln_b_sh[b_at];
  kiln_acc[0] += a0.x * b0;
  kiln_acc[2] += a0.y * b0;
  kiln_acc[4] += a0.z * b0;
  kiln_acc[6] += a0.w * b0;
  if (RN > 1) {
    const vec4 b1 = kiln_b_sh[b_at + WG_X];
    kiln_acc[1] += a0.x * b1;
    kiln_acc[3] += a0.y * b1;
    kiln_acc[5] += a0.z * b1;
    kiln_acc[7] += a0.w * b1;
    if (RM > 1) {
      const vec4 a1 = kiln_a_sh[a_at + WG_Y];
      kiln_acc[8] += a1.x * b0;
      kiln_acc[10] += a1.y * b0;
      kiln_acc[12] += a1.z * b0;
      kiln_acc[14] += a1.w * b0;
      kiln_acc[9] += a1.x * b1;
      kiln_acc[11] += a1.y * b1;
      kiln_acc[13] += a1.z * b1;
      kiln_acc[15] += a1.w * b1;
    }
  } else if (RM > 1) {
    const vec4 a1 = kiln_a_sh[a_at + WG_Y];
    kiln_acc[8] += a1.x * b0;
    kiln_acc[10] += a1.y * b0;
    kiln_acc[12] += a1.z * b0;
    kiln_acc[14] += a1.w * b0;
  }
}

void kiln_gemm_compute(uint buf) {
  uint a_at = (kiln_slice * 2 + buf) * TK * A_S4 + kiln_ly;
  uint b_at = (kiln_slice * 2 + buf) * TK * B_S4 + gl_LocalInvocationID.x;
  for (uint k4 = 0; k4 < TK4; ++k4) {
    kiln_gemm_step(a_at, b_at);
    kiln_gemm_step(a_at + A_S4, b_at + B_S4);
    kiln_gemm_step(a_at + 2 * A_S4, b_at + 2 * B_S4);
    kiln_gemm_step(a_at + 3 * A_S4, b_at + 3 * B_S4);
    a_at += 4 * A_S4;
    b_at += 4 * B_S4;
  }
}

// Accumulates A[row0.., k_begin..k_end) x B[k_begin..k_end), col0..) into
// kiln_acc. Every invocation of the workgroup must call it (barriers).
void kiln_gemm_mainloop(uint row0, uint col0, uint k_begin, uint k_end) {
  kiln_slice = gl_LocalInvocationID.y / WG_Y;
  kiln_ly = gl_LocalInvocationID.y - kiln_slice * WG_Y;
  kiln_tid = kiln_ly * WG_X + gl_LocalInvocationID.x;
  for (uint i = 0; i < 16; ++i) kiln_acc[i] = vec4(0);
  const uint total = k_end > k_begin ? (k_end - k_begin + TK - 1) / TK : 0;
  const uint steps = (total + KSPLIT - 1) / KSPLIT;  // per slice, the same for all
  if (steps == 0) return;
  kiln_gemm_fetch(row0, col0, k_begin + kiln_slice * TK, k_end);
  kiln_gemm_stage(0);
  barrier();
  for (uint t = 0; t < steps; ++t) {
    const bool more = t + 1 < steps;
    if (more) kiln_gemm_fetch(row0, col0, k_begin + ((t + 1) * KSPLIT + kiln_slice) * TK, k_end);
    kiln_gemm_compute(t & 1);
    if (more) kiln_gemm_stage((t + 1) & 1);
    barrier();
  }
}

// Register quad j of the tile by a chain of selects: kiln_acc is only ever
// indexed by constants (so GPUs keep it in registers) while the epilogue
// below stays one copy in a loop (llvmpipe compiles an inlined copy per
// quad several times slower, see README.md).
vec4 kiln_gemm_pick(uint j) {
  return j == 0 ? kiln_acc[0] : j == 1 ? kiln_acc[1] : j == 2 ? kiln_acc[2]
       : j == 3 ? kiln_acc[3] : j == 4 ? kiln_acc[4] : j == 5 ? kiln_acc[5]
       : j == 6 ? kiln_acc[6] : j == 7 ? kiln_acc[7] : j == 8 ? kiln_acc[8]
       : j == 9 ? kiln_acc[9] : j == 10 ? kiln_acc[10] : j == 11 ? kiln_acc[11]
       : j == 12 ? kiln_acc[12] : j == 13 ? kiln_acc[13] : j == 14 ? kiln_acc[14]
       : kiln_acc[15];
}

// Hands every register quad inside C (rows m, columns n) to the
// includer's epilogue; under KSPLIT, slices 1.. first hand their tiles to
// slice 0, which adds them in slice order. Every invocation of the
// workgroup must call it (a barrier when KSPLIT > 1).
void kiln_gemm_store(uint row0, uint col0, uint m, uint n) {
  if (KSPLIT > 1) {
    if (kiln_slice > 0) {
      for (uint i = 0; i < TM * RN; ++i) {
        kiln_red_sh[((kiln_slice - 1) * TM * RN + i) * THREADS + kiln_tid] =
            kiln_gemm_pick((i / RN) * 2 + i % RN);
      }
    }
    barrier();
    if (kiln_slice > 0) return;
  }
  for (uint i = 0; i < TM * RN; ++i) {
    const uint r = i / RN, c = i % RN;
    const uint gm = row0 + kiln_gemm_row(r), gn = col0 + kiln_gemm_col(c);
    if (gm < m && gn < n) {
      vec4 v = kiln_gemm_pick(r * 2 + c);
      for (uint s = 1; s < KSPLIT; ++s) v += kiln_red_sh[((s - 1) * TM * RN + i) * THREADS + kiln_tid];
      kiln_gemm_epilogue(gm, gn, v);
    }
  }
}

#endif  // KILN_GEMM_TILE_GLSL_
