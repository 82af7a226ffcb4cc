// gemm_coopmat (cooperative-matrix GEMM, f16 x f16 -> f32) through the HAL
// (its SPIR-V validation, local robust clamp and variant selection), and
// the fp16 gemm it falls back to, against the C reference in double.
//
// On a device without cooperative matrix (lavapipe) the coopmat tests
// check the refusal (config and HAL variant selection name the feature)
// and print "SKIPPED: <device> lacks cooperative matrix" for the runs; on
// one with it (H100/H200: scripts/gpu-check.sh spirv_gpu_hal) they run
// every M, N, K in {1, 15, 16, 17, 127, 129, 1000} crossed by layout, and
// 4096^3 at sampled outputs.
// Tolerance per output, with S = sum_k |a_ik b_kj|: inputs are fp16
// values (exact in f16 and f32), so products are exact and only the fp32
// sum rounds: |err| <= K * 2^-23 * S + 1e-6; where the f32 build rounds
// arbitrary f32 inputs to f16 itself, + 2^-9 * S (each input within one
// fp16 ulp, either rounding mode); an f16 output adds 2^-10 * |ref|.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "kiln/compiler/kernels_gemm_tuning.h"
#include "kiln_test.h"

static bool have_coopmat(void) {
  const kiln_kernel_arch_caps_t* caps = kiln_vk_harness_caps(gpu_harness());
  if (caps->cooperative_matrix && caps->fp16_arithmetic) return true;
  fprintf(stderr, "SKIPPED: device '%s' lacks cooperative matrix (VK_NV_cooperative_matrix "
                  "16x16x16 f16 -> f32 with shaderFloat16): coopmat runs not checked here\n",
          kiln_vk_harness_device_name(gpu_harness()));
  return false;
}

typedef struct coop_case_t {
  uint32_t m, n, k;
  bool trans_a, trans_b;
  bool epilogue;  // bias per column + residual + relu
  // gemm_coopmat's B staging (KILN_SPEC_COOPMAT_B_KMAJOR): the fast path
  // when it matches trans_b, element-wise loads when not; right either way.
  bool b_kmajor;
  const kiln_kernel_coopmat_tiling_t* tiling;  // NULL: the device's table row
  bool b_quads;  // KILN_SPEC_COOPMAT_B_QUADS: n-major runs as two quads
} coop_case_t;

// One output of the case in double and its S = sum |a b| (row i, column j).
static double coop_ref_at(const coop_case_t* c, const float* a, const float* b,
                          const float* bias, const float* residual, size_t i, size_t j,
                          double* out_abs) {
  double sum = 0, abs_sum = 0;
  for (size_t p = 0; p < c->k; ++p) {
    double av = c->trans_a ? a[p * c->m + i] : a[i * c->k + p];
    double bv = c->trans_b ? b[j * c->k + p] : b[p * c->n + j];
    sum += av * bv;
    abs_sum += fabs(av * bv);
  }
  *out_abs = abs_sum;
  if (c->epilogue) {
    sum += bias[j] + residual[i * c->n + j];
    sum = sum > 0 ? sum : 0;
  }
  return sum;
}

static float* coop_halves(size_t count, uint32_t seed, bool exact, uint16_t** out_half) {
  float* values = gpu_random_alloc(count ? count : 1, seed, -1.0f, 1.0f);
  uint16_t* half = malloc((count ? count : 1) * 2 + 16);
  if (!half) abort();
  for (size_t i = 0; i < count; ++i) {
    half[i] = gpu_float_to_half(values[i]);
    if (exact) values[i] = gpu_half_to_float(half[i]);
  }
  *out_half = half;
  return values;
}

