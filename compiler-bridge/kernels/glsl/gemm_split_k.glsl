// Split-K reduced inside the GEMM's own dispatch (gemm_split_k, issue 16):
// the dispatch's batch is the k parts of one product (workgroup z = part
// z, operands shifted by the batch strides as for any batch). Each
// workgroup stores its block's partial product into part z of the
// partials (binding 5, fp32 whatever the storage, rows of c_row_stride,
// parts c_batch_stride apart) and counts itself in its block's counter
// (binding 6, zeroed by the module before every call). The workgroup
// that counts last adds the block's parts in part order (the same sum
// whichever part came last) and runs the fused epilogue into C (batch 0).
// This replaces a second dispatch that summed the parts (a dispatch and a
// barrier per product, ~5 us each in BERT on an H100).
// Ordering: every invocation's partial stores are made visible at device
// scope (memoryBarrierBuffer) before the workgroup's barrier and its one
// atomic; the last workgroup fences again after reading its count, and
// reads the partials through `coherent` (past non-coherent caches). No
// workgroup waits for another, so there is no forward-progress hazard.
// The includer declares p, batch, c_vec4, TILE_M / TILE_N and
// kiln_gemm_epilogue, and defines KILN_GEMM_TILE_STORE as
// kiln_split_store_partial before including gemm_tile.glsl.
#ifndef KILN_GEMM_SPLIT_K_GLSL_
#define KILN_GEMM_SPLIT_K_GLSL_

layout(set = 0, binding = 5) coherent buffer PartialBuffer { vec4 kiln_part4[]; };
layout(set = 0, binding = 6) coherent buffer CounterBuffer { uint kiln_counters[]; };

shared uint kiln_split_last;

// Part `batch` of C[gm][gn..gn+3], before scale and epilogue.
void kiln_split_store_partial(uint gm, uint gn, vec4 v) {
  const uint o = batch * p.c_batch_stride + gm * p.c_row_stride + gn;
  if (c_vec4 && gn + 3 < p.n) {
    kiln_part4[o >> 2] = v;
  } else {
    for (uint j = 0; j < 4; ++j) {
      if (gn + j < p.n) kiln_part4[(o + j) >> 2][(o + j) & 3] = v[j];
    }
  }
}

// Every invocation of the workgroup calls it after kiln_gemm_store.
void kiln_split_finish(uint row0, uint col0) {
  memoryBarrierBuffer();
  barrier();
  if (gl_LocalInvocationIndex == 0) {
    const uint block = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    kiln_split_last = atomicAdd(kiln_counters[block], 1u) + 1u == p.batch ? 1u : 0u;
  }
  barrier();
  if (kiln_split_last == 0u) return;
  memoryBarrierBuffer();
  const uint parts = p.batch;
  batch = 0;
  const uint row_quads = TILE_N / 4;
  const uint invocations = gl_WorkGroupSize.x * gl_WorkGroupSize.y;
  for (uint q = gl_LocalInvocationIndex; q < TILE_M * row_quads; q += invocations) {
    const uint gm = row0 + q / row_quads, gn = col0 + (q % row_quads) * 4;
    if (gm >= p.m || gn >= p.n) continue;
    const uint o = gm * p.c_row_stride + gn;
    const bool whole = c_vec4 && gn + 3 < p.n;
    vec4 v = vec4(0);
    for (uint s = 0; s < parts; ++s) {
      const uint at = s * p.c_batch_stride + o;
      if (whole) {
        v += kiln_part4[at >> 2];
      } else {
        for (uint j = 0; j < 4; ++j) {
          if (gn + j < p.n) v[j] += kiln_part4[(at + j) >> 2][(at + j) & 3];
        }
      }
    }
    kiln_gemm_epilogue(gm, gn, v);
  }
}

#endif  // KILN_GEMM_SPLIT_K_GLSL_
