// Tilings of gemm_coopmat (kernels_gemm_tuning.h): one row per arch whose
// target-table caps say cooperative matrix, and the sweep's candidates.
//
// The kernel declares 41 KiB of shared memory (NVIDIA gives Vulkan 48):
// double-buffered blocks up to 128x128 at BK 32 or 128x256 at BK 16, and
// single-buffered ones at BK 64.
// KILN_VULKAN_PIPELINE_STATS=1 prints each build's registers on NVIDIA.
#include <stdio.h>
#include <string.h>

#include "kiln/compiler/kernels_gemm_tuning.h"

typedef struct kiln_coopmat_tuning_row_t {
  const char* arch;
  kiln_kernel_coopmat_tiling_t tiling;
} kiln_coopmat_tuning_row_t;

// hopper from `kiln-kernels-bench --coopmat` on an H100 (2026-11-24, one
// build per tiling with its loops unrolled): 2x4 subgroups of 4x4 tiles
// (128x256 blocks, BK 16) ran MatMul 4096^3 in 0.99 ms (139 TFLOP/s; the
// next tiling 58) and the bench models' largest linear shape fastest too.
// The other NVIDIA rows follow it unmeasured.
static const kiln_kernel_coopmat_tiling_t kCoopmatLarge = {2, 4, 4, 4, 16};
static const kiln_coopmat_tuning_row_t kCoopmatTuning[] = {
    {"turing", {2, 4, 4, 4, 16}}, {"ampere", {2, 4, 4, 4, 16}},
    {"ada", {2, 4, 4, 4, 16}},    {"hopper", {2, 4, 4, 4, 16}},
};

