// kiln-kernels-bench --coopmat: gemm_coopmat (cooperative matrix, f16 x
// f16 -> f32) on MatMul 4096^3 and the bench models' GEMM shapes, over its
// tiling candidates (kernels_gemm_tuning.h), on the device KILN_TEST_DEVICE
// names. Per shape, tiling and build (f16: f16 buffers in and out; f32:
// f32 buffers staged as f16): median GPU time of the sweep's repetitions,
// TFLOP/s, and a check against double dot products of the same f16 inputs
// (every output of the small "check" shapes, 64 sampled outputs of the
// others): worst |got - ref| / max |ref| <= 2e-3 for f16 output (one f16
// rounding, 2^-11, plus fp32 sums) and 1e-4 for f32 output. Inputs are
// uniform in [-1, 1) and exactly representable in f16. A device without
// cooperative matrix runs the check shapes on the fp16 gemm it falls back
// to, then gets a message naming what it lacks and exit code 1.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/gemm_sweep.h"
#include "kiln/compiler/kernels_gemm_tuning.h"

typedef struct coop_shape_t {
  const char* name;
  uint32_t m, n, k;
  bool trans_b;  // B stored n x k (a linear layer's weight)
  // Images of a conv lowered to columns (A, the weight, shared by all; B
  // and C per image; 0 = 1), and B's row stride when not transposed (0 = n;
  // the conv lowering pads rows of OH * OW to a multiple of 8).
  uint32_t batch, b_run;
} coop_shape_t;

static uint32_t coop_batch(const coop_shape_t* s) { return s->batch ? s->batch : 1; }
static uint32_t coop_b_run(const coop_shape_t* s) { return s->b_run ? s->b_run : s->n; }
static size_t coop_b_count(const coop_shape_t* s) {
  return (size_t)s->k * (s->trans_b ? s->n : coop_b_run(s));
}