// Runs `variant` of `kernel` (gemm_coopmat, or gemm for the fallback) on
// the case and checks every output (or 4096 sampled ones for big cases).
static void coop_run(kiln_kernel_id_t kernel, kiln_kernel_variant_t variant, const coop_case_t* c,
                     bool exact_inputs) {
  const bool f16 = variant == KILN_KERNEL_VARIANT_FP16_STORAGE;
  const size_t a_count = (size_t)c->m * c->k, b_count = (size_t)c->k * c->n;
  const size_t c_count = (size_t)c->m * c->n;
  uint16_t *ha, *hb, *hbias, *hres;
  float* a = coop_halves(a_count, 11 + c->m, exact_inputs || f16, &ha);
  float* b = coop_halves(b_count, 13 + c->n, exact_inputs || f16, &hb);
  float* bias = coop_halves(c->n, 17, true, &hbias);
  float* residual = coop_halves(c_count, 19, true, &hres);
  void* out = malloc(c_count * 4 + 16);
  float* got = gpu_alloc(c_count);
  if (!out) abort();
  kiln_kernel_config_t config = gpu_config(kernel, f16 ? KILN_KERNEL_STORAGE_FP16
                                                       : KILN_KERNEL_STORAGE_FP32);
  KILN_EXPECT_EQ(config.variant, variant);
  if (kernel == KILN_KERNEL_GEMM_COOPMAT) {
    if (c->tiling) {
      KILN_EXPECT_OK(kiln_kernel_coopmat_tiling_apply(
          c->tiling, kiln_vk_harness_caps(gpu_harness()), &config));
    }
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_COOPMAT_B_KMAJOR, c->b_kmajor));
    if (c->b_quads) {
      KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_COOPMAT_B_QUADS, 1));
    }
  }
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_ACTIVATION,
                                             c->epilogue ? KILN_ACT_RELU : KILN_ACT_NONE));
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_HAS_BIAS, c->epilogue));
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_HAS_RESIDUAL, c->epilogue));
  kiln_kernel_gemm_params_t p;
  memset(&p, 0, sizeof(p));
  p.m = c->m, p.n = c->n, p.k = c->k, p.batch = 1;
  p.a_row_stride = c->trans_a ? 1 : c->k;
  p.a_col_stride = c->trans_a ? c->m : 1;
  p.b_row_stride = c->trans_b ? 1 : c->n;
  p.b_col_stride = c->trans_b ? c->k : 1;
  p.c_row_stride = c->n, p.c_batch_stride = (uint32_t)c_count;
  p.bias_col_stride = 1;
  p.residual_row_stride = c->n, p.residual_batch_stride = (uint32_t)c_count;
  p.scale = 1.0f;
  uint32_t grid[3];
  KILN_ASSERT_OK(kiln_kernel_grid_gemm(&config, &p, grid));
  const size_t e = f16 ? 2 : 4;
  gpu_arg_t args[5] = {{f16 ? (const void*)ha : a, a_count * e},
                       {f16 ? (const void*)hb : b, b_count * e},
                       {f16 ? (const void*)hbias : bias, c->n * e},
                       {f16 ? (const void*)hres : residual, c_count * e},
                       {NULL, c_count * e}};
  gpu_run(kernel, variant, &config, &p, sizeof(p), args, 5, 4, out, c_count * e, grid);
  for (size_t i = 0; i < c_count; ++i) {
    got[i] = f16 ? gpu_half_to_float(((const uint16_t*)out)[i]) : ((const float*)out)[i];
  }
  const bool full = (double)c_count * c->k < 5e7;
  const size_t samples = full ? c_count : 4096;
  size_t bad = 0, worst_at = 0;
  double worst = -1, worst_want = 0;
  uint32_t state = 99;
  for (size_t s = 0; s < samples; ++s) {
    state = state * 1664525u + 1013904223u;
    size_t at = full ? s : state % c_count;
    double abs_sum = 0;
    double want = coop_ref_at(c, a, b, bias, residual, at / c->n, at % c->n, &abs_sum);
    double limit = c->k * ldexp(1.0, -23) * abs_sum + 1e-6 +
                   (exact_inputs || f16 ? 0.0 : ldexp(1.0, -9) * abs_sum) +
                   (f16 ? ldexp(1.0, -10) * fabs(want) + 1e-7 : 0.0);
    if (c->epilogue) limit += 1e-6 * (1 + fabs(want));
    double error = fabs((double)got[at] - want);
    if (!(error <= limit)) {
      ++bad;
      if (!(error - limit <= worst)) {
        worst = isnan(error) ? INFINITY : error - limit;
        worst_at = at;
        worst_want = want;
      }
    }
  }
  if (bad) {
    char tiling[64] = "table tiling";
    if (c->tiling) {
      snprintf(tiling, sizeof(tiling), "%ux%u x %ux%u BK%u", c->tiling->warps_m,
               c->tiling->warps_n, c->tiling->tiles_m, c->tiling->tiles_n, c->tiling->bk);
    }
    KILN_ADD_FAILURE("%s%s m %u n %u k %u%s%s%s (%s%s): %zu of %zu outputs outside the "
                     "bound; worst [%zu]: got %.9g want %.9g",
                     kiln_kernel_desc(kernel)->name, f16 ? "_f16" : "", c->m, c->n, c->k,
                     c->trans_a ? " transA" : "", c->trans_b ? " transB" : "",
                     c->epilogue ? " bias+residual+relu" : "", tiling,
                     c->b_kmajor ? ", B k-major" : (c->b_quads ? ", B by quads" : ""), bad,
                     samples, worst_at, got[worst_at],
                     worst_want);
  }
  free(ha);
  free(hb);
  free(hbias);
  free(hres);
  free(a);
  free(b);
  free(bias);
  free(residual);
  free(out);
  free(got);
}