// Every tiling has a build of its own (kernels meson: kiln_coopmat_tilings),
// so the candidates are exactly the built ones: the table's, the medium
// ones and the small products' (the meson list's first row, blob names
// without a tiling). Earlier sweeps of 12 tilings as spec constants:
// docs/precision.md.
// Small products: 64x64 blocks, as 2x4 subgroups of 2x1 tiles (8
// subgroups: more loads in flight for the few blocks per SM such products
// make) rather than 2x2 of 2x2. H200, f16, `scripts/bench_ab.py` (3
// alternating rounds, median warm call of 30, 2026-11-26): ResNet-50
// 1.244 -> 1.102 ms a call, BERT-base 1.193 -> 1.172, ViT-B/16 1.688 ->
// 1.662, MobileNetV2 0.543 -> 0.532. 4x2 subgroups of 1x2 tiles: 1.125,
// 1.151, 1.681, 0.531; 4x4 of 1x1: 1.095, 1.164, 1.719, 0.560.
static const kiln_kernel_coopmat_tiling_t kCoopmatSmall = {2, 4, 2, 1, 32};
// Medium blocks for products that fill the GPU with them but would pad or
// under-fill the table's: 8 or 16 subgroups each, 115-132 registers where
// the table's 128x256 build takes 255 and spills (KILN_VULKAN_PIPELINE_STATS,
// H100 and H200). The times below were taken before the sweep warmed the
// GPU's clocks (gemm_sweep.h, KILN_BENCH_WARM_MS): ratios within one run
// only. `kiln-kernels-bench --coopmat --only=...` on an H100 (2026-11-25,
// ms): ResNet-50 batch 32's 3x3 convs per image, 256 x 196, k 2304: 64x64
// 0.258, 128x128 0.121; 512 x 49, k 4608: 64x64 0.320, 128x64 0.132; and
// 64 x 3136, k 576: 64x64 0.737, 64x128 0.573 (that one in the full sweep,
// whose times all ran about 4x long). They also take the parts of a split
// product (its batch is the parts: BERT's 128 x 2304 QKV in 3 parts makes
// 108 blocks of 128x64). bench_gpu.sh f16 on an H100, two alternating runs
// each, without -> with them: ResNet-50 batch 32 13.8 -> 10.4 ms a call,
// BERT-base 1.49 -> 1.33, ViT-B/16 2.26 -> 1.85, ResNet-50 1.51 -> 1.49.
// The 128x64 and 64x128 blocks step k by 64 through one staging buffer
// (KILN_COOPMAT_STAGES; double buffers at BK 64 would pass 48 KiB):
// half the round trips to global memory, which bound the split products
// of the transformers (BERT's 128 x 3072 linear in 3 parts of k 256).
// bench models at f16 on an H100 (2026-11-25, alternating runs of the
// bench's kiln runner, wall ms a call, two runs each), BK 32 -> 64 for
// every medium and the small block / the medium 128x64 and 64x128 and the
// small one: BERT-base 1.282, 1.302 -> 1.239, 1.242 / 1.229, 1.244;
// ViT-B/16 1.793, 1.804 -> 1.739, 1.748 / 1.726, 1.750; ResNet-50 batch
// 32 6.84, 6.83 -> 7.21, 7.23 / 6.78, 6.72 (the 128x128 blocks of its
// 3x3 convs lose at BK 64: 0.121 -> 0.140 ms for 256 x 196, k 2304, in
// `kiln-kernels-bench --coopmat`); ResNet-50 1.30-1.32 -> 1.28-1.30; but
// MobileNetV2 0.572, 0.574 -> 0.589, 0.594, EfficientNet-B0 1.14-1.15 ->
// 1.17 and ResNet-18 0.57 -> 0.58-0.59 with the small block at BK 64 (its
// 64x64 blocks alone: 0.095 -> 0.110 ms for 128 x 3072, k 768), which
// keeps BK 32.
// The 128x128 blocks as 4x4 subgroups of 2x2 tiles (512 invocations, 115
// registers) rather than 2x4 of 4x2 (256, 175 registers): twice the
// subgroups to hide a step's loads under another's products. H200, f16,
// `scripts/bench_ab.py` (3 alternating rounds, median warm call of 30,
// 2026-11-26): ResNet-50 batch 32 6.698 -> 5.931 ms a call (its 3x3 convs
// of 14x14 and 28x28 and its 1x1 expands at k 64 take them); BERT-base,
// ViT-B/16 and ResNet-50 within 0.4%. `kiln-kernels-bench --coopmat`
// (clocks warmed): 256 x 196, k 2304 per image 0.112 -> 0.097 ms; 4096^3
// 0.966 -> 0.965.
static const kiln_kernel_coopmat_tiling_t kCoopmat128x128 = {4, 4, 2, 2, 32};
static const kiln_kernel_coopmat_tiling_t kCoopmat128x64 = {4, 2, 2, 2, 64};
static const kiln_kernel_coopmat_tiling_t kCoopmat64x128 = {2, 4, 2, 2, 64};
// Every built tiling with the time one dispatch of it takes on the
// reference GPU, modelled as fixed_us + step_us x its k steps x its waves
// (its blocks over the arch's compute units, rounded up): a least-squares
// fit (scripts/fit_coopmat_costs.py) to `kiln-kernels-bench --coopmat`'s
// "fit" shapes, BERT-base's and ViT-B/16's linears whole and in 2 to 12
// parts of k, on an H200 (tests/spirv/bench/coopmat_fit_h200.txt,
// 2026-11-26, clocks warmed; rms error 1.0 to 2.6 us; one block per SM
// fits every tiling best). tiling_select_shape takes the least modelled
// time, split_k_parts the parts with the least time plus their sum's
// dispatch. Per step the big blocks cost the most and do the most
// (128x256 x 16 k: 0.84 us), the 64x64 ones the least; the fixed part is
// launch, first loads and epilogue.
typedef struct kiln_coopmat_candidate_t {
  const kiln_kernel_coopmat_tiling_t* tiling;
  double fixed_us, step_us;
} kiln_coopmat_candidate_t;
static const kiln_coopmat_candidate_t kCoopmatCandidates[] = {
    {&kCoopmatLarge, 11.3, 0.844},   {&kCoopmatSmall, 6.6, 0.485},
    {&kCoopmat128x128, 6.9, 0.911},  {&kCoopmat128x64, 8.4, 0.992},
    {&kCoopmat64x128, 8.2, 1.323},
};
// What a split adds: fitted when the sum was a dispatch of its own (a gemv
// over the parts; 5.2 to 6.2 us for BERT-base's in per-dispatch stamps on
// the H200). The sum now runs in the last part's block (gemm_coopmat_split)
// or in a LayerNorm (norm_parts), yet 2 or 0.5 us here ran 0.99-1.02x
// (docs/precision.md, session 28), so the charge stays. The partials'
// traffic is not modelled: only products whose blocks leave compute units
// idle split at all.
#define KILN_COOPMAT_SPLIT_SUM_US 5.5

