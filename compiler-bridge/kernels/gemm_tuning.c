// The GEMM tuning table (kernels_gemm_tuning.h): one tiling per arch of the
// target table, for gemm and conv2d_gemm on gemm_tile.glsl.
//
// Why these numbers (to be refilled from `kiln-kernels-bench --sweep` on
// each device; the H100/H200 rows are a first guess until then):
// - desktop GPUs (NVIDIA 48 KiB of shared memory through Vulkan, AMD 64
//   KiB): 256 invocations, 8x8 per invocation = 128x128 blocks, TK 8:
//   16.5 KiB double-buffered, leaving room for two workgroups per SM;
// - mobile (Mali 512 invocations / 32 KiB, Adreno, Apple, Intel): 256
//   invocations of 4x4 = 64x64 blocks, fewer registers per invocation;
// - cpu (llvmpipe): the fp32 gemm is gemm_cpu (config.c); this row serves
//   the fp16-storage variant: one workgroup per core, 64 invocations;
// - unknown: Vulkan's guaranteed 128 invocations and 16 KiB.
#include <string.h>

#include "kiln/compiler/kernels_gemm_tuning.h"

typedef struct kiln_gemm_tuning_row_t {
  const char* arch;
  kiln_kernel_gemm_tiling_t tiling;
} kiln_gemm_tuning_row_t;

static const kiln_gemm_tuning_row_t kGemmTuning[] = {
    {"unknown", {16, 8, 4, 4, 8, 1}},
    {"cpu", {8, 8, 4, 4, 8, 1}},
    {"valhall", {16, 16, 4, 4, 8, 1}},
    {"adreno", {16, 16, 4, 4, 8, 1}},
    {"rdna1", {16, 16, 8, 8, 8, 1}},
    {"rdna2", {16, 16, 8, 8, 8, 1}},
    {"rdna3", {16, 16, 8, 8, 8, 1}},
    {"pascal", {16, 16, 8, 8, 8, 1}},
    {"turing", {16, 16, 8, 8, 8, 1}},
    {"ampere", {16, 16, 8, 8, 8, 1}},
    {"ada", {16, 16, 8, 8, 8, 1}},
    {"hopper", {16, 16, 8, 8, 8, 1}},
    {"arc", {16, 16, 4, 4, 8, 1}},
    {"m1", {16, 16, 4, 4, 8, 1}},
};

// Block shapes 128x128, 128x64, 64x128, 64x64, 32x32 at TK 8 and 16.
static const kiln_kernel_gemm_tiling_t kGemmCandidates[] = {
    {16, 16, 8, 8, 8, 1},  {16, 16, 8, 8, 16, 1}, {8, 16, 8, 8, 8, 1},  {8, 16, 8, 8, 16, 1},
    {16, 8, 8, 8, 8, 1},   {16, 16, 8, 4, 8, 1},  {16, 16, 4, 8, 8, 1}, {8, 8, 8, 8, 8, 1},
    {8, 8, 8, 8, 16, 1},   {16, 16, 4, 4, 8, 1},  {16, 16, 4, 4, 16, 1}, {16, 8, 4, 8, 16, 1},
    {8, 8, 4, 4, 8, 1},    {32, 8, 4, 8, 8, 1},
};

const kiln_kernel_gemm_tiling_t* kiln_kernel_gemm_tuning(const char* arch) {
  if (!arch) return NULL;
  for (size_t i = 0; i < kiln_kernel_gemm_tuning_count(); ++i) {
    if (strcmp(kGemmTuning[i].arch, arch) == 0) return &kGemmTuning[i].tiling;
  }
  return NULL;
}

size_t kiln_kernel_gemm_tuning_count(void) {
  return sizeof(kGemmTuning) / sizeof(kGemmTuning[0]);
}

const char* kiln_kernel_gemm_tuning_arch(size_t index) {
  return index < kiln_kernel_gemm_tuning_count() ? kGemmTuning[index].arch : NULL;
}

size_t kiln_kernel_gemm_candidate_count(void) {
  return sizeof(kGemmCandidates) / sizeof(kGemmCandidates[0]);
}

const kiln_kernel_gemm_tiling_t* kiln_kernel_gemm_candidate(size_t index) {
  return index < kiln_kernel_gemm_candidate_count() ? &kGemmCandidates[index] : NULL;
}