// BERT-base / ViT-B linear layers (128 and 197 tokens), ResNet-50's 1x1
// convs as GEMMs (weights [C_out, C_in] x image [C_in, H*W]).
static const coop_shape_t kCoopShapes[] = {
    {"check 129x127x131", 129, 127, 131, false},
    {"check 17x1000x15 transB", 17, 1000, 15, true},
    {"check 1x33x4097", 1, 33, 4097, false},
    {"matmul 4096^3", 4096, 4096, 4096, false},
    {"matmul 4096^3 transB", 4096, 4096, 4096, true},
    {"linear 128x3072 k768", 128, 3072, 768, false},
    {"linear 128x768 k3072", 128, 768, 3072, false},
    {"linear 128x3072 k768 transB", 128, 3072, 768, true},
    {"linear 197x2304 k768 (vit qkv)", 197, 2304, 768, false},
    {"linear 197x768 k3072 (vit fc2)", 197, 768, 3072, false},
    {"r50 1x1 64x3136 k64", 64, 3136, 64, false},
    {"r50 1x1 256x3136 k64", 256, 3136, 64, false},
    {"r50 1x1 128x784 k512", 128, 784, 512, false},
    {"r50 1x1 1024x196 k256", 1024, 196, 256, false},
    {"r50 1x1 512x49 k2048", 512, 49, 2048, false},
    {"r50 1x1 2048x49 k512", 2048, 49, 512, false},
    {"r50 b32 1x1 256x100352 k64", 256, 100352, 64, false},
    // ResNet-50 batch 32's 3x3 convs as the KxK lowering runs them: per
    // image, weight [C_out, 9 C_in] x columns [9 C_in, OH * OW].
    {"r50 b32 3x3 64x3136 k576", 64, 3136, 576, false, 32, 0},
    {"r50 b32 3x3 128x784 k1152", 128, 784, 1152, false, 32, 0},
    {"r50 b32 3x3 256x196 k2304", 256, 196, 2304, false, 32, 200},
    {"r50 b32 3x3 512x49 k4608", 512, 49, 4608, false, 32, 56},
    // The cost model's shapes (coopmat_tuning.c, scripts/fit_coopmat_costs.py):
    // BERT-base's and ViT-B/16's linears whole and in equal parts of k (the
    // parts as the batch, as lower_splitk.c runs them), and k from 64 to
    // 1024 in 3 parts.
    {"fit bert qkv 128x2304 k768 x1", 128, 2304, 768, false, 1, 0},
    {"fit bert qkv 128x2304 k384 x2", 128, 2304, 384, false, 2, 0},
    {"fit bert qkv 128x2304 k256 x3", 128, 2304, 256, false, 3, 0},
    {"fit bert qkv 128x2304 k128 x6", 128, 2304, 128, false, 6, 0},
    {"fit bert out 128x768 k768 x1", 128, 768, 768, false, 1, 0},
    {"fit bert out 128x768 k384 x2", 128, 768, 384, false, 2, 0},
    {"fit bert out 128x768 k256 x3", 128, 768, 256, false, 3, 0},
    {"fit bert out 128x768 k128 x6", 128, 768, 128, false, 6, 0},
    {"fit bert fc1 128x3072 k768 x1", 128, 3072, 768, false, 1, 0},
    {"fit bert fc1 128x3072 k384 x2", 128, 3072, 384, false, 2, 0},
    {"fit bert fc1 128x3072 k256 x3", 128, 3072, 256, false, 3, 0},
    {"fit bert fc1 128x3072 k128 x6", 128, 3072, 128, false, 6, 0},
    {"fit bert fc2 128x768 k3072 x1", 128, 768, 3072, false, 1, 0},
    {"fit bert fc2 128x768 k1536 x2", 128, 768, 1536, false, 2, 0},
    {"fit bert fc2 128x768 k1024 x3", 128, 768, 1024, false, 3, 0},
    {"fit bert fc2 128x768 k512 x6", 128, 768, 512, false, 6, 0},
    {"fit bert fc2 128x768 k256 x12", 128, 768, 256, false, 12, 0},
    {"fit vit qkv 197x2304 k768 x1", 197, 2304, 768, false, 1, 0},
    {"fit vit qkv 197x2304 k384 x2", 197, 2304, 384, false, 2, 0},
    {"fit vit qkv 197x2304 k256 x3", 197, 2304, 256, false, 3, 0},
    {"fit vit qkv 197x2304 k128 x6", 197, 2304, 128, false, 6, 0},
    {"fit vit out 197x768 k768 x1", 197, 768, 768, false, 1, 0},
    {"fit vit out 197x768 k384 x2", 197, 768, 384, false, 2, 0},
    {"fit vit out 197x768 k256 x3", 197, 768, 256, false, 3, 0},
    {"fit vit out 197x768 k128 x6", 197, 768, 128, false, 6, 0},
    {"fit vit fc1 197x3072 k768 x1", 197, 3072, 768, false, 1, 0},
    {"fit vit fc1 197x3072 k384 x2", 197, 3072, 384, false, 2, 0},
    {"fit vit fc1 197x3072 k256 x3", 197, 3072, 256, false, 3, 0},
    {"fit vit fc1 197x3072 k128 x6", 197, 3072, 128, false, 6, 0},
    {"fit vit fc2 197x768 k3072 x1", 197, 768, 3072, false, 1, 0},
    {"fit vit fc2 197x768 k1536 x2", 197, 768, 1536, false, 2, 0},
    {"fit vit fc2 197x768 k1024 x3", 197, 768, 1024, false, 3, 0},
    {"fit vit fc2 197x768 k512 x6", 197, 768, 512, false, 6, 0},
    {"fit vit fc2 197x768 k256 x12", 197, 768, 256, false, 12, 0},
    {"fit k range 128x3072 k64 x3", 128, 3072, 64, false, 3, 0},
    {"fit k range 128x3072 k128 x3", 128, 3072, 128, false, 3, 0},
    {"fit k range 128x3072 k512 x3", 128, 3072, 512, false, 3, 0},
    {"fit k range 128x3072 k1024 x3", 128, 3072, 1024, false, 3, 0},
};