// The kernel's device needs, named so that a refusal says what is missing.
static kiln_status_t kiln_coopmat_check_caps(const kiln_kernel_arch_caps_t* caps) {
  if (!caps->cooperative_matrix || !caps->fp16_arithmetic) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "gemm_coopmat needs cooperative matrix "
                            "(VK_NV_cooperative_matrix, 16x16x16 f16 -> f32) and fp16 "
                            "arithmetic, which the %s lacks",
                            caps->arch ? caps->arch : "device");
  }
  return kiln_ok_status();
}

const kiln_kernel_coopmat_tiling_t* kiln_kernel_coopmat_tuning(const char* arch) {
  if (!arch) return NULL;
  for (size_t i = 0; i < sizeof(kCoopmatTuning) / sizeof(kCoopmatTuning[0]); ++i) {
    if (strcmp(kCoopmatTuning[i].arch, arch) == 0) return &kCoopmatTuning[i].tiling;
  }
  return NULL;
}

size_t kiln_kernel_coopmat_candidate_count(void) {
  return sizeof(kCoopmatCandidates) / sizeof(kCoopmatCandidates[0]);
}

const kiln_kernel_coopmat_tiling_t* kiln_kernel_coopmat_candidate(size_t index) {
  return index < kiln_kernel_coopmat_candidate_count() ? kCoopmatCandidates[index].tiling : NULL;
}

static bool kiln_coopmat_same(const kiln_kernel_coopmat_tiling_t* a,
                              const kiln_kernel_coopmat_tiling_t* b) {
  return a->warps_m == b->warps_m && a->warps_n == b->warps_n && a->tiles_m == b->tiles_m &&
         a->tiles_n == b->tiles_n && a->bk == b->bk;
}

kiln_status_t kiln_kernel_coopmat_build_name(const kiln_kernel_coopmat_tiling_t* t, char* out,
                                             size_t capacity) {
  if (!t || !out || capacity == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "coopmat build name: NULL argument");
  }
  out[0] = '\0';
  bool built = false;
  for (size_t i = 0; i < kiln_kernel_coopmat_candidate_count(); ++i) {
    built = built || kiln_coopmat_same(t, kCoopmatCandidates[i].tiling);
  }
  if (!built) {
    return kiln_make_status(KILN_STATUS_NOT_FOUND,
                            "gemm_coopmat has no build for %ux%u subgroups of %ux%u tiles, "
                            "BK %u (kernels meson: kiln_coopmat_tilings)",
                            t->warps_m, t->warps_n, t->tiles_m, t->tiles_n, t->bk);
  }
  int n = kiln_coopmat_same(t, &kCoopmatSmall)
              ? snprintf(out, capacity, "gemm_coopmat")
              : snprintf(out, capacity, "gemm_coopmat_%ux%u_%ux%u_k%u", t->warps_m, t->warps_n,
                         t->tiles_m, t->tiles_n, t->bk);
  if (n < 0 || (size_t)n >= capacity) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "coopmat build name: buffer too small");
  }
  return kiln_ok_status();
}

uint32_t kiln_kernel_coopmat_shared_bytes(const kiln_kernel_coopmat_tiling_t* t) {
  // Mirrors gemm_coopmat.comp: STAGES * (A_SIZE + B_SIZE) uvec4s (B_SIZE of the
  // larger of its two layouts), reused after the loop for each subgroup's
  // 16 rows of WN f32 + one uvec4 of padding.
  const uint32_t bm = t->warps_m * t->tiles_m * 16, bn = t->warps_n * t->tiles_n * 16;
  const uint32_t a_size = bm * (t->bk / 8 + 1);
  const uint32_t b_size = t->bk * bn / 8 + (t->bk > bn ? t->bk : bn);
  const uint32_t staged = KILN_COOPMAT_STAGES(t->bk) * (a_size + b_size);
  const uint32_t rows = t->warps_m * t->warps_n * 16u * (t->tiles_n * 4u + 1u);
  return (staged > rows ? staged : rows) * 16u;
}