uint32_t kiln_kernel_gemm_tiling_ks(const kiln_kernel_gemm_tiling_t* t) {
  return t && t->ks > 1 ? t->ks : 1;
}

uint32_t kiln_kernel_gemm_config_ks(const kiln_kernel_config_t* config) {
  const uint32_t ks = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_KSPLIT, 1);
  return ks > 1 ? ks : 1;
}

uint32_t kiln_kernel_gemm_shared_bytes(const kiln_kernel_gemm_tiling_t* t) {
  // Mirrors gemm_tile.glsl: per k slice 2 * TK * (TILE_M / 4 + 1 + TILE_N /
  // 4 + 1) vec4s, and the reduction array: (KS - 1) * TM * TN / 4 vec4s per
  // invocation of a slice (one vec4 when KS = 1).
  const uint32_t ks = kiln_kernel_gemm_tiling_ks(t);
  const uint32_t staging = ks * 2u * t->tk * ((t->wg_y * t->tm) / 4 + 1 + (t->wg_x * t->tn) / 4 + 1);
  const uint32_t reduce = ks > 1 ? (ks - 1) * t->tm * (t->tn / 4) * t->wg_x * t->wg_y : 1;
  return (staging + reduce) * 16u;
}

kiln_status_t kiln_kernel_gemm_tiling_apply(const kiln_kernel_gemm_tiling_t* t,
                                            const kiln_kernel_arch_caps_t* caps,
                                            kiln_kernel_config_t* config) {
  if (!t || !caps || !config) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "gemm tiling: NULL argument");
  }
  if ((t->tm != 4 && t->tm != 8) || (t->tn != 4 && t->tn != 8)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "gemm tiling: TM %u / TN %u must be 4 or 8", t->tm, t->tn);
  }
  if (t->tk < 4 || t->tk > 32 || t->tk % 4 != 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "gemm tiling: TK %u must be a multiple of 4 in [4, 32]", t->tk);
  }
  const uint32_t ks = kiln_kernel_gemm_tiling_ks(t);
  if (ks > 8) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "gemm tiling: %u k slices (at most 8)", ks);
  }
  if (t->wg_x == 0 || t->wg_y == 0 || t->wg_x > 64 || t->wg_y * ks > 64) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "gemm tiling: workgroup %u x (%u x %u k slices) outside [1, 64] "
                            "each",
                            t->wg_x, t->wg_y, ks);
  }
  if (t->wg_x * t->wg_y * ks > caps->max_workgroup_invocations) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "gemm tiling: %u x %u x %u = %u invocations exceed the arch's %u",
                            t->wg_x, t->wg_y, ks, t->wg_x * t->wg_y * ks,
                            caps->max_workgroup_invocations);
  }
  const uint32_t shared = kiln_kernel_gemm_shared_bytes(t);
  if (shared > caps->max_shared_memory_bytes) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "gemm tiling %ux%u x %ux%u TK %u: %u bytes of shared memory "
                            "exceed the arch's %u",
                            t->wg_x, t->wg_y, t->tm, t->tn, t->tk, shared,
                            caps->max_shared_memory_bytes);
  }
  config->workgroup_size[0] = t->wg_x;
  config->workgroup_size[1] = t->wg_y * ks;
  config->shared_memory_bytes = shared;
  if (ks > 1) KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(config, KILN_SPEC_GEMM_KSPLIT, ks));
  KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(config, KILN_SPEC_GEMM_TM, t->tm));
  KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(config, KILN_SPEC_GEMM_TN, t->tn));
  return kiln_kernel_config_set_spec(config, KILN_SPEC_GEMM_TK, t->tk);
}

static uint32_t kiln_gemm_pow2_floor(uint32_t value) {
  uint32_t p = 1;
  while (p * 2 <= value) p *= 2;
  return p;
}