// f16-exact values in [-1, 1): `half` the bits, `value` the floats.
static void coop_values(size_t count, uint32_t seed, uint16_t** half, float** value) {
  *half = malloc(count * 2 + 16);
  *value = malloc(count * 4 + 16);
  if (!*half || !*value) abort();
  uint32_t state = seed * 2654435761u + 7u;
  for (size_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    // Multiples of 2^-10 in [-1, 1): exact in f16.
    int32_t q = (int32_t)((state >> 8) % 2048u) - 1024;
    (*value)[i] = (float)q / 1024.0f;
    uint16_t bits = 0;
    if (q != 0) {
      uint32_t f;
      memcpy(&f, &(*value)[i], 4);
      bits = (uint16_t)(((f >> 16) & 0x8000u) | ((((f >> 23) & 0xffu) - 112u) << 10) |
                        ((f >> 13) & 0x3ffu));
    }
    (*half)[i] = bits;
  }
}

static float coop_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  float f;
  if (exp == 0) {
    f = ldexpf((float)man, -24);
    return sign ? -f : f;
  }
  uint32_t bits = sign | ((exp == 31 ? 255u : exp + 112u) << 23) | (man << 13);
  memcpy(&f, &bits, 4);
  return f;
}

static double coop_ref_at(const coop_shape_t* s, const float* a, const float* b, size_t i,
                          size_t j) {
  double sum = 0;
  const size_t run = coop_b_run(s);
  for (size_t p = 0; p < s->k; ++p) {
    sum += (double)a[i * s->k + p] * (s->trans_b ? b[j * s->k + p] : b[p * run + j]);
  }
  return sum;
}

