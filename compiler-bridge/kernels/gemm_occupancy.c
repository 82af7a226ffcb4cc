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

uint64_t kiln_kernel_gemm_occupancy_min_k(uint32_t ks) {
  if (ks <= 1) return 0;
  return (uint64_t)ks * (ks >= 8 ? KILN_GEMM_OCCUPANCY_MIN_K_PER_SLICE8
                                 : KILN_GEMM_OCCUPANCY_MIN_K_PER_SLICE);
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

// Preference order of the candidates above (indices): fewer k slices
// first, then bigger blocks; the 32x32 KS 4 pair takes TK 16 from k = 1024
// (kSplitTk16MinK) and TK 8 below. {8, 8, 4, 4, 4, 8} (TK 4) is left out:
// the H100 sweep of 2026-11-24 never had it fastest.
static const uint8_t kOccupancyOrder[] = {0, 1, 2, 3, 4, 5, 6, 7, 9, 8, 10, 11, 12, 13, 16, 14};
#define KILN_OCCUPANCY_TK16_MIN_K 1024u

// Fraction of a tiling's computed outputs that are inside C, scaled by
// 2^20 (ties in the fallback go to less padding).
static uint64_t kiln_occupancy_useful(const kiln_kernel_gemm_tiling_t* t, uint64_t m, uint64_t n,
                                      uint64_t batch) {
  const uint64_t area = (uint64_t)t->wg_y * t->tm * t->wg_x * t->tn;
  const uint64_t blocks = kiln_kernel_gemm_tiling_blocks(t, m, n, batch);
  return blocks ? (m * n * batch << 20) / (blocks * area) : 0;
}

// Whether a candidate pads m (rows) by more than 15%: ViT's 197 tokens in
// 64-row blocks (256 rows) ran 13% slower end to end on an H100 than with
// one tiling, where 32-row blocks (224) were the sweep's best; the rule
// first held for k-split candidates only, and ViT-B/16 fp32 still ran its
// products in 64-row blocks split across dispatches: 3.45 -> 3.22 ms with
// the rule on every candidate (two runs each, 2026-11-25; MobileNetV2,
// ResNet-18/50, EfficientNet-B0, BERT-base fp32 and f16 within 1%).
static bool kiln_occupancy_pads_rows(const kiln_kernel_gemm_tiling_t* t, uint64_t m) {
  const uint64_t tile_m = (uint64_t)t->wg_y * t->tm;
  const uint64_t rows = (m + tile_m - 1) / tile_m * tile_m;
  return m * 100 < rows * 85;
}

// One pass over the candidates in preference order: the first whose
// blocks put `target` invocations to work (skipping k splits that pad
// rows when `strict`), else the one with the most (then the least
// padding, then the bigger workgroup). Returns whether the target was met.
static bool kiln_occupancy_pass(const kiln_kernel_arch_caps_t* caps, uint64_t m, uint64_t n,
                                uint64_t k, uint64_t batch, uint64_t target, bool strict,
                                const kiln_kernel_gemm_tiling_t** out_best) {
  const kiln_kernel_gemm_tiling_t* best = NULL;
  uint64_t best_work = 0, best_useful = 0, best_threads = 0;
  for (size_t o = 0; o < sizeof(kOccupancyOrder) / sizeof(kOccupancyOrder[0]); ++o) {
    const size_t i = kOccupancyOrder[o];
    if (i >= kiln_kernel_gemm_occupancy_candidate_count()) continue;
    const kiln_kernel_gemm_tiling_t* t = &kOccupancyCandidates[i];
    const uint32_t ks = kiln_kernel_gemm_tiling_ks(t);
    if (!kiln_occupancy_fits(t, caps)) continue;
    if (k < kiln_kernel_gemm_occupancy_min_k(ks)) continue;
    if (ks == 4 && t->wg_x == 8 && t->wg_y == 8 &&
        (t->tk == 16) != (k >= KILN_OCCUPANCY_TK16_MIN_K)) {
      continue;
    }
    const uint64_t threads = (uint64_t)t->wg_x * t->wg_y * ks;
    const uint64_t work = kiln_kernel_gemm_tiling_blocks(t, m, n, batch) * threads;
    if (work >= target && !(strict && kiln_occupancy_pads_rows(t, m))) {
      *out_best = t;
      return true;
    }
    const uint64_t useful = kiln_occupancy_useful(t, m, n, batch);
    if (work > best_work ||
        (work == best_work && (useful > best_useful ||
                               (useful == best_useful && threads > best_threads)))) {
      best = t;
      best_work = work;
      best_useful = useful;
      best_threads = threads;
    }
  }
  *out_best = best;
  return false;
}

kiln_status_t kiln_kernel_gemm_tiling_select_shape(const kiln_kernel_arch_caps_t* caps,
                                                   uint64_t m, uint64_t n, uint64_t k,
                                                   uint64_t batch,
                                                   kiln_kernel_gemm_tiling_t* out_tiling) {
  KILN_RETURN_IF_ERROR(kiln_kernel_gemm_tiling_select_small(caps, out_tiling));
  if (!kiln_kernel_gemm_occupancy_enabled(caps) || m == 0 || n == 0 || batch == 0) {
    return kiln_ok_status();
  }
  // First without k splits that pad rows; where that meets no target, the
  // plain pass decides.
  const uint64_t target = (uint64_t)KILN_GEMM_OCCUPANCY_INVOCATIONS_PER_UNIT *
                          kiln_kernel_gemm_compute_units(caps->arch);
  const kiln_kernel_gemm_tiling_t* best = NULL;
  if (!kiln_occupancy_pass(caps, m, n, k, batch, target, true, &best)) {
    kiln_occupancy_pass(caps, m, n, k, batch, target, false, &best);
  }
  if (best) *out_tiling = *best;
  return kiln_ok_status();
}

// The tiled gemm's 128x128 blocks (the tuning table's desktop row) with
// half as many rows, for products whose m the 128-row blocks pad by more
// than 15% and that fewer rows of 64 cover (m <= 64 and the like:
// ResNet-50 batch 32's 64-channel convs and their Winograd products),
// where half of every block's work fell outside C. On an H100 ResNet-50 batch 32 fp32 went 11.42 -> 11.04 ms a
// call (alternating A/B runs, 2026-11-25); batch-1 models did not move.
static const kiln_kernel_gemm_tiling_t kGemmHalfRows = {16, 8, 8, 8, 8, 1};
static const kiln_kernel_gemm_tiling_t kGemmFullRows = {16, 16, 8, 8, 8, 1};

// gemv with a longer k on targets that tile per product: as many k slices
// as k has steps (quads along k for a transposed B, where consecutive
// lanes read one row of B; rows of B otherwise), up to the workgroup's
// invocations, the rest on column quads, and fewer column quads while the
// grid leaves compute units idle (down to one quad along k, four along n,
// whose lanes then still read 32 bytes of a row together). gemv's fixed 8
// quads x 32 slices gave ResNet-50's classifier (1000 x 2048) 32
// workgroups of 16 dependent loads each: 20 us on an H200.
static kiln_status_t kiln_gemv_shape(const kiln_kernel_arch_caps_t* caps, uint64_t n, uint64_t k,
                                     uint64_t rows, bool b_along_k,
                                     kiln_kernel_config_t* config) {
  const uint32_t threads = config->workgroup_size[0] * config->workgroup_size[1];
  const uint64_t steps = b_along_k ? (k + 3) / 4 : k;
  uint32_t slices = 1;
  while (slices < threads && slices < steps) slices *= 2;
  uint32_t quads = threads / slices;
  const uint32_t min_quads = b_along_k ? 1 : 4;
  const uint64_t units = kiln_kernel_gemm_compute_units(caps->arch);
  while (quads > min_quads && (n + 4ull * quads - 1) / (4ull * quads) * rows < units) quads /= 2;
  if (quads < min_quads) quads = min_quads;
  if ((uint64_t)quads * slices > threads) slices = threads / quads;
  config->workgroup_size[0] = quads;
  config->workgroup_size[1] = slices;
  config->shared_memory_bytes = quads * slices * 16u;
  KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(config, KILN_SPEC_WORKGROUP_X, quads));
  return kiln_kernel_config_set_spec(config, KILN_SPEC_WORKGROUP_Y, slices);
}