// Caps without a row (device caps, or an arch added to the target table
// but not here): as many of 256 invocations as allowed, 8x8 tiles where
// the subgroup and shared memory suggest a desktop GPU, then TK and the
// tile shrunk until the shared use fits.
static kiln_kernel_gemm_tiling_t kiln_gemm_derive(const kiln_kernel_arch_caps_t* caps) {
  uint32_t threads = kiln_gemm_pow2_floor(caps->max_workgroup_invocations < 256
                                              ? caps->max_workgroup_invocations
                                              : 256);
  if (caps->subgroup_size <= 8 && threads > 64) threads = 64;
  kiln_kernel_gemm_tiling_t t = {1, 1, 4, 4, 8, 1};
  t.wg_x = threads >= 256 ? 16 : (threads < 8 ? threads : 8);
  t.wg_y = threads / t.wg_x;
  bool big = caps->subgroup_size >= 32 && caps->max_shared_memory_bytes >= 32 * 1024 &&
             threads >= 256;
  t.tm = t.tn = big ? 8 : 4;
  while (kiln_kernel_gemm_shared_bytes(&t) > caps->max_shared_memory_bytes) {
    if (t.tk > 4) t.tk /= 2;
    else if (t.tm == 8) t.tm = t.tn = 4;
    else if (t.wg_y > 1) t.wg_y /= 2;
    else if (t.wg_x > 1) t.wg_x /= 2;
    else break;
  }
  return t;
}

kiln_status_t kiln_kernel_gemm_tiling_select(const kiln_kernel_arch_caps_t* caps,
                                             kiln_kernel_gemm_tiling_t* out_tiling) {
  if (!caps || !out_tiling) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "gemm tiling: NULL argument");
  }
  const kiln_kernel_gemm_tiling_t* row = kiln_kernel_gemm_tuning(caps->arch);
  if (row && row->wg_x * row->wg_y <= caps->max_workgroup_invocations &&
      kiln_kernel_gemm_shared_bytes(row) <= caps->max_shared_memory_bytes) {
    *out_tiling = *row;
  } else {
    *out_tiling = kiln_gemm_derive(caps);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_kernel_gemm_tiling_select_small(const kiln_kernel_arch_caps_t* caps,
                                                   kiln_kernel_gemm_tiling_t* out_tiling) {
  KILN_RETURN_IF_ERROR(kiln_kernel_gemm_tiling_select(caps, out_tiling));
  if (out_tiling->tm < 8 && out_tiling->tn < 8) return kiln_ok_status();
  const kiln_kernel_gemm_tiling_t small[] = {{16, 16, 4, 4, 16, 1}, {16, 16, 4, 4, 8, 1}};
  for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); ++i) {
    if (small[i].wg_x * small[i].wg_y <= caps->max_workgroup_invocations &&
        kiln_kernel_gemm_shared_bytes(&small[i]) <= caps->max_shared_memory_bytes) {
      *out_tiling = small[i];
      break;
    }
  }
  return kiln_ok_status();
}

// Public spec sheets of one common large part per arch (first guesses for
// the split-K rule; the sweep's split-K rows show where it pays): H100 SXM,
// RTX 4090, A100, RTX 2080 Ti, P100, RX 7900 XTX / 6900 XT / 5700 XT,
// M1 (8 cores), Mali-G78 MP20 (Pixel 6). Arc has 8-wide subgroups, which
// the kernels treat as CPU-like. blocks_per_unit: how many output blocks
// per unit a split aims at. NVIDIA's 4 from the H100 (2026-11-24,
// bench_gpu.sh, 30 calls, fp32, ms a call at 1 / 2 / 4): BERT-base 3.12 /
// 2.58 / 2.59, ViT-B/16 4.17 / 4.00 / 3.79, the CNNs within 1%; the same
// on gemm_coopmat's f16 products (coopmat_tuning.c). Elsewhere 1, as
// first set (unmeasured).
static const struct {
  const char* arch;
  uint32_t units;
  uint32_t blocks_per_unit;
} kComputeUnits[] = {
    {"hopper", 132, 4}, {"ada", 128, 4},  {"ampere", 108, 4}, {"turing", 68, 4},
    {"pascal", 56, 4},  {"rdna3", 96, 1}, {"rdna2", 80, 1},   {"rdna1", 40, 1},
    {"m1", 8, 1},       {"valhall", 20, 1},
};

// Every arch with a unit count splits. NVIDIA's had been left out after an
// H100 run in which every bench model lost with it (ResNet-50 5.76 vs 4.91
// ms): the sum of the parts then ran on gemv's 32 k slices. With a short
// k on one slice (gemm_occupancy.c) the H100 gains on every fp32 bench
// model (2026-11-24, bench_gpu.sh, 30 calls; ms a call without -> with):
// ResNet-18 1.103 -> 0.943, ResNet-50 1.914 -> 1.854, MobileNetV2 0.542
// -> 0.529, EfficientNet-B0 1.108 -> 1.072, BERT-base 3.218 -> 3.130,
// ViT-B/16 4.402 -> 4.157.
bool kiln_kernel_gemm_split_k_enabled(const char* arch) {
  return arch && kiln_kernel_gemm_compute_units(arch) != 0;
}