static kiln_status_t coop_run(kiln_hal_device_t* device, const coop_shape_t* s,
                              kiln_kernel_config_t* config, const char* label,
                              kiln_hal_buffer_t* const* buffers, const float* a, const float* b,
                              const uint32_t* words, size_t word_count, int* failures) {
  const bool f16 = config->variant == KILN_KERNEL_VARIANT_FP16_STORAGE;
  const size_t c_image = (size_t)s->m * s->n, c_count = c_image * coop_batch(s);
  KILN_RETURN_IF_ERROR(
      kiln_kernel_config_set_spec(config, KILN_SPEC_WORKGROUP_X, config->workgroup_size[0]));
  if (config->kernel == KILN_KERNEL_GEMM) {  // the fallback's 2-D workgroup
    KILN_RETURN_IF_ERROR(
        kiln_kernel_config_set_spec(config, KILN_SPEC_WORKGROUP_Y, config->workgroup_size[1]));
  }
  // NaN-filled output (f32 NaN; f16: 0x7e00 pairs) so unwritten outputs fail.
  float* got = malloc(c_count * 4 + 16);
  if (!got) abort();
  for (size_t i = 0; i < c_count; ++i) got[i] = NAN;
  if (f16) memset(got, 0x7e, c_count * 2);
  kiln_status_t status =
      kiln_hal_device_write_buffer(device, buffers[4], 0, got, c_count * (f16 ? 2 : 4));
  kiln_kernel_executable_t kernel;
  memset(&kernel, 0, sizeof(kernel));
  // A fixed-tiling build declares only the epilogue and B-layout ids.
  kiln_kernel_config_t baked = *config;
  baked.spec_count = 0;
  for (size_t i = 0; i < config->spec_count; ++i) {
    const uint32_t id = config->spec[i].id;
    if (id == KILN_SPEC_GEMM_ACTIVATION || id == KILN_SPEC_GEMM_HAS_BIAS ||
        id == KILN_SPEC_GEMM_HAS_RESIDUAL || id == KILN_SPEC_COOPMAT_B_KMAJOR) {
      baked.spec[baked.spec_count++] = config->spec[i];
    }
  }
  if (!status) {
    status = words ? kiln_kernel_executable_create_from_words(device, &baked, words, word_count,
                                                              &kernel)
                   : kiln_kernel_executable_create_from_config(device, config, &kernel);
  }
  kiln_kernel_gemm_params_t p;
  memset(&p, 0, sizeof(p));
  p.m = s->m, p.n = s->n, p.k = s->k, p.batch = coop_batch(s);
  p.a_row_stride = s->k, p.a_col_stride = 1;
  p.b_batch_stride = (uint32_t)coop_b_count(s);
  p.b_row_stride = s->trans_b ? 1 : coop_b_run(s);
  p.b_col_stride = s->trans_b ? s->k : 1;
  p.c_batch_stride = (uint32_t)c_image, p.c_row_stride = s->n;
  p.scale = 1.0f;
  uint32_t grid[3];
  double ns = 0;
  // The grid from the tiling (a fixed build's config carries no tiling ids).
  if (!status) status = kiln_kernel_grid_gemm(config, &p, grid);
  if (!status) status = kiln_bench_sweep_time(device, &kernel, &p, sizeof(p), buffers, grid, &ns);
  if (!status) {
    status = kiln_hal_device_read_buffer(device, buffers[4], 0, got, c_count * (f16 ? 2 : 4));
  }
  kiln_hal_executable_release(kernel.executable);
  if (status) {
    free(got);
    return status;
  }
  const double flops = 2.0 * s->m * s->n * (double)s->k * coop_batch(s);
  const bool full = flops < 1e8;
  const size_t samples = full ? c_count : 64;
  double worst = 0, scale = 1e-30;
  uint32_t state = 12345;
  double* refs = malloc(samples * sizeof(double));
  size_t* at = malloc(samples * sizeof(size_t));
  if (!refs || !at) abort();
  for (size_t i = 0; i < samples; ++i) {
    state = state * 1664525u + 1013904223u;
    at[i] = full ? i : state % c_count;
    const size_t image = at[i] / c_image, in_image = at[i] % c_image;
    refs[i] = coop_ref_at(s, a, b + image * coop_b_count(s), in_image / s->n, in_image % s->n);
    if (fabs(refs[i]) > scale) scale = fabs(refs[i]);
  }
  for (size_t i = 0; i < samples; ++i) {
    double v = f16 ? coop_half_to_float(((const uint16_t*)got)[at[i]]) : got[at[i]];
    double e = fabs(v - refs[i]) / scale;
    if (!(e <= worst)) worst = e;  // NaN propagates as a failure
  }
  free(refs);
  free(at);
  free(got);
  bool ok = worst <= (f16 ? 2e-3 : 1e-4);
  if (!ok) ++*failures;
  printf("| %-32s | %-26s | %10.4f | %8.1f | %-4s %.1e |\n", s->name, label, ns / 1e6,
         flops / ns / 1e3, ok ? "ok" : "FAIL", worst);
  fflush(stdout);
  return kiln_ok_status();
}

// A SPIR-V file of $KILN_COOPMAT_SPV_DIR (coopmat_probe_spv.sh), or NULL.
static uint32_t* coop_read_spirv(const char* name, size_t* out_count) {
  const char* dir = getenv("KILN_COOPMAT_SPV_DIR");
  if (!dir || !dir[0]) return NULL;
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  uint32_t* words = NULL;
  long bytes = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (bytes > 0 && bytes % 4 == 0 && bytes < (64l << 20) && fseek(f, 0, SEEK_SET) == 0) {
    words = malloc((size_t)bytes);
    if (words && fread(words, 1, (size_t)bytes, f) != (size_t)bytes) {
      free(words);
      words = NULL;
    }
  }
  fclose(f);
  *out_count = words ? (size_t)bytes / 4 : 0;
  return words;
}

// An experimental f16 build of tiling `t` (f16_WMxWN_TMxTN_bkBK.spv in
// $KILN_COOPMAT_SPV_DIR: e.g. gemm_coopmat.comp with a change under test,
// built as the kernels meson does), or NULL.
static uint32_t* coop_experiment_spirv(const kiln_kernel_coopmat_tiling_t* t,
                                       size_t* out_count) {
  char name[96];
  snprintf(name, sizeof(name), "f16_%ux%u_%ux%u_bk%u.spv", t->warps_m, t->warps_n, t->tiles_m,
           t->tiles_n, t->bk);
  return coop_read_spirv(name, out_count);
}