kiln_status_t kiln_kernel_config_select_shape(kiln_kernel_id_t kernel,
                                              const kiln_kernel_arch_caps_t* caps,
                                              kiln_kernel_storage_t storage, uint64_t m,
                                              uint64_t n, uint64_t k, uint64_t batch,
                                              bool b_along_k, kiln_kernel_config_t* out_config) {
  KILN_RETURN_IF_ERROR(kiln_kernel_config_select(kernel, caps, storage, out_config));
  if (kernel == KILN_KERNEL_GEMV && m != 0 && k <= KILN_GEMV_SHORT_K &&
      out_config->variant != KILN_KERNEL_VARIANT_CPU && kiln_kernel_gemm_occupancy_enabled(caps)) {
    // A short k (split-K's sum of parts): one k slice, all lanes on
    // columns. gemv's 8 x 32 split k in 32 slices, idled 26 of them and
    // summed through five barriers (BERT-base's sums of 6 parts: 8.5 us
    // each on an H100).
    uint32_t lanes = KILN_GEMV_SHORT_K_LANES;
    while (lanes > 1 && (lanes > caps->max_workgroup_invocations ||
                         lanes * 16u > caps->max_shared_memory_bytes)) {
      lanes /= 2;
    }
    out_config->workgroup_size[0] = lanes;
    out_config->workgroup_size[1] = 1;
    out_config->shared_memory_bytes = lanes * 16u;
    KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(out_config, KILN_SPEC_WORKGROUP_X, lanes));
    return kiln_kernel_config_set_spec(out_config, KILN_SPEC_WORKGROUP_Y, 1);
  }
  if (kernel == KILN_KERNEL_GEMV && m != 0 && out_config->variant != KILN_KERNEL_VARIANT_CPU &&
      kiln_kernel_gemm_occupancy_enabled(caps)) {
    return kiln_gemv_shape(caps, n, k, m * batch, b_along_k, out_config);
  }
  if (kiln_kernel_is_gemm_coopmat(kernel) && m != 0) {
    kiln_kernel_coopmat_tiling_t tiling;
    KILN_RETURN_IF_ERROR(kiln_kernel_coopmat_tiling_select_shape(caps, m, n, k, batch, &tiling));
    return kiln_kernel_coopmat_tiling_apply(&tiling, caps, out_config);
  }
  if (kernel == KILN_KERNEL_GEMM && m != 0 && out_config->variant != KILN_KERNEL_VARIANT_CPU &&
      kiln_kernel_gemm_occupancy_enabled(caps) && kiln_occupancy_pads_rows(&kGemmFullRows, m) &&
      (m + 63) / 64 * 64 < (m + 127) / 128 * 128 && kiln_occupancy_fits(&kGemmHalfRows, caps)) {
    KILN_RETURN_IF_ERROR(kiln_kernel_gemm_tiling_apply(&kGemmHalfRows, caps, out_config));
    KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(out_config, KILN_SPEC_WORKGROUP_X,
                                                     out_config->workgroup_size[0]));
    return kiln_kernel_config_set_spec(out_config, KILN_SPEC_WORKGROUP_Y,
                                       out_config->workgroup_size[1]);
  }
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