uint32_t kiln_kernel_gemm_compute_units(const char* arch) {
  if (!arch) return 0;
  for (size_t i = 0; i < sizeof(kComputeUnits) / sizeof(kComputeUnits[0]); ++i) {
    if (strcmp(kComputeUnits[i].arch, arch) == 0) return kComputeUnits[i].units;
  }
  return 0;
}

uint32_t kiln_kernel_gemm_split_k_blocks_per_unit(const char* arch) {
  if (!arch) return 1;
  for (size_t i = 0; i < sizeof(kComputeUnits) / sizeof(kComputeUnits[0]); ++i) {
    if (strcmp(kComputeUnits[i].arch, arch) == 0) return kComputeUnits[i].blocks_per_unit;
  }
  return 1;
}

// `want` parts of k, each at least min_k long, at most
// KILN_GEMM_SPLIT_K_MAX_PARTS.
static uint64_t kiln_split_k_cap(uint64_t want, uint64_t k, uint64_t min_k) {
  if (want > k / min_k) want = k / min_k;
  return want > KILN_GEMM_SPLIT_K_MAX_PARTS ? KILN_GEMM_SPLIT_K_MAX_PARTS : want;
}

// batch x m x n x k, saturating.
static uint64_t kiln_split_k_macs(uint64_t batch, uint64_t m, uint64_t n, uint64_t k) {
  const uint64_t factors[] = {m, n, k};
  uint64_t macs = batch;
  for (int i = 0; i < 3; ++i) {
    macs = factors[i] && macs > UINT64_MAX / factors[i] ? UINT64_MAX : macs * factors[i];
  }
  return macs;
}

uint32_t kiln_kernel_gemm_split_k_parts(const kiln_kernel_arch_caps_t* caps, uint64_t m,
                                        uint64_t n, uint64_t k, uint64_t batch) {
  if (!caps || caps->subgroup_size <= 8) return 1;  // CPU-like: gemm_cpu / conv2d_cpu
  const uint64_t units = kiln_kernel_gemm_compute_units(caps->arch);
  kiln_kernel_gemm_tiling_t t;
  if (units == 0 || kiln_kernel_gemm_tiling_select_small(caps, &t)) return 1;
  const uint64_t tile_m = (uint64_t)t.wg_y * t.tm, tile_n = (uint64_t)t.wg_x * t.tn;
  const uint64_t blocks = batch * ((m + tile_m - 1) / tile_m) * ((n + tile_n - 1) / tile_n);
  const uint64_t per_unit = kiln_kernel_gemm_split_k_blocks_per_unit(caps->arch);
  if (blocks == 0 || 2 * blocks > units * per_unit) return 1;
  const uint64_t want = (units * per_unit + blocks - 1) / blocks;
  uint64_t parts = kiln_split_k_cap(want, k, KILN_GEMM_SPLIT_K_MIN_K);
  // Shorter parts where each workgroup still multiplies at least
  // KILN_GEMM_SPLIT_K_MIN_BLOCK_MACS: the parts' own tiling (the one the
  // lowering will pick for them) times their k.
  const uint64_t short_parts = kiln_split_k_cap(want, k, KILN_GEMM_SPLIT_K_SHORT_MIN_K);
  kiln_kernel_gemm_tiling_t part_tiling;
  if (short_parts > parts &&
      kiln_split_k_macs(batch, m, n, k) >= KILN_GEMM_SPLIT_K_SHORT_MIN_MACS &&
      kiln_status_is_ok(kiln_kernel_gemm_tiling_select_shape(
          caps, m, n, (k + short_parts - 1) / short_parts, batch * short_parts, &part_tiling))) {
    const uint64_t area = (uint64_t)part_tiling.wg_y * part_tiling.tm * part_tiling.wg_x *
                          part_tiling.tn;
    if (area * (k / short_parts) >= KILN_GEMM_SPLIT_K_MIN_BLOCK_MACS) parts = short_parts;
  }
  return parts < 2 ? 1 : (uint32_t)parts;
}