// The driver's cooperative-matrix rate (coopmat_peak.comp, when
// KILN_COOPMAT_SPV_DIR has it): 5 workgroups of 4 subgroups per SM-ish
// grid, `rounds` x 8 MMAs of 16x16x16 per subgroup, from registers
// ("peak") and with gemm_coopmat's shared-memory loads ("peak_loads"), by
// 2x4, 2x2 ("_2x2") and 4x4 ("_4x4") fragments per subgroup.
static kiln_status_t coop_peak(kiln_hal_device_t* device, const char* name) {
  size_t word_count = 0;
  uint32_t* words = coop_read_spirv(name, &word_count);
  if (!words) return kiln_ok_status();
  enum { kGroups = 660, kRounds = 4096 };
  kiln_kernel_config_t config;
  memset(&config, 0, sizeof(config));
  config.kernel = KILN_KERNEL_GEMM_COOPMAT;
  config.variant = KILN_KERNEL_VARIANT_FP16_STORAGE;
  config.required_features = kiln_kernel_desc(KILN_KERNEL_GEMM_COOPMAT)->base_features |
                             kiln_kernel_variant_features(config.variant);
  config.workgroup_size[0] = 128;
  config.workgroup_size[1] = config.workgroup_size[2] = 1;
  config.shared_memory_bytes = KILN_COOPMAT_SHARED_VEC4 * 16u;
  kiln_hal_buffer_t* buffers[5] = {NULL};
  kiln_status_t status = kiln_ok_status();
  for (int i = 0; i < 5 && !status; ++i) {
    status = kiln_kernel_test_buffer(device, NULL, i == 4 ? kGroups * 32 : 4, &buffers[i]);
  }
  kiln_kernel_executable_t kernel;
  memset(&kernel, 0, sizeof(kernel));
  if (!status) {
    status = kiln_kernel_executable_create_from_words(device, &config, words, word_count, &kernel);
  }
  kiln_kernel_gemm_params_t p;
  memset(&p, 0, sizeof(p));
  p.k = kRounds;
  const uint32_t grid[3] = {kGroups, 1, 1};
  double ns = 0;
  if (!status) status = kiln_bench_sweep_time(device, &kernel, &p, sizeof(p), buffers, grid, &ns);
  if (!status) {
    const double flops = 2.0 * 16 * 16 * 16 * 8.0 * kRounds * 4.0 * kGroups;
    printf("| %-32s | %-26s | %10.4f | %8.1f | %-12s |\n", "probe: MMA rate", name, ns / 1e6,
           flops / ns / 1e3, "-");
  } else {
    printf("| %-32s | %-26s | error: %s\n", "probe: MMA rate", name,
           kiln_status_message(status));
    kiln_status_free(status);
    status = kiln_ok_status();
  }
  kiln_hal_executable_release(kernel.executable);
  for (int i = 0; i < 5; ++i) kiln_hal_buffer_release(buffers[i]);
  free(words);
  return status;
}

// Without cooperative matrix: the fp16 gemm the library falls back to, on
// the same f16 data and checks (so this tool's plumbing runs on lavapipe).
static kiln_status_t coop_fallback(kiln_hal_device_t* device, const coop_shape_t* s,
                                   const kiln_kernel_arch_caps_t* caps,
                                   kiln_hal_buffer_t* const* buffers, const float* a,
                                   const float* b, int* failures) {
  kiln_kernel_config_t config;
  KILN_RETURN_IF_ERROR(
      kiln_kernel_config_select(KILN_KERNEL_GEMM, caps, KILN_KERNEL_STORAGE_FP16, &config));
  return coop_run(device, s, &config, "gemm_f16 (fallback)", buffers, a, b, NULL, 0, failures);
}