kiln_status_t kiln_kernel_coopmat_tiling_apply(const kiln_kernel_coopmat_tiling_t* t,
                                               const kiln_kernel_arch_caps_t* caps,
                                               kiln_kernel_config_t* config) {
  if (!t || !caps || !config) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "coopmat tiling: NULL argument");
  }
  KILN_RETURN_IF_ERROR(kiln_coopmat_check_caps(caps));
  if (t->warps_m == 0 || t->warps_n == 0 || t->tiles_m == 0 || t->tiles_n == 0 ||
      t->warps_m * t->warps_n > 16 || t->tiles_m * t->tiles_n > 16) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "coopmat tiling: %u x %u subgroups of %u x %u tiles (each "
                            "product must be in [1, 16])",
                            t->warps_m, t->warps_n, t->tiles_m, t->tiles_n);
  }
  if (t->bk != 16 && t->bk != 32 && t->bk != 64) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "coopmat tiling: BK %u must be 16, 32 or 64", t->bk);
  }
  // The builds assume subgroups of 32 (every NVIDIA GPU's).
  if (caps->subgroup_size != 32) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "gemm_coopmat's builds assume subgroups of 32; the %s has %u",
                            caps->arch ? caps->arch : "device", caps->subgroup_size);
  }
  char name[64];
  KILN_RETURN_IF_ERROR(kiln_kernel_coopmat_build_name(t, name, sizeof(name)));
  const uint32_t threads = t->warps_m * t->warps_n * caps->subgroup_size;
  if (threads > caps->max_workgroup_invocations) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "coopmat tiling: %u subgroups of %u invocations exceed the "
                            "arch's %u (or the subgroup is under 16)",
                            t->warps_m * t->warps_n, caps->subgroup_size,
                            caps->max_workgroup_invocations);
  }
  // The kernel declares its whole array whatever the tiling uses of it.
  const uint32_t used = kiln_kernel_coopmat_shared_bytes(t);
  const uint32_t declared = KILN_COOPMAT_SHARED_VEC4 * 16u;
  if (used > declared || declared > caps->max_shared_memory_bytes) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "coopmat tiling %ux%u x %ux%u BK %u: uses %u bytes of the "
                            "kernel's %u of shared memory (the arch has %u)",
                            t->warps_m, t->warps_n, t->tiles_m, t->tiles_n, t->bk, used,
                            declared, caps->max_shared_memory_bytes);
  }
  config->workgroup_size[0] = threads;
  config->workgroup_size[1] = 1;
  // Also the spec constant: a config re-tiled after selection keeps its
  // workgroup consistent with its tiling.
  KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(config, KILN_SPEC_WORKGROUP_X, threads));
  config->shared_memory_bytes = declared;
  KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(config, KILN_SPEC_COOPMAT_WARPS_M, t->warps_m));
  KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(config, KILN_SPEC_COOPMAT_WARPS_N, t->warps_n));
  KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(config, KILN_SPEC_COOPMAT_TILES_M, t->tiles_m));
  KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(config, KILN_SPEC_COOPMAT_TILES_N, t->tiles_n));
  return kiln_kernel_config_set_spec(config, KILN_SPEC_COOPMAT_BK, t->bk);
}

static bool kiln_coopmat_fits(const kiln_kernel_coopmat_tiling_t* t,
                              const kiln_kernel_arch_caps_t* caps) {
  return t->warps_m * t->warps_n * caps->subgroup_size <= caps->max_workgroup_invocations &&
         kiln_kernel_coopmat_shared_bytes(t) <= KILN_COOPMAT_SHARED_VEC4 * 16u &&
         KILN_COOPMAT_SHARED_VEC4 * 16u <= caps->max_shared_memory_bytes;
}

