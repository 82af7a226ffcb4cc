// Occupancy-aware GEMM tilings (issue 16): a product with few output blocks
// under the small tiling (a 7x7 layer's 1x1 conv: 5 blocks of 64x64 on a
// 132-SM GPU) trades block size for grid size and, where narrower blocks
// still leave the GPU idle, splits k inside the workgroup (gemm_tile.glsl's
// KSPLIT: one dispatch, a fixed-order reduction in shared memory).
//
// Only for arches with a compute-unit count of a desktop part (>= 32:
// NVIDIA, AMD); CPU-like devices (lavapipe), mobile and unknown arches keep
// the small tiling, so their modules do not change.
#include "kiln/compiler/kernels_gemm_tuning.h"

// Candidates, in order of preference: bigger blocks first (fewer loads per
// multiply-add), then the k-split ones. Each is checked against the caps
// (invocations, shared memory) before use.
static const kiln_kernel_gemm_tiling_t kOccupancyCandidates[] = {
    {16, 16, 4, 4, 16, 1},  // 64x64, 256 invocations (the small tiling)
    {16, 8, 4, 4, 16, 1},   // 32x64, 128
    {8, 16, 4, 4, 16, 1},   // 64x32, 128
    {8, 8, 4, 4, 16, 1},    // 32x32, 64
    {16, 16, 4, 4, 8, 2},   // 64x64, 512, k in 2
    {16, 8, 4, 4, 16, 2},   // 32x64, 256, k in 2
    {8, 16, 4, 4, 16, 2},   // 64x32, 256, k in 2
    {8, 8, 4, 4, 16, 2},    // 32x32, 128, k in 2
    {8, 8, 4, 4, 16, 4},    // 32x32, 256, k in 4
    {8, 8, 4, 4, 8, 4},     // the same at TK 8 (31 KiB of shared memory, not 48)
    {16, 4, 4, 4, 8, 4},    // 16x64, 256, k in 4
    {8, 4, 4, 4, 16, 4},    // 16x32, 128, k in 4
    {4, 8, 4, 4, 16, 4},    // 32x16, 128, k in 4
    {4, 4, 4, 4, 16, 4},    // 16x16, 64, k in 4
    {4, 4, 4, 4, 16, 8},    // 16x16, 128, k in 8
    {8, 8, 4, 4, 4, 8},     // 32x32, 512, k in 8
    {8, 4, 4, 4, 8, 8},     // 16x32, 256, k in 8
};

size_t kiln_kernel_gemm_occupancy_candidate_count(void) {
  return sizeof(kOccupancyCandidates) / sizeof(kOccupancyCandidates[0]);
}

const kiln_kernel_gemm_tiling_t* kiln_kernel_gemm_occupancy_candidate(size_t index) {
  return index < kiln_kernel_gemm_occupancy_candidate_count() ? &kOccupancyCandidates[index]
                                                               : NULL;
}

bool kiln_kernel_gemm_occupancy_enabled(const kiln_kernel_arch_caps_t* caps) {
  return caps && caps->subgroup_size > 8 &&
         kiln_kernel_gemm_compute_units(caps->arch) >= KILN_GEMM_OCCUPANCY_MIN_UNITS;
}

static bool kiln_occupancy_fits(const kiln_kernel_gemm_tiling_t* t,
                                const kiln_kernel_arch_caps_t* caps) {
  const uint32_t ks = kiln_kernel_gemm_tiling_ks(t);
  return t->wg_x * t->wg_y * ks <= caps->max_workgroup_invocations &&
         kiln_kernel_gemm_shared_bytes(t) <= caps->max_shared_memory_bytes;
}

uint64_t kiln_kernel_gemm_tiling_blocks(const kiln_kernel_gemm_tiling_t* t, uint64_t m,
                                        uint64_t n, uint64_t batch) {
  const uint64_t tile_m = (uint64_t)t->wg_y * t->tm, tile_n = (uint64_t)t->wg_x * t->tn;
  return batch * ((m + tile_m - 1) / tile_m) * ((n + tile_n - 1) / tile_n);
}

kiln_status_t kiln_kernel_gemm_tiling_select_shape(const kiln_kernel_arch_caps_t* caps,
                                                   uint64_t m, uint64_t n, uint64_t k,
                                                   uint64_t batch,
                                                   kiln_kernel_gemm_tiling_t* out_tiling) {
  KILN_RETURN_IF_ERROR(kiln_kernel_gemm_tiling_select_small(caps, out_tiling));
  if (!kiln_kernel_gemm_occupancy_enabled(caps) || m == 0 || n == 0 || batch == 0) {
    return kiln_ok_status();
  }
  // The first candidate whose blocks fill the target; failing that, the
  // one with the most invocations at work (blocks up to the target times
  // invocations per block), the earlier on ties.
  const uint64_t target = (uint64_t)KILN_GEMM_OCCUPANCY_BLOCKS_PER_UNIT *
                          kiln_kernel_gemm_compute_units(caps->arch);
  const kiln_kernel_gemm_tiling_t* best = NULL;
  uint64_t best_work = 0;
  for (size_t i = 0; i < kiln_kernel_gemm_occupancy_candidate_count(); ++i) {
    const kiln_kernel_gemm_tiling_t* t = &kOccupancyCandidates[i];
    const uint32_t ks = kiln_kernel_gemm_tiling_ks(t);
    if (!kiln_occupancy_fits(t, caps)) continue;
    if (ks > 1 && k < (uint64_t)ks * KILN_GEMM_OCCUPANCY_MIN_K_PER_SLICE) continue;
    const uint64_t blocks = kiln_kernel_gemm_tiling_blocks(t, m, n, batch);
    if (blocks >= target) {
      best = t;
      break;
    }
    const uint64_t work = blocks * t->wg_x * t->wg_y * ks;
    if (work > best_work) {
      best = t;
      best_work = work;
    }
  }
  if (best) *out_tiling = *best;
  return kiln_ok_status();
}

kiln_status_t kiln_kernel_config_select_shape(kiln_kernel_id_t kernel,
                                              const kiln_kernel_arch_caps_t* caps,
                                              kiln_kernel_storage_t storage, uint64_t m,
                                              uint64_t n, uint64_t k, uint64_t batch,
                                              kiln_kernel_config_t* out_config) {
  KILN_RETURN_IF_ERROR(kiln_kernel_config_select(kernel, caps, storage, out_config));
  if ((kernel != KILN_KERNEL_GEMM_SMALL && kernel != KILN_KERNEL_CONV2D_GEMM) || m == 0 ||
      out_config->variant == KILN_KERNEL_VARIANT_CPU || !kiln_kernel_gemm_occupancy_enabled(caps)) {
    return kiln_ok_status();
  }
  kiln_kernel_gemm_tiling_t tiling;
  KILN_RETURN_IF_ERROR(kiln_kernel_gemm_tiling_select_shape(caps, m, n, k, batch, &tiling));
  KILN_RETURN_IF_ERROR(kiln_kernel_gemm_tiling_apply(&tiling, caps, out_config));
  KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(out_config, KILN_SPEC_WORKGROUP_X,
                                                   out_config->workgroup_size[0]));
  return kiln_kernel_config_set_spec(out_config, KILN_SPEC_WORKGROUP_Y,
                                     out_config->workgroup_size[1]);
}