static kiln_status_t coop_shape(kiln_hal_device_t* device, const coop_shape_t* s,
                                const kiln_kernel_arch_caps_t* caps, const char* arch,
                                int* failures) {
  const size_t a_count = (size_t)s->m * s->k, b_count = coop_b_count(s) * coop_batch(s);
  const size_t c_count = (size_t)s->m * s->n * coop_batch(s);
  uint16_t *ha, *hb;
  float *a, *b;
  coop_values(a_count, 1, &ha, &a);
  coop_values(b_count, 2, &hb, &b);
  const kiln_kernel_coopmat_tiling_t* table = kiln_kernel_coopmat_tuning(arch);
  kiln_status_t status = kiln_ok_status();
  for (int build = 0; build < 2 && !status; ++build) {
    const bool f16 = build == 0;
    // Buffers hold f16 (as pairs in floats) or f32; bias and residual unused.
    kiln_hal_buffer_t* buffers[5] = {NULL};
    status = kiln_kernel_test_buffer(device, f16 ? (const float*)ha : a,
                                     f16 ? (a_count + 1) / 2 : a_count, &buffers[0]);
    if (!status) {
      status = kiln_kernel_test_buffer(device, f16 ? (const float*)hb : b,
                                       f16 ? (b_count + 1) / 2 : b_count, &buffers[1]);
    }
    if (!status) status = kiln_kernel_test_buffer(device, NULL, 4, &buffers[2]);
    if (!status) status = kiln_kernel_test_buffer(device, NULL, 4, &buffers[3]);
    if (!status) status = kiln_kernel_test_buffer(device, NULL, c_count, &buffers[4]);
    if (!caps->cooperative_matrix) {
      if (!status && f16) status = coop_fallback(device, s, caps, buffers, a, b, failures);
      for (int i = 0; i < 5; ++i) kiln_hal_buffer_release(buffers[i]);
      continue;
    }
    // f16: every candidate; f32 (staging converts): the table's tiling.
    for (size_t t = 0; t < kiln_kernel_coopmat_candidate_count() && !status; ++t) {
      const kiln_kernel_coopmat_tiling_t* tiling = kiln_kernel_coopmat_candidate(t);
      const bool is_table = table && memcmp(table, tiling, sizeof(*table)) == 0;
      if (!f16 && !is_table) continue;
      char label[64];
      snprintf(label, sizeof(label), "%s %ux%u x %ux%u BK%u%s", f16 ? "f16" : "f32",
               tiling->warps_m, tiling->warps_n, tiling->tiles_m, tiling->tiles_n, tiling->bk,
               is_table ? " *" : "");
      kiln_kernel_config_t config;
      memset(&config, 0, sizeof(config));
      config.kernel = KILN_KERNEL_GEMM_COOPMAT;
      config.variant = f16 ? KILN_KERNEL_VARIANT_FP16_STORAGE : KILN_KERNEL_VARIANT_FP32;
      config.required_features = kiln_kernel_desc(KILN_KERNEL_GEMM_COOPMAT)->base_features |
                                 kiln_kernel_variant_features(config.variant);
      config.workgroup_size[1] = config.workgroup_size[2] = 1;
      kiln_status_t fit = kiln_kernel_coopmat_tiling_apply(tiling, caps, &config);
      if (!fit) {
        fit = kiln_kernel_config_set_spec(&config, KILN_SPEC_COOPMAT_B_KMAJOR, s->trans_b);
      }
      if (fit) {
        printf("| %-32s | %-26s | skipped: %s\n", s->name, label, kiln_status_message(fit));
        kiln_status_free(fit);
        continue;
      }
      status = coop_run(device, s, &config, label, buffers, a, b, NULL, 0, failures);
      // Beside it, an experimental build of the same tiling ("X16" rows).
      size_t word_count = 0;
      uint32_t* words = f16 && !status ? coop_experiment_spirv(tiling, &word_count) : NULL;
      if (words) {
        label[0] = 'X';
        kiln_status_t x =
            coop_run(device, s, &config, label, buffers, a, b, words, word_count, failures);
        free(words);
        if (x) {  // a diagnostic: reported, not fatal
          printf("| %-32s | %-26s | error: %s\n", s->name, label, kiln_status_message(x));
          kiln_status_free(x);
        }
      }
    }
    for (int i = 0; i < 5; ++i) kiln_hal_buffer_release(buffers[i]);
  }
  free(ha);
  free(hb);
  free(a);
  free(b);
  return status;
}