// Without cooperative matrix the config refuses, naming it; with it, the
// config asks for it.
KILN_TEST(GpuCoopmatTest, ConfigNamesTheFeature) {
  const kiln_kernel_arch_caps_t* caps = kiln_vk_harness_caps(gpu_harness());
  kiln_kernel_config_t config;
  kiln_status_t status = kiln_kernel_config_select(KILN_KERNEL_GEMM_COOPMAT, caps,
                                                   KILN_KERNEL_STORAGE_FP32, &config);
  if (!(caps->cooperative_matrix && caps->fp16_arithmetic)) {
    KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION, "cooperative matrix", status);
    return;
  }
  KILN_ASSERT_OK(status);
  KILN_EXPECT_TRUE((config.required_features & KILN_FORMAT_FEATURE_COOPERATIVE_MATRIX) != 0);
  KILN_EXPECT_TRUE((config.required_features & KILN_FORMAT_FEATURE_FP16) != 0);
}

// A coopmat build handed to the HAL on a device without the feature is
// refused by variant selection, never run.
KILN_TEST(GpuCoopmatTest, HalRefusesOnDevicesWithout) {
  const kiln_kernel_arch_caps_t* caps = kiln_vk_harness_caps(gpu_harness());
  if (caps->cooperative_matrix && caps->fp16_arithmetic) return;  // the runs below check it
  kiln_kernel_arch_caps_t hopper;
  KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch("hopper", &hopper));
  kiln_kernel_config_t config;
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMM_COOPMAT, &hopper,
                                           KILN_KERNEL_STORAGE_FP32, &config));
  kiln_kernel_spirv_t spirv;
  KILN_ASSERT_OK(kiln_kernel_get_config_spirv(&config, &spirv));
  kiln_vk_harness_t* h = gpu_harness();
  kiln_vk_buffer_t* buffers[5] = {0};
  for (int i = 0; i < 5; ++i) KILN_ASSERT_OK(kiln_vk_buffer_create(h, 64, NULL, &buffers[i]));
  kiln_kernel_gemm_params_t p;
  memset(&p, 0, sizeof(p));
  p.m = p.n = p.k = p.batch = 1;
  const uint32_t grid[3] = {1, 1, 1};
  kiln_status_t status = kiln_vk_harness_dispatch(h, &spirv, &config, &p, sizeof(p), buffers, 5,
                                                  grid);
  // "no variant runs on device ... device lacks cooperative_matrix".
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_NOT_FOUND, "lacks cooperative_matrix", status);
  for (int i = 0; i < 5; ++i) kiln_vk_buffer_destroy(h, buffers[i]);
}

// What a device without cooperative matrix runs instead: gemm's fp16
// build (f16 buffers, fp32 arithmetic), same ABI.
KILN_TEST(GpuCoopmatTest, F16FallbackMatchesReference) {
  if (!kiln_vk_harness_caps(gpu_harness())->fp16_storage) {
    KILN_ADD_FAILURE("device lacks 16-bit storage; the fp16 fallback cannot be checked");
    return;
  }
  const coop_case_t cases[] = {
      {17, 15, 129, false, false, true}, {129, 127, 16, false, true, false},
      {1, 100, 260, false, true, true},  {64, 48, 33, true, false, false},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    coop_run(KILN_KERNEL_GEMM, KILN_KERNEL_VARIANT_FP16_STORAGE, &cases[i], true);
  }
}

KILN_TEST(GpuCoopmatTest, EdgeSizesMatchReference) {
  if (!have_coopmat()) return;
  const uint32_t sizes[] = {1, 15, 16, 17, 127, 129, 1000};
  const size_t n_sizes = sizeof(sizes) / sizeof(sizes[0]);
  size_t runs = 0;
  for (size_t im = 0; im < n_sizes; ++im) {
    for (size_t in = 0; in < n_sizes; ++in) {
      for (size_t ik = 0; ik < n_sizes; ++ik) {
        // Every size triple once in f32 and f16; layouts and the epilogue
        // rotate through the triples.
        const size_t r = im + in + ik;
        // B's staging follows its layout but in one triple of 5.
        const bool trans_b = r % 2 == 1;
        coop_case_t c = {sizes[im], sizes[in], sizes[ik], r % 4 == 3,
                         trans_b,   r % 3 == 0, trans_b != (r % 5 == 4), NULL};
        coop_run(KILN_KERNEL_GEMM_COOPMAT, KILN_KERNEL_VARIANT_FP32, &c, true);
        coop_run(KILN_KERNEL_GEMM_COOPMAT, KILN_KERNEL_VARIANT_FP16_STORAGE, &c, true);
        runs += 2;
      }
    }
  }
  KILN_EXPECT_EQ(runs, 2 * n_sizes * n_sizes * n_sizes);
}