kiln_status_t kiln_kernel_coopmat_tiling_select(const kiln_kernel_arch_caps_t* caps, bool small,
                                                kiln_kernel_coopmat_tiling_t* out_tiling) {
  if (!caps || !out_tiling) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "coopmat tiling: NULL argument");
  }
  KILN_RETURN_IF_ERROR(kiln_coopmat_check_caps(caps));
  const kiln_kernel_coopmat_tiling_t* row = kiln_kernel_coopmat_tuning(caps->arch);
  if (!small && row && kiln_coopmat_fits(row, caps)) {
    *out_tiling = *row;
    return kiln_ok_status();
  }
  // Elsewhere (and for small products) the 64x64 tiling, the one the GPU
  // tests have checked on every edge size.
  if (kiln_coopmat_fits(&kCoopmatSmall, caps)) {
    *out_tiling = kCoopmatSmall;
    return kiln_ok_status();
  }
  return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                          "gemm_coopmat: no tiling fits %u invocations and %u bytes of "
                          "shared memory",
                          caps->max_workgroup_invocations, caps->max_shared_memory_bytes);
}

static uint64_t kiln_coopmat_blocks(const kiln_kernel_coopmat_tiling_t* t, uint64_t m,
                                    uint64_t n, uint64_t batch) {
  const uint64_t bm = (uint64_t)t->warps_m * t->tiles_m * 16;
  const uint64_t bn = (uint64_t)t->warps_n * t->tiles_n * 16;
  return batch * ((m + bm - 1) / bm) * ((n + bn - 1) / bn);
}

// The candidate that fits `caps` with the least modelled time for the
// product on `units` compute units, and that time (us).
static double kiln_coopmat_least_time(const kiln_kernel_arch_caps_t* caps, uint64_t units,
                                      uint64_t m, uint64_t n, uint64_t k, uint64_t batch,
                                      const kiln_kernel_coopmat_tiling_t** out_tiling) {
  double best = -1.0;
  for (size_t i = 0; i < kiln_kernel_coopmat_candidate_count(); ++i) {
    const kiln_coopmat_candidate_t* c = &kCoopmatCandidates[i];
    if (!kiln_coopmat_fits(c->tiling, caps)) continue;
    const uint64_t waves = (kiln_coopmat_blocks(c->tiling, m, n, batch) + units - 1) / units;
    const uint64_t steps = (k + c->tiling->bk - 1) / c->tiling->bk;
    const double us = c->fixed_us + c->step_us * (double)steps * (double)waves;
    if (best < 0 || us < best) {
      best = us;
      if (out_tiling) *out_tiling = c->tiling;
    }
  }
  return best;
}

kiln_status_t kiln_kernel_coopmat_tiling_select_shape(const kiln_kernel_arch_caps_t* caps,
                                                      uint64_t m, uint64_t n, uint64_t k,
                                                      uint64_t batch,
                                                      kiln_kernel_coopmat_tiling_t* out_tiling) {
  KILN_RETURN_IF_ERROR(kiln_kernel_coopmat_tiling_select(caps, false, out_tiling));
  const kiln_kernel_coopmat_tiling_t table = *out_tiling;
  kiln_kernel_coopmat_tiling_t small;
  KILN_RETURN_IF_ERROR(kiln_kernel_coopmat_tiling_select(caps, true, &small));
  // An arch without a row has only the small tiling; one without a
  // compute-unit count keeps its row's.
  if (kiln_coopmat_same(&table, &small)) return kiln_ok_status();
  const uint64_t units = kiln_kernel_gemm_compute_units(caps->arch);
  const kiln_kernel_coopmat_tiling_t* pick = NULL;
  if (units && kiln_coopmat_least_time(caps, units, m, n, k, batch, &pick) >= 0 && pick) {
    *out_tiling = *pick;
  }
  return kiln_ok_status();
}