kiln_status_t kiln_bench_coopmat_sweep(kiln_hal_device_t* device, double max_gflop,
                                       const char* only, int* out_failures) {
  *out_failures = 0;
  const kiln_hal_device_info_t* info = kiln_hal_device_info(device);
  kiln_kernel_arch_caps_t caps = {
      .subgroup_size = info->limits.subgroup_size,
      .max_workgroup_invocations = info->limits.max_workgroup_invocations,
      .max_shared_memory_bytes = info->limits.max_shared_memory_bytes,
      .fp16_storage = (info->features & KILN_TARGET_FEATURE_STORAGE_16BIT) != 0,
      .fp16_arithmetic = (info->features & KILN_TARGET_FEATURE_FP16) != 0,
      .cooperative_matrix = (info->features & KILN_TARGET_FEATURE_COOPERATIVE_MATRIX) != 0,
      .arch = NULL,
  };
  if (!caps.fp16_storage) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "--coopmat: device '%s' lacks 16-bit storage", info->name);
  }
  const bool coop = caps.cooperative_matrix && caps.fp16_arithmetic;
  if (!coop) {
    // The check shapes on the fallback, then the refusal.
    caps.cooperative_matrix = false;
    printf("device %s lacks cooperative matrix: gemm_f16 (the fallback) on the check shapes "
           "only\n\n",
           info->name);
  }
  printf("gemm_coopmat sweep on %s-%s-%s (%s): subgroups MxN x 16x16 tiles MxN per subgroup, "
         "BK; * = the table's row for '%s'; median of the sweep's repetitions, GPU times from "
         "%s\n\n",
         info->triple.arch, info->triple.product, info->triple.os, info->name, info->triple.arch,
         info->timestamps ? "timestamps" : "wall clock");
  printf("| %-32s | %-26s | %10s | %8s | %-12s |\n", "shape (m x n, k)", "build, tiling",
         "median ms", "TFLOP/s", "check");
  printf("|----------------------------------|----------------------------|------------|"
         "----------|--------------|\n");
  kiln_status_t status = kiln_ok_status();
  static const char* const kProbes[] = {"peak.spv",     "peak_loads.spv",
                                         "peak_2x2.spv", "peak_loads_2x2.spv",
                                         "peak_4x4.spv", "peak_loads_4x4.spv"};
  for (size_t i = 0; coop && !status && i < sizeof(kProbes) / sizeof(kProbes[0]); ++i) {
    status = coop_peak(device, kProbes[i]);
  }
  for (size_t i = 0; i < sizeof(kCoopShapes) / sizeof(kCoopShapes[0]) && !status; ++i) {
    const coop_shape_t* s = &kCoopShapes[i];
    if (!coop && strncmp(s->name, "check", 5) != 0) continue;
    if (only && strncmp(s->name, only, strlen(only)) != 0) continue;
    if (2.0 * s->m * s->n * (double)s->k * coop_batch(s) > max_gflop * 1e9) {
      printf("| %-32s | (over --max-gflop=%g)\n", s->name, max_gflop);
      continue;
    }
    status = coop_shape(device, s, &caps, info->triple.arch, out_failures);
  }
  if (!status && !coop) {
    status = kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                              "--coopmat: device '%s' lacks cooperative matrix "
                              "(VK_NV_cooperative_matrix 16x16x16 f16 -> f32 with shaderFloat16; "
                              "see --dump_devices): only the fallback ran",
                              info->name);
  }
  return status;
}