// B n-major with rows that start 4-aligned but not 8 (a 14x14 image's
// 196 columns: KILN_SPEC_COOPMAT_B_QUADS loads each run of 8 as two
// quads), and 8-aligned rows under the same spec, across the tilings,
// with the epilogue and without, k whole and not.
KILN_TEST(GpuCoopmatTest, QuadAlignedRowsMatchReference) {
  if (!have_coopmat()) return;
  static const uint32_t kShapes[][3] = {
      {256, 196, 1024}, {64, 196, 64}, {17, 52, 40}, {130, 20, 257}, {1024, 196, 256},
      {48, 996, 96},    {33, 200, 72}};
  for (size_t t = 0; t <= kiln_kernel_coopmat_candidate_count(); ++t) {
    const kiln_kernel_coopmat_tiling_t* tiling =
        t ? kiln_kernel_coopmat_candidate(t - 1) : NULL;
    for (size_t i = 0; i < sizeof(kShapes) / sizeof(kShapes[0]); ++i) {
      coop_case_t c = {kShapes[i][0], kShapes[i][1], kShapes[i][2], false, false,
                       (i + t) % 2 == 0, false, tiling, true};
      coop_run(KILN_KERNEL_GEMM_COOPMAT, KILN_KERNEL_VARIANT_FP16_STORAGE, &c, true);
    }
  }
}

// fp32 inputs that fp16 cannot hold: the f32 build rounds while staging.
KILN_TEST(GpuCoopmatTest, F32InputsRoundedToF16) {
  if (!have_coopmat()) return;
  const coop_case_t c = {129, 130, 257, false, true, true, true, NULL};
  coop_run(KILN_KERNEL_GEMM_COOPMAT, KILN_KERNEL_VARIANT_FP32, &c, false);
}

KILN_TEST(GpuCoopmatTest, Matmul4096Sampled) {
  if (!have_coopmat()) return;
  const coop_case_t c = {4096, 4096, 4096, false, false, false, false, NULL};
  coop_run(KILN_KERNEL_GEMM_COOPMAT, KILN_KERNEL_VARIANT_FP16_STORAGE, &c, true);
  coop_run(KILN_KERNEL_GEMM_COOPMAT, KILN_KERNEL_VARIANT_FP32, &c, true);
  const coop_case_t t = {4096, 4096, 4096, false, true, true, true, NULL};
  coop_run(KILN_KERNEL_GEMM_COOPMAT, KILN_KERNEL_VARIANT_FP16_STORAGE, &t, true);
}

// Every tiling the table or the sweep may pick (kiln_kernel_coopmat_candidate
// holds the table's rows), on sizes around its block (one block and a bit,
// partial k steps) and the odd edges, B in both layouts and stagings.
KILN_TEST(GpuCoopmatTest, EveryCandidateTilingMatchesReference) {
  if (!have_coopmat()) return;
  const kiln_kernel_arch_caps_t* caps = kiln_vk_harness_caps(gpu_harness());
  size_t runs = 0;
  for (size_t t = 0; t < kiln_kernel_coopmat_candidate_count(); ++t) {
    const kiln_kernel_coopmat_tiling_t* tiling = kiln_kernel_coopmat_candidate(t);
    kiln_kernel_config_t probe;
    memset(&probe, 0, sizeof(probe));
    kiln_status_t fit = kiln_kernel_coopmat_tiling_apply(tiling, caps, &probe);
    if (fit) {  // beyond this device's limits: never chosen here
      kiln_status_free(fit);
      continue;
    }
    const uint32_t bm = tiling->warps_m * tiling->tiles_m * 16;
    const uint32_t bn = tiling->warps_n * tiling->tiles_n * 16;
    const coop_case_t cases[] = {
        {bm + 1, bn + 3, 3 * tiling->bk + 5, false, false, true, false, tiling},
        {bm + 1, bn + 3, 3 * tiling->bk + 5, false, true, false, true, tiling},
        {2 * bm, 2 * bn, 4 * tiling->bk, false, true, true, true, tiling},
        {2 * bm, 2 * bn, 4 * tiling->bk, false, false, false, false, tiling},
        {17, 15, 33, true, true, true, false, tiling},
        {129, 1000, 127, false, false, true, true, tiling},
        {1, 129, 1000, false, true, false, true, tiling},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
      coop_run(KILN_KERNEL_GEMM_COOPMAT, KILN_KERNEL_VARIANT_FP16_STORAGE, &cases[i], true);
      coop_run(KILN_KERNEL_GEMM_COOPMAT, KILN_KERNEL_VARIANT_FP32, &cases[i], true);
      runs += 2;
    }
  }
  KILN_EXPECT_GT(runs, 0);
}