uint32_t kiln_kernel_coopmat_split_k_parts(const kiln_kernel_arch_caps_t* caps, uint64_t m,
                                           uint64_t n, uint64_t k, uint64_t batch) {
  kiln_kernel_coopmat_tiling_t small;
  kiln_status_t status = caps ? kiln_kernel_coopmat_tiling_select(caps, true, &small) : NULL;
  if (!caps || !kiln_status_is_ok(status)) {  // no tiling: the caller's kernel refuses it
    kiln_status_ignore(status);
    return 1;
  }
  const uint64_t units = kiln_kernel_gemm_compute_units(caps->arch);
  if (units == 0 || batch == 0) return 1;
  if (kiln_kernel_coopmat_tuning(caps->arch)) {
    // Arches with a row: where the whole product's blocks leave compute
    // units idle (else the model, blind to the partials' traffic, would
    // cut MatMul 4096^3 in 16 parts: 512 MiB of them), the parts whose
    // modelled time plus a sum beats the whole product's. Equal parts of
    // whole runs of 8 only (one dispatch, the parts as its batch:
    // lower_splitk.c), each at least KILN_GEMM_SPLIT_K_MIN_K long. With
    // the tiling choice, against the rules before (blocks per SM, medium
    // blocks where they filled 3/4 of the SMs), H200, f16, bench_ab.py,
    // two runs of 3-4 alternating rounds (2026-11-26): ViT-B/16 0.932x /
    // 0.934x, ResNet-18 0.969x / 0.997x, BERT-base 1.012x / 0.986x,
    // ResNet-50 1.000x / 1.018x; batch 32, MobileNetV2, EfficientNet-B0
    // and MatMul 4096^3 within 1%. A charge per part on top (0.5 or 1 us)
    // lost 4-26%.
    const kiln_kernel_coopmat_tiling_t* whole = NULL;
    double best = kiln_coopmat_least_time(caps, units, m, n, k, batch, &whole);
    if (best < 0 || !whole || kiln_coopmat_blocks(whole, m, n, batch) >= units) return 1;
    uint32_t parts = 1;
    for (uint32_t p = 2; p <= KILN_COOPMAT_SPLIT_K_MAX_PARTS; ++p) {
      if (k % p != 0 || (k / p) % 8 != 0 || k / p < KILN_GEMM_SPLIT_K_MIN_K) continue;
      const double us = kiln_coopmat_least_time(caps, units, m, n, k / p, batch * p, NULL) +
                        KILN_COOPMAT_SPLIT_SUM_US;
      if (us < best) {
        best = us;
        parts = p;
      }
    }
    // At least two parts where k allows. The model, fitted to whole
    // products, charges a split's second wave of blocks in full; the
    // products it kept whole here ran faster in two parts, their sum in
    // the last part's block. H200, f16, bench_ab.py (3 alternating
    // rounds, median warm call of 300, 2026-11-26), the model's parts ->
    // at least two: BERT-base 1.128 -> 1.082 ms (its FFN-up, 128 x 3072,
    // k 768), ResNet-50 1.012 -> 0.957, ViT-B/16 1.418 -> 1.392,
    // MobileNetV2 0.510 -> 0.502, ResNet-18 0.995x, EfficientNet-B0
    // 0.999x. At least three: 0.978x, 0.987x, 1.039x, 1.002x.
    if (parts == 1 && k % 2 == 0 && (k / 2) % 8 == 0 && k / 2 >= KILN_GEMM_SPLIT_K_MIN_K) {
      parts = 2;
    }
    return parts;
  }
  // Elsewhere (the 64x64 tiling only) the arch's blocks per unit, as for
  // the SIMT kernels (4 on NVIDIA: several resident per SM, so one's loads
  // can run under another's products). H100, f16, bench_gpu.sh, before the
  // model above: BERT-base 1.71 -> 1.63 ms a call, ViT-B/16 2.55 -> 2.39
  // from 1 to 4; 2 gave half that, 8 the same as 4.
  const uint64_t blocks = kiln_coopmat_blocks(&small, m, n, batch);
  const uint64_t per_unit = kiln_kernel_gemm_split_k_blocks_per_unit(caps->arch);
  if (blocks == 0 || 2 * blocks > units * per_unit) return 1;
  uint64_t parts = (units * per_unit + blocks - 1) / blocks;
  if (parts > k / KILN_GEMM_SPLIT_K_MIN_K) parts = k / KILN_GEMM_SPLIT_K_MIN_K;
  if (parts > KILN_COOPMAT_SPLIT_K_MAX_PARTS) parts = KILN_COOPMAT_SPLIT_K_MAX_PARTS;
  return parts < 2 ? 1 : (uint32_t)parts;
}
