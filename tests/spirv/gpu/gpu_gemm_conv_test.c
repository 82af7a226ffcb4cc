// GEMM and convolution kernels on the test device against tests/spirv/
// reference. Tolerances: fp32 kernels accumulate in fp32 over K terms of
// magnitude <= 1, so atol 1e-4 + rtol 1e-4 against the double reference;
// fp16-storage variants get inputs rounded to fp16 in the reference too and
// an output rounding of 2^-11 relative, so atol 2e-3 + rtol 2e-3.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "kiln/compiler/kernels_gemm_tuning.h"
#include "kiln/compiler/kernels_loops.h"
#include "kiln/compiler/kernels_params.h"
#include "kiln_test.h"
#include "reference/reference.h"

typedef struct gemm_case_t {
  size_t batch, m, n, k;
  bool trans_a, trans_b, a_batched, b_batched;
  int bias;  // 0 none, 1 per row, 2 per column
  bool residual;
  uint32_t act;
  float scale, alpha, beta;
  size_t b_row_pad;  // B (not transposed) rows padded to n + this (default 0)
} gemm_case_t;

// The cpu variants' built-in paths (KILN_SPEC_*_CPU_PATHS): all (a plain
// config), only those of the case's layout (what the bridge records), or
// with a path the layout takes swapped out, where every output must be NaN.
typedef enum paths_mode_t { PATHS_ALL, PATHS_LAYOUT, PATHS_WRONG } paths_mode_t;
static paths_mode_t g_paths = PATHS_ALL;

// Under PATHS_WRONG: every output NaN, none a partial sum; else the reference.
static void expect_result(const char* what, const float* got, const float* want, size_t count,
                          double tol) {
  if (g_paths != PATHS_WRONG) {
    gpu_expect_close(what, got, want, count, tol, tol);
    return;
  }
  size_t numbers = 0;
  for (size_t i = 0; i < count; ++i) numbers += !isnan(got[i]);
  if (numbers) fprintf(stderr, "%s: %zu of %zu outputs are not NaN\n", what, numbers, count);
  KILN_EXPECT_EQ_U64(numbers, 0);
}

// Stores `values` as fp16 bits in `half` and rounds `values` in place.
static uint16_t* to_half(float* values, size_t count) {
  uint16_t* half = malloc((count ? count : 1) * 2);
  if (!half) abort();
  for (size_t i = 0; i < count; ++i) {
    half[i] = gpu_float_to_half(values[i]);
    values[i] = gpu_half_to_float(half[i]);
  }
  return half;
}

static void run_gemm_case(const char* what, const gemm_case_t* c,
                          kiln_kernel_config_t config, bool fp16) {
  size_t a_count = (c->a_batched ? c->batch : 1) * c->m * c->k;
  size_t b_count = (c->b_batched ? c->batch : 1) * c->k * c->n;
  size_t out_count = c->batch * c->m * c->n;
  size_t bias_count = c->bias == 1 ? c->m : c->n;
  float* a = gpu_random_alloc(a_count, 1, -1, 1);
  float* b = gpu_random_alloc(b_count, 2, -1, 1);
  // The kernel's B: rows of n + b_row_pad (the pads poisoned), the
  // reference's the dense b.
  const size_t b_row = c->n + (c->trans_b ? 0 : c->b_row_pad);
  const size_t b_rows = (c->b_batched ? c->batch : 1) * c->k;
  float* b_kernel = b;
  size_t b_kernel_count = b_count;
  if (b_row != c->n) {
    b_kernel_count = b_rows * b_row;
    b_kernel = gpu_alloc(b_kernel_count);
    for (size_t r = 0; r < b_rows; ++r) {
      for (size_t j = 0; j < b_row; ++j) b_kernel[r * b_row + j] = j < c->n ? b[r * c->n + j] : NAN;
    }
  }
  float* bias = gpu_random_alloc(bias_count, 3, -1, 1);
  float* residual = gpu_random_alloc(out_count, 4, -1, 1);
  float* want = gpu_alloc(out_count);
  float* got = gpu_alloc(out_count);

  kiln_kernel_gemm_params_t p;
  memset(&p, 0, sizeof(p));
  p.m = (uint32_t)c->m;
  p.n = (uint32_t)c->n;
  p.k = (uint32_t)c->k;
  p.batch = (uint32_t)c->batch;
  p.a_batch_stride = c->a_batched ? (uint32_t)(c->m * c->k) : 0;
  p.a_row_stride = c->trans_a ? 1 : (uint32_t)c->k;
  p.a_col_stride = c->trans_a ? (uint32_t)c->m : 1;
  p.b_batch_stride = c->b_batched ? (uint32_t)(c->k * b_row) : 0;
  p.b_row_stride = c->trans_b ? 1 : (uint32_t)b_row;
  p.b_col_stride = c->trans_b ? (uint32_t)c->k : 1;
  p.c_batch_stride = (uint32_t)(c->m * c->n);
  p.c_row_stride = (uint32_t)c->n;
  p.bias_row_stride = c->bias == 1 ? 1 : 0;
  p.bias_col_stride = c->bias == 2 ? 1 : 0;
  p.residual_batch_stride = (uint32_t)(c->m * c->n);
  p.residual_row_stride = (uint32_t)c->n;
  p.scale = c->scale;
  p.alpha = c->alpha;
  p.beta = c->beta;
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_ACTIVATION, c->act));
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_HAS_BIAS, c->bias != 0));
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_HAS_RESIDUAL, c->residual));
  if (g_paths != PATHS_ALL) {
    KILN_EXPECT_OK(kiln_kernel_config_gemm_cpu_paths(&config, &p));
    uint32_t paths = kiln_kernel_config_spec(&config, KILN_SPEC_GEMM_CPU_PATHS, 0);
    const uint32_t k_paths = paths & (KILN_GEMM_CPU_GEMV | KILN_GEMM_CPU_KN | KILN_GEMM_CPU_NN |
                                      KILN_GEMM_CPU_NU | KILN_GEMM_CPU_SCALAR_K);
    KILN_EXPECT_NE(k_paths, 0u);
    if (g_paths == PATHS_WRONG) paths &= ~(k_paths & (0u - k_paths));  // the first k path
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_CPU_PATHS, paths));
  }
  uint32_t grid[3];
  KILN_ASSERT_OK(kiln_kernel_grid_gemm(&config, &p, grid));

  if (fp16) {
    uint16_t* ha = to_half(a, a_count);
    uint16_t* hb = to_half(b_kernel, b_kernel_count);
    uint16_t* hbias = to_half(bias, bias_count);
    uint16_t* hres = to_half(residual, out_count);
    uint16_t* hout = malloc(out_count * 2);
    if (!hout) abort();
    gpu_arg_t args[5] = {{ha, a_count * 2}, {hb, b_kernel_count * 2}, {hbias, bias_count * 2},
                         {hres, out_count * 2}, {NULL, out_count * 2}};
    gpu_run(config.kernel, KILN_KERNEL_VARIANT_FP16_STORAGE, &config, &p, sizeof(p),
            args, 5, 4, hout, out_count * 2, grid);
    for (size_t i = 0; i < out_count; ++i) got[i] = gpu_half_to_float(hout[i]);
    free(ha);
    free(hb);
    free(hbias);
    free(hres);
    free(hout);
  } else {
    gpu_arg_t args[5] = {{a, a_count * 4}, {b_kernel, b_kernel_count * 4}, {bias, bias_count * 4},
                         {residual, out_count * 4}, {NULL, out_count * 4}};
    gpu_run(config.kernel, config.variant, &config, &p, sizeof(p), args, 5,
            4, got, out_count * 4, grid);
  }
  ref_gemm(c->batch, c->m, c->n, c->k, a, c->a_batched, c->trans_a, b, c->b_batched,
           c->trans_b, c->scale, c->bias ? bias : NULL, c->bias == 1,
           c->residual ? residual : NULL, c->act, c->alpha, c->beta, want);
  expect_result(what, got, want, out_count, fp16 ? 2e-3 : 1e-4);
  if (b_kernel != b) free(b_kernel);
  free(a);
  free(b);
  free(bias);
  free(residual);
  free(want);
  free(got);
}

static const gemm_case_t kGemmCases[] = {
    {1, 1, 1, 1, false, false, true, true, 0, false, KILN_ACT_NONE, 1, 0, 0},
    {1, 37, 53, 29, false, false, true, true, 0, false, KILN_ACT_NONE, 1, 0, 0},
    {1, 64, 64, 64, false, false, true, true, 2, false, KILN_ACT_RELU, 1, 0, 0},
    {3, 19, 70, 33, true, false, true, true, 1, true, KILN_ACT_NONE, 0.5f, 0, 0},
    {2, 40, 17, 100, false, true, false, true, 2, true, KILN_ACT_CLIP, 1, 0, 6},
    {4, 8, 9, 300, true, true, true, false, 0, false, KILN_ACT_GELU, 1, 0, 0},
    // Shapes for gemm_cpu's vec4 paths: GEMV with B transposed (k-contiguous
    // A and B), a 1x1 convolution (B contiguous in n) with residual and
    // per-row bias, n = 49 (scalar B), and a k tail of 3.
    {1, 1, 100, 128, false, true, true, true, 2, false, KILN_ACT_NONE, 1, 0, 0},
    {2, 24, 196, 32, false, false, true, true, 1, true, KILN_ACT_CLIP, 1, 0, 6},
    {1, 20, 49, 40, false, false, true, true, 1, false, KILN_ACT_RELU, 1, 0, 0},
    {2, 13, 36, 7, false, true, false, true, 2, true, KILN_ACT_NONE, 0.5f, 0, 0},
    // gemm_cpu's m == 1 loop: batched, shared B, a k tail, columns past n.
    {3, 1, 70, 67, false, true, true, false, 2, true, KILN_ACT_RELU, 0.5f, 0, 0},
    // gemm_cpu's lanes down m (n < 64 <= m): the n = 49 path with a residual,
    // B transposed with a k tail, and a general layout.
    {1, 72, 49, 44, false, false, true, true, 1, true, KILN_ACT_CLIP, 1, 0, 6},
    {2, 65, 12, 9, false, true, true, true, 2, false, KILN_ACT_NONE, 1, 0, 0},
    {1, 130, 7, 5, true, false, true, true, 0, false, KILN_ACT_RELU, 1, 0, 0},
    // B's rows padded (49 of 52, as Winograd's products at 14x14), so they
    // are neither 16-byte aligned nor does B end on a quad: gemm_cpu's
    // vec4 loops cover none of it, and its k4 range must be empty (it had
    // skipped the first k & ~3 terms: a silent wrong product).
    {2, 20, 49, 40, false, false, true, true, 1, false, KILN_ACT_RELU, 1, 0, 0, 3},
    {1, 72, 49, 44, false, false, true, true, 0, true, KILN_ACT_NONE, 1, 0, 0, 7},
};

// The device's own tiling and every arch's tiling, all run here: a tiling
// picked for an NVIDIA or Mali part is still just a specialization.
KILN_TEST(GpuGemmTest, AllCasesAllArchTilings) {
  const char* arches[] = {NULL, "cpu", "ampere", "valhall", "adreno", "unknown"};
  const kiln_kernel_arch_caps_t* device = kiln_vk_harness_caps(gpu_harness());
  for (size_t a = 0; a < sizeof(arches) / sizeof(arches[0]); ++a) {
    kiln_kernel_arch_caps_t caps = *device;
    if (arches[a]) KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch(arches[a], &caps));
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMM, &caps,
                                             KILN_KERNEL_STORAGE_FP32, &config));
    if (config.workgroup_size[0] * config.workgroup_size[1] > device->max_workgroup_invocations ||
        config.shared_memory_bytes > device->max_shared_memory_bytes) {
      continue;  // that arch's tiling does not fit this device
    }
    for (size_t i = 0; i < sizeof(kGemmCases) / sizeof(kGemmCases[0]); ++i) {
      char what[96];
      snprintf(what, sizeof(what), "gemm case %zu, %s tiling", i,
               arches[a] ? arches[a] : "device");
      run_gemm_case(what, &kGemmCases[i], config, false);
    }
  }
}

// Edge sizes for the register-tiled core: 1, 3, 17, 127, 129, 1000 in
// every position (non-multiples of every block, of 4 and of TK), each
// operand layout (vec4 quads along k, along m/n, and strided scalars).
static const gemm_case_t kEdgeCases[] = {
    {1, 1, 1000, 17, false, false, true, true, 2, false, KILN_ACT_NONE, 1, 0, 0},
    {1, 3, 129, 127, false, true, true, true, 1, true, KILN_ACT_RELU, 1, 0, 0},
    {1, 17, 127, 129, true, false, true, true, 2, true, KILN_ACT_NONE, 0.5f, 0, 0},
    {1, 129, 3, 1000, true, true, true, true, 0, false, KILN_ACT_CLIP, 1, 0, 6},
    {2, 127, 17, 3, false, false, true, false, 1, true, KILN_ACT_NONE, 1, 0, 0},
    {1, 1000, 1, 129, false, true, true, true, 2, false, KILN_ACT_NONE, 1, 0, 0},
    {1, 128, 132, 64, false, false, true, true, 2, true, KILN_ACT_GELU, 1, 0, 0},
};

// A tiling as a config of the fp32 gemm kernel (the shared-memory core),
// or false when it does not fit this device.
static bool tiling_config(kiln_kernel_id_t kernel, const kiln_kernel_gemm_tiling_t* t,
                          kiln_kernel_config_t* config) {
  memset(config, 0, sizeof(*config));
  config->kernel = kernel;
  config->variant = KILN_KERNEL_VARIANT_FP32;
  config->workgroup_size[2] = 1;
  const kiln_kernel_arch_caps_t* device = kiln_vk_harness_caps(gpu_harness());
  kiln_status_t status = kiln_kernel_gemm_tiling_apply(t, device, config);
  if (status) {
    kiln_status_free(status);
    return false;
  }
  KILN_EXPECT_OK(
      kiln_kernel_config_set_spec(config, KILN_SPEC_WORKGROUP_X, config->workgroup_size[0]));
  KILN_EXPECT_OK(
      kiln_kernel_config_set_spec(config, KILN_SPEC_WORKGROUP_Y, config->workgroup_size[1]));
  return true;
}

// The distinct tilings of the tuning table (first) and of the sweep's
// candidates; `table_count` of them come from the table.
static size_t distinct_tilings(kiln_kernel_gemm_tiling_t* out, size_t max, size_t* table_count) {
  size_t count = 0, rows = kiln_kernel_gemm_tuning_count();
  *table_count = 0;
  for (size_t i = 0; i < rows + kiln_kernel_gemm_candidate_count() && count < max; ++i) {
    const kiln_kernel_gemm_tiling_t* t =
        i < rows ? kiln_kernel_gemm_tuning(kiln_kernel_gemm_tuning_arch(i))
                 : kiln_kernel_gemm_candidate(i - rows);
    bool seen = false;
    for (size_t j = 0; j < count; ++j) seen |= memcmp(&out[j], t, sizeof(*t)) == 0;
    if (seen) continue;
    out[count++] = *t;
    if (i < rows) *table_count = count;
  }
  return count;
}

// Every tiling of the table on every edge case, and each candidate of the
// sweep on one of them in turn (every pipeline costs seconds to build on
// llvmpipe); the validation layer checks each pipeline.
KILN_TEST(GpuGemmTest, EveryTuningTilingAtEdgeSizes) {
  kiln_kernel_gemm_tiling_t tilings[64];
  size_t table_count = 0, ran = 0;
  size_t count = distinct_tilings(tilings, 64, &table_count);
  const size_t cases = sizeof(kEdgeCases) / sizeof(kEdgeCases[0]);
  for (size_t i = 0; i < count; ++i) {
    const kiln_kernel_gemm_tiling_t* t = &tilings[i];
    kiln_kernel_config_t config;
    if (!tiling_config(KILN_KERNEL_GEMM, t, &config)) continue;
    ++ran;
    for (size_t c = 0; c < cases; ++c) {
      if (i >= table_count && c != i % cases) continue;
      char what[128];
      snprintf(what, sizeof(what), "gemm edge case %zu, tiling %ux%u x %ux%u TK %u (%s)", c,
               t->wg_x, t->wg_y, t->tm, t->tn, t->tk, i < table_count ? "table" : "candidate");
      run_gemm_case(what, &kEdgeCases[c], config, false);
    }
  }
  KILN_EXPECT_GT(ran, 10u);
}

// The loop-pass model of the core is an upper bound on llvmpipe: a
// reduction as long as the model allows for the `unknown` tiling comes
// back exact (values in {-1, 0, 1}: every partial sum is an integer below
// 2^24). llvmpipe cuts a loop short silently (kernels_loops.h), which
// would drop thousands of terms.
KILN_TEST(GpuGemmTest, LongestReductionTheLoopModelAllows) {
  kiln_kernel_config_t config;
  KILN_ASSERT_TRUE(tiling_config(KILN_KERNEL_GEMM, kiln_kernel_gemm_tuning("unknown"), &config));
  kiln_kernel_gemm_params_t p;
  memset(&p, 0, sizeof(p));
  p.m = 2, p.n = 3, p.batch = 1;
  uint32_t lo = 1, hi = 1u << 20;  // the largest k the model accepts
  while (lo < hi) {
    p.k = lo + (hi - lo + 1) / 2;
    uint32_t grid[3] = {1, 1, 1};
    uint64_t passes = 0;
    KILN_ASSERT_OK(kiln_kernel_loop_passes(&config, &p, grid, &passes));
    if (passes <= KILN_KERNEL_LOOP_PASS_BUDGET) lo = p.k;
    else hi = p.k - 1;
  }
  KILN_EXPECT_GT(lo, 20000u);
  p.k = lo;
  p.a_row_stride = p.k, p.a_col_stride = 1;  // A [2, k], B^T [3, k]
  p.b_row_stride = 1, p.b_col_stride = p.k;
  p.c_batch_stride = 6, p.c_row_stride = 3, p.scale = 1;
  float* a = gpu_alloc(2 * (size_t)p.k);
  float* b = gpu_alloc(3 * (size_t)p.k);
  for (size_t i = 0; i < 2 * (size_t)p.k; ++i) a[i] = (float)((int)(i * 7 % 3) - 1);
  for (size_t i = 0; i < 3 * (size_t)p.k; ++i) b[i] = (float)((int)(i * 5 % 3) - 1);
  float got[6], want[6];
  uint32_t grid[3];
  KILN_ASSERT_OK(kiln_kernel_grid_gemm(&config, &p, grid));
  gpu_arg_t args[5] = {{a, 8 * (size_t)p.k}, {b, 12 * (size_t)p.k}, {NULL, 16}, {NULL, 32},
                       {NULL, 32}};
  gpu_run(KILN_KERNEL_GEMM, config.variant, &config, &p, sizeof(p), args, 5, 4, got, 24, grid);
  ref_gemm(1, 2, 3, p.k, a, false, false, b, false, true, 1, NULL, false, NULL, KILN_ACT_NONE,
           0, 0, want);
  gpu_expect_close("gemm at the model's longest k", got, want, 6, 0, 0);
  free(a);
  free(b);
}

// gemv (one workgroup per 4 * WG_X columns of a row, k slices summed in
// shared memory) at edge sizes: both B layouts (n- and k-contiguous, with
// and without vec4 alignment), strided A, batches, few rows.
static const gemm_case_t kGemvCases[] = {
    {1, 1, 1000, 17, false, false, true, true, 2, false, KILN_ACT_NONE, 1, 0, 0},
    {1, 1, 129, 1000, false, true, true, true, 2, true, KILN_ACT_RELU, 1, 0, 0},
    {1, 1, 3, 127, false, true, true, true, 0, false, KILN_ACT_NONE, 0.5f, 0, 0},
    {1, 1, 17, 3, false, false, true, true, 2, true, KILN_ACT_GELU, 1, 0, 0},
    {1, 1, 1, 1, false, false, true, true, 0, false, KILN_ACT_NONE, 1, 0, 0},
    {3, 1, 127, 129, false, false, true, false, 2, true, KILN_ACT_CLIP, 1, 0, 6},
    {2, 3, 129, 64, true, true, true, true, 1, false, KILN_ACT_NONE, 1, 0, 0},
    {1, 1, 256, 1024, false, true, true, true, 2, false, KILN_ACT_NONE, 1, 0, 0},
};

KILN_TEST(GpuGemmTest, GemvEveryArch) {
  const char* arches[] = {NULL, "hopper", "valhall", "unknown", "cpu"};
  const kiln_kernel_arch_caps_t* device = kiln_vk_harness_caps(gpu_harness());
  for (size_t a = 0; a < sizeof(arches) / sizeof(arches[0]); ++a) {
    kiln_kernel_arch_caps_t caps = *device;
    if (arches[a]) KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch(arches[a], &caps));
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMV, &caps,
                                             KILN_KERNEL_STORAGE_FP32, &config));
    if (config.workgroup_size[0] * config.workgroup_size[1] > device->max_workgroup_invocations ||
        config.shared_memory_bytes > device->max_shared_memory_bytes) {
      continue;
    }
    for (size_t i = 0; i < sizeof(kGemvCases) / sizeof(kGemvCases[0]); ++i) {
      char what[96];
      snprintf(what, sizeof(what), "gemv case %zu, %s config (%s)", i,
               arches[a] ? arches[a] : "device", kiln_kernel_variant_name(config.variant));
      run_gemm_case(what, &kGemvCases[i], config, false);
    }
  }
  if (device->fp16_storage) {
    kiln_kernel_config_t config = gpu_config(KILN_KERNEL_GEMV, KILN_KERNEL_STORAGE_FP16);
    for (size_t i = 0; i < sizeof(kGemvCases) / sizeof(kGemvCases[0]); ++i) {
      char what[64];
      snprintf(what, sizeof(what), "gemv_f16 case %zu", i);
      run_gemm_case(what, &kGemvCases[i], config, true);
    }
  }
}

// gemv's one-slice config for a short k (split-K's sum of its parts,
// kiln_kernel_config_select_shape at k <= KILN_GEMV_SHORT_K), which
// GemvEveryArch's plain configs never take: k below and past its 4-wide
// unroll and past the short-k bound, B rows aligned (quad loads) and not,
// with bias, residual and activation, as the split-K sums run them
// (batch = rows).
static const gemm_case_t kGemvShortKCases[] = {
    {128, 1, 3072, 3, false, false, false, true, 2, false, KILN_ACT_GELU, 1, 0, 0},
    {7, 1, 49, 9, false, false, false, true, 1, true, KILN_ACT_RELU, 1, 0, 0},
    {5, 1, 61, 16, false, false, false, true, 2, true, KILN_ACT_NONE, 0.5f, 0, 0},
    {3, 1, 130, 17, false, false, false, true, 2, true, KILN_ACT_NONE, 1, 0, 0},
    {2, 1, 64, 33, false, false, true, true, 0, false, KILN_ACT_CLIP, 1, 0, 6},
    {1, 1, 5, 1, false, false, false, true, 2, true, KILN_ACT_NONE, 1, 0, 0},
};

KILN_TEST(GpuGemmTest, GemvShortK) {
  const kiln_kernel_arch_caps_t* device = kiln_vk_harness_caps(gpu_harness());
  kiln_kernel_arch_caps_t caps = *device;
  KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch("hopper", &caps));
  for (int f16 = 0; f16 < 2; ++f16) {
    if (f16 && !device->fp16_storage) continue;
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(kiln_kernel_config_select_shape(
        KILN_KERNEL_GEMV, &caps, f16 ? KILN_KERNEL_STORAGE_FP16 : KILN_KERNEL_STORAGE_FP32, 1,
        3072, 3, 128, false, &config));
    KILN_EXPECT_EQ(config.workgroup_size[1], 1u);  // the one-slice config
    if (config.workgroup_size[0] > device->max_workgroup_invocations ||
        config.shared_memory_bytes > device->max_shared_memory_bytes) {
      continue;
    }
    for (size_t i = 0; i < sizeof(kGemvShortKCases) / sizeof(kGemvShortKCases[0]); ++i) {
      char what[64];
      snprintf(what, sizeof(what), "gemv%s short-k case %zu", f16 ? "_f16" : "", i);
      run_gemm_case(what, &kGemvShortKCases[i], config, f16 != 0);
    }
  }
}

// gemv's per-product configs for a longer k on a target that tiles per
// product (kiln_kernel_config_select_shape: k slices by k's steps, column
// quads by n, down to one quad along k and four along n), each case under
// its own config: k below, at and past 256 slices' worth, unaligned k and
// n, B along k (a transposed weight, a squeeze-and-excitation conv's rows)
// and along n, with bias, residual and activation.
static const gemm_case_t kGemvLongKCases[] = {
    {1, 1, 1000, 2048, false, true, true, true, 2, false, KILN_ACT_NONE, 1, 0, 0},
    {1, 1, 48, 1152, false, true, true, true, 2, false, KILN_ACT_SILU, 1, 0, 0},
    {1, 1, 1152, 48, false, true, true, true, 2, true, KILN_ACT_SIGMOID, 1, 0, 0},
    {1, 1, 37, 1030, false, true, true, true, 2, true, KILN_ACT_RELU, 1, 0, 0},
    {1, 1, 10, 18, false, true, true, true, 2, false, KILN_ACT_NONE, 1, 0, 0},
    {1, 1, 1000, 2048, false, false, true, true, 2, true, KILN_ACT_NONE, 1, 0, 0},
    {2, 1, 129, 1031, false, false, true, true, 0, false, KILN_ACT_GELU, 0.5f, 0, 0},
};

KILN_TEST(GpuGemmTest, GemvLongK) {
  const kiln_kernel_arch_caps_t* device = kiln_vk_harness_caps(gpu_harness());
  kiln_kernel_arch_caps_t caps = *device;
  KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch("hopper", &caps));
  for (int f16 = 0; f16 < 2; ++f16) {
    if (f16 && !device->fp16_storage) continue;
    for (size_t i = 0; i < sizeof(kGemvLongKCases) / sizeof(kGemvLongKCases[0]); ++i) {
      const gemm_case_t* c = &kGemvLongKCases[i];
      kiln_kernel_config_t config;
      KILN_ASSERT_OK(kiln_kernel_config_select_shape(
          KILN_KERNEL_GEMV, &caps, f16 ? KILN_KERNEL_STORAGE_FP16 : KILN_KERNEL_STORAGE_FP32,
          c->m, c->n, c->k, c->batch, c->trans_b, &config));
      KILN_EXPECT_GT(config.workgroup_size[1], 1u);
      if (config.workgroup_size[0] * config.workgroup_size[1] >
              device->max_workgroup_invocations ||
          config.shared_memory_bytes > device->max_shared_memory_bytes) {
        continue;
      }
      char what[64];
      snprintf(what, sizeof(what), "gemv%s long-k case %zu (%ux%u)", f16 ? "_f16" : "", i,
               config.workgroup_size[0], config.workgroup_size[1]);
      run_gemm_case(what, c, config, f16 != 0);
    }
  }
}

KILN_TEST(GpuGemmTest, Fp16Storage) {
  if (!kiln_vk_harness_caps(gpu_harness())->fp16_storage) {
    KILN_FAIL("device lacks 16-bit storage; the fp16 variant cannot be checked");
  }
  kiln_kernel_config_t config = gpu_config(KILN_KERNEL_GEMM, KILN_KERNEL_STORAGE_FP16);
  KILN_EXPECT_EQ(config.variant, KILN_KERNEL_VARIANT_FP16_STORAGE);
  for (size_t i = 0; i < sizeof(kGemmCases) / sizeof(kGemmCases[0]); ++i) {
    char what[64];
    snprintf(what, sizeof(what), "gemm_f16 case %zu", i);
    run_gemm_case(what, &kGemmCases[i], config, true);
  }
}

// A 1x1 convolution is a GEMM per image: W [C_out, C_in] x X[n] [C_in, H*W]
// with a per-row bias. Checked against the convolution reference.
KILN_TEST(GpuGemmTest, Conv1x1AsGemm) {
  ref_conv2d_t c = {2, 24, 7, 9, 40, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0};
  size_t hw = c.in_h * c.in_w;
  size_t x_count = c.batch * c.in_channels * hw, out_count = c.batch * c.out_channels * hw;
  float* x = gpu_random_alloc(x_count, 11, -1, 1);
  float* w = gpu_random_alloc(c.out_channels * c.in_channels, 12, -1, 1);
  float* bias = gpu_random_alloc(c.out_channels, 13, -1, 1);
  float* want = gpu_alloc(out_count);
  float* got = gpu_alloc(out_count);
  kiln_kernel_gemm_params_t p;
  KILN_ASSERT_OK(kiln_kernel_params_conv1x1_as_gemm((int64_t)c.batch, (int64_t)c.in_channels,
                                                    (int64_t)hw, (int64_t)c.out_channels, 0,
                                                    0, &p));
  kiln_kernel_config_t config = gpu_config(KILN_KERNEL_GEMM, KILN_KERNEL_STORAGE_FP32);
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_HAS_BIAS, 1));
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_ACTIVATION, KILN_ACT_RELU));
  uint32_t grid[3];
  KILN_ASSERT_OK(kiln_kernel_grid_gemm(&config, &p, grid));
  gpu_arg_t args[5] = {{w, c.out_channels * c.in_channels * 4}, {x, x_count * 4},
                       {bias, c.out_channels * 4}, {NULL, 4}, {NULL, out_count * 4}};
  gpu_run(KILN_KERNEL_GEMM, config.variant, &config, &p, sizeof(p), args, 5, 4,
          got, out_count * 4, grid);
  ref_conv2d(&c, x, w, bias, NULL, KILN_ACT_RELU, 0, 0, want);
  gpu_expect_close("conv 1x1 as gemm", got, want, out_count, 1e-4, 1e-4);
  free(x);
  free(w);
  free(bias);
  free(want);
  free(got);
}

typedef struct conv_case_t {
  ref_conv2d_t c;
  bool bias, residual;
  uint32_t act;
  float alpha, beta;
} conv_case_t;

// The kernel's push constants from the library's builder, whose output
// size must agree with the reference's.
static kiln_kernel_conv2d_params_t conv_params(const ref_conv2d_t* c, size_t out_h,
                                               size_t out_w, float alpha, float beta,
                                               bool transpose) {
  kiln_kernel_conv2d_attrs_t attrs = {
      (int64_t)c->batch,    (int64_t)c->in_channels, (int64_t)c->in_h,
      (int64_t)c->in_w,     (int64_t)c->out_channels, (int64_t)c->groups,
      (int64_t)c->kernel_h, (int64_t)c->kernel_w,    (int64_t)c->stride_h,
      (int64_t)c->stride_w, (int64_t)c->pad_top,     (int64_t)c->pad_left,
      (int64_t)c->pad_bottom, (int64_t)c->pad_right, (int64_t)c->dilation_h,
      (int64_t)c->dilation_w, (int64_t)c->output_pad_h, (int64_t)c->output_pad_w};
  kiln_kernel_conv2d_params_t p;
  memset(&p, 0, sizeof(p));
  KILN_EXPECT_OK(transpose ? kiln_kernel_params_conv_transpose2d(&attrs, alpha, beta, &p)
                           : kiln_kernel_params_conv2d(&attrs, alpha, beta, &p));
  KILN_EXPECT_EQ(p.out_height, out_h);
  KILN_EXPECT_EQ(p.out_width, out_w);
  return p;
}

// Runs conv2d / depthwise / conv_transpose on one case, fp32 or fp16.
// `base`: the config to run (NULL: the device's own).
static void run_conv_case_config(const char* what, kiln_kernel_id_t kernel,
                                 const conv_case_t* k, bool fp16,
                                 const kiln_kernel_config_t* base) {
  const ref_conv2d_t* c = &k->c;
  bool transpose = kernel == KILN_KERNEL_CONV_TRANSPOSE2D;
  size_t out_h = transpose ? ref_conv_transpose2d_out_h(c) : ref_conv2d_out_h(c);
  size_t out_w = transpose ? ref_conv_transpose2d_out_w(c) : ref_conv2d_out_w(c);
  size_t x_count = c->batch * c->in_channels * c->in_h * c->in_w;
  size_t w_count = transpose ? c->in_channels * (c->out_channels / c->groups) * c->kernel_h * c->kernel_w
                             : c->out_channels * (c->in_channels / c->groups) * c->kernel_h * c->kernel_w;
  size_t out_count = c->batch * c->out_channels * out_h * out_w;
  float* x = gpu_random_alloc(x_count, 21, -1, 1);
  float* w = gpu_random_alloc(w_count, 22, -1, 1);
  float* bias = gpu_random_alloc(c->out_channels, 23, -1, 1);
  float* residual = gpu_random_alloc(out_count, 24, -1, 1);
  float* want = gpu_alloc(out_count);
  float* got = gpu_alloc(out_count);
  kiln_kernel_conv2d_params_t p = conv_params(c, out_h, out_w, k->alpha, k->beta, transpose);
  kiln_kernel_config_t config =
      base ? *base
           : gpu_config(kernel, fp16 ? KILN_KERNEL_STORAGE_FP16 : KILN_KERNEL_STORAGE_FP32);
  // conv2d_gemm takes gemm's spec ids; the other conv kernels their own.
  bool gemm_like = kernel == KILN_KERNEL_CONV2D_GEMM;
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(
      &config, gemm_like ? KILN_SPEC_GEMM_ACTIVATION : KILN_SPEC_CONV_ACTIVATION, k->act));
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(
      &config, gemm_like ? KILN_SPEC_GEMM_HAS_BIAS : KILN_SPEC_CONV_HAS_BIAS, k->bias));
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(
      &config, gemm_like ? KILN_SPEC_GEMM_HAS_RESIDUAL : KILN_SPEC_CONV_HAS_RESIDUAL,
      k->residual));
  if (g_paths != PATHS_ALL) {
    const bool depthwise = kernel == KILN_KERNEL_DEPTHWISE_CONV2D;
    KILN_EXPECT_OK(kiln_kernel_config_conv_cpu_paths(&config, &p));
    uint32_t paths = kiln_kernel_config_spec(&config, KILN_SPEC_CONV_CPU_PATHS, 0);
    const uint32_t pair = depthwise ? KILN_CONV_CPU_WIDE3 | KILN_CONV_CPU_TAPS
                                    : KILN_CONV_CPU_ROW8 | KILN_CONV_CPU_TAPS;
    KILN_EXPECT_NE(paths & pair, 0u);
    const uint32_t strides = KILN_CONV_CPU_STRIDE1 | KILN_CONV_CPU_STRIDE2;
    if (g_paths == PATHS_WRONG && depthwise && (paths & KILN_CONV_CPU_WIDE3)) {
      // 3x3 built for a stride the case lacks (depthwise's general path
      // would be right, only slower, so it is not the one left out).
      paths = (paths & ~strides) |
              ((paths & KILN_CONV_CPU_STRIDE1) ? KILN_CONV_CPU_STRIDE2 : KILN_CONV_CPU_STRIDE1);
    } else if (g_paths == PATHS_WRONG && (paths & KILN_CONV_CPU_OWN)) {
      paths &= ~KILN_CONV_CPU_OWN;  // blocks straddling groups
    } else if (g_paths == PATHS_WRONG) {
      paths = (paths ^ pair) | (depthwise ? KILN_CONV_CPU_STRIDE1 : 0);  // the other window path
    }
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_CONV_CPU_PATHS, paths));
  }
  uint32_t grid[3];
  if (kernel == KILN_KERNEL_CONV2D) {
    KILN_ASSERT_OK(kiln_kernel_grid_conv2d(&config, &p, grid));
  } else if (gemm_like) {
    KILN_ASSERT_OK(kiln_kernel_grid_conv2d_gemm(&config, &p, grid));
  } else {
    KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, out_count, grid));
  }
  if (fp16) {
    uint16_t* hx = to_half(x, x_count);
    uint16_t* hw = to_half(w, w_count);
    uint16_t* hb = to_half(bias, c->out_channels);
    uint16_t* hr = to_half(residual, out_count);
    uint16_t* hout = malloc(out_count * 2);
    if (!hout) abort();
    gpu_arg_t args[5] = {{hx, x_count * 2}, {hw, w_count * 2}, {hb, c->out_channels * 2},
                         {hr, out_count * 2}, {NULL, out_count * 2}};
    gpu_run(kernel, KILN_KERNEL_VARIANT_FP16_STORAGE, &config, &p, sizeof(p), args, 5, 4,
            hout, out_count * 2, grid);
    for (size_t i = 0; i < out_count; ++i) got[i] = gpu_half_to_float(hout[i]);
    free(hx);
    free(hw);
    free(hb);
    free(hr);
    free(hout);
  } else {
    gpu_arg_t args[5] = {{x, x_count * 4}, {w, w_count * 4}, {bias, c->out_channels * 4},
                         {residual, out_count * 4}, {NULL, out_count * 4}};
    gpu_run(kernel, config.variant, &config, &p, sizeof(p), args, 5, 4, got,
            out_count * 4, grid);
  }
  if (transpose) {
    ref_conv_transpose2d(c, x, w, k->bias ? bias : NULL, KILN_ACT_NONE, 0, 0, want);
    // The reference has no residual input: add it, then activate.
    for (size_t i = 0; i < out_count; ++i) {
      double v = want[i] + (k->residual ? residual[i] : 0);
      want[i] = (float)ref_activation(k->act, v, k->alpha, k->beta);
    }
  } else {
    ref_conv2d(c, x, w, k->bias ? bias : NULL, k->residual ? residual : NULL, k->act,
               k->alpha, k->beta, want);
  }
  expect_result(what, got, want, out_count, fp16 ? 2e-3 : 1e-4);
  free(x);
  free(w);
  free(bias);
  free(residual);
  free(want);
  free(got);
}

static void run_conv_case(const char* what, kiln_kernel_id_t kernel, const conv_case_t* k,
                          bool fp16) {
  run_conv_case_config(what, kernel, k, fp16, NULL);
}

// {batch, C_in, H, W, C_out, groups, KH, KW, SH, SW, pads t/l/b/r, DH, DW, out pads}
static const conv_case_t kConvCases[] = {
    // ResNet stem shape, scaled down: 7x7 stride 2 pad 3, bias + relu.
    {{1, 3, 20, 20, 8, 1, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 0, 0}, true, false, KILN_ACT_RELU, 0, 0},
    // 3x3 pad 1 with residual + relu (ResNet basic block tail), C_out % 4 != 0.
    {{2, 5, 9, 11, 6, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, true, true, KILN_ACT_RELU, 0, 0},
    // Groups 3 with 2 outputs per group: blocks straddle groups.
    {{1, 6, 8, 8, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, true, false, KILN_ACT_NONE, 0, 0},
    // Dilation 2, asymmetric pads and strides, leaky relu.
    {{1, 4, 13, 10, 9, 1, 3, 2, 2, 1, 2, 0, 1, 1, 2, 2, 0, 0}, false, false, KILN_ACT_LEAKY_RELU, 0.1f, 0},
    // Grouped 1x1 (ShuffleNet-like) with hard swish.
    {{1, 8, 5, 5, 12, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0}, true, false, KILN_ACT_HARD_SWISH, 0, 0},
    // MobileNetV2 stem, scaled down (3x3 stride 2, 3 -> 16): whole vec4
    // stores (64 pixels) with a residual, and 12 channels (a partial block).
    {{2, 3, 16, 16, 16, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0}, true, true, KILN_ACT_CLIP, 0, 6},
    {{1, 3, 15, 17, 12, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0}, true, true, KILN_ACT_CLIP, 0, 6},
    // conv2d_cpu's row path (3 wide, rows of a multiple of 8 outputs): stride
    // 1 with a partial channel block, and a 2x3 kernel dilated 2 down with
    // asymmetric pads.
    {{1, 4, 6, 16, 10, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, true, false, KILN_ACT_NONE, 0, 0},
    {{2, 3, 9, 24, 8, 1, 2, 3, 1, 1, 0, 1, 1, 1, 2, 1, 0, 0}, true, true, KILN_ACT_RELU, 0, 0},
};

KILN_TEST(GpuConvTest, Conv2d) {
  for (size_t i = 0; i < sizeof(kConvCases) / sizeof(kConvCases[0]); ++i) {
    char what[48];
    snprintf(what, sizeof(what), "conv2d case %zu", i);
    run_conv_case(what, KILN_KERNEL_CONV2D, &kConvCases[i], false);
  }
}

// Each CO_BLOCK the kernel supports, not only the one the device gets.
KILN_TEST(GpuConvTest, Conv2dEveryChannelBlock) {
  const conv_case_t* k = &kConvCases[1];
  const uint32_t blocks[] = {1, 2, 4, 8};
  for (size_t b = 0; b < 4; ++b) {
    const ref_conv2d_t* c = &k->c;
    size_t out_h = ref_conv2d_out_h(c), out_w = ref_conv2d_out_w(c);
    size_t x_count = c->batch * c->in_channels * c->in_h * c->in_w;
    size_t w_count = c->out_channels * c->in_channels * 9;
    size_t out_count = c->batch * c->out_channels * out_h * out_w;
    float* x = gpu_random_alloc(x_count, 31, -1, 1);
    float* w = gpu_random_alloc(w_count, 32, -1, 1);
    float* want = gpu_alloc(out_count);
    float* got = gpu_alloc(out_count);
    kiln_kernel_conv2d_params_t p = conv_params(c, out_h, out_w, 0, 0, false);
    // The portable kernel (a Mali config, fp32 variant): CPU-like devices
    // otherwise get conv2d_cpu, whose channel block is fixed at 8.
    kiln_kernel_arch_caps_t caps;
    KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch("valhall", &caps));
    caps.subgroup_arithmetic = false;
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_CONV2D, &caps,
                                             KILN_KERNEL_STORAGE_FP32, &config));
    KILN_EXPECT_EQ(config.variant, KILN_KERNEL_VARIANT_FP32);
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_CONV_CO_BLOCK, blocks[b]));
    uint32_t grid[3];
    KILN_ASSERT_OK(kiln_kernel_grid_conv2d(&config, &p, grid));
    gpu_arg_t args[5] = {{x, x_count * 4}, {w, w_count * 4}, {NULL, 4}, {NULL, 4},
                         {NULL, out_count * 4}};
    gpu_run(KILN_KERNEL_CONV2D, KILN_KERNEL_VARIANT_FP32, &config, &p, sizeof(p), args, 5,
            4, got, out_count * 4, grid);
    ref_conv2d(c, x, w, NULL, NULL, KILN_ACT_NONE, 0, 0, want);
    char what[48];
    snprintf(what, sizeof(what), "conv2d CO_BLOCK %u", blocks[b]);
    gpu_expect_close(what, got, want, out_count, 1e-4, 1e-4);
    free(x);
    free(w);
    free(want);
    free(got);
  }
}

static const conv_case_t kDepthwiseCases[] = {
    // MobileNetV2: 3x3 pad 1, stride 1 and 2, bias + relu6.
    {{1, 16, 14, 14, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, true, false, KILN_ACT_CLIP, 0, 6},
    {{2, 8, 15, 15, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0}, true, true, KILN_ACT_CLIP, 0, 6},
    // Channel multiplier 2, 5x5, dilation 2.
    {{1, 4, 12, 12, 8, 4, 5, 5, 1, 1, 4, 4, 4, 4, 2, 2, 0, 0}, false, false, KILN_ACT_NONE, 0, 0},
    // For depthwise_conv2d_cpu's 3-wide path: multiplier 2, stride 1 x 2,
    // uneven pads, widths that leave partial 8-output blocks.
    {{2, 3, 9, 21, 6, 3, 3, 3, 1, 2, 0, 1, 2, 0, 1, 1, 0, 0}, true, true, KILN_ACT_RELU, 0, 0},
    {{1, 5, 6, 33, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, true, false, KILN_ACT_NONE, 0, 0},
    // The same with inputs that end on a 4-float boundary (vec4 windows).
    {{2, 4, 9, 21, 8, 4, 3, 3, 1, 2, 0, 1, 2, 0, 1, 1, 0, 0}, true, true, KILN_ACT_RELU, 0, 0},
    {{1, 4, 6, 33, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, true, true, KILN_ACT_CLIP, 0, 6},
    {{1, 8, 16, 16, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0}, true, true, KILN_ACT_CLIP, 0, 6},
    // 3 wide but dilated, and 1 wide: the general path.
    {{1, 2, 7, 11, 2, 2, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 0, 0}, false, true, KILN_ACT_NONE, 0, 0},
    // depthwise_conv2d_cpu's 16-output stride-1 items: rows of 40 (vec4
    // stores, a last item of 8), a channel multiplier of 2 on rows of 36,
    // and a 5x3 kernel (the per-output path).
    {{1, 3, 5, 40, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, true, true, KILN_ACT_RELU, 0, 0},
    {{2, 3, 4, 36, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, true, false, KILN_ACT_NONE, 0, 0},
    {{1, 2, 9, 12, 2, 2, 5, 3, 1, 1, 2, 1, 2, 1, 1, 1, 0, 0}, true, false, KILN_ACT_NONE, 0, 0},
    // The sliding row window: stride 2 down, 1 across, 10 output rows (two
    // segments of up to 8); and 17 rows at stride 1 (three segments).
    {{1, 2, 19, 20, 2, 2, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 0, 0}, true, true, KILN_ACT_NONE, 0, 0},
    {{1, 3, 17, 8, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, false, true, KILN_ACT_CLIP, 0, 6},
    {{1, 2, 7, 11, 2, 2, 3, 1, 2, 1, 1, 0, 1, 0, 1, 1, 0, 0}, true, false, KILN_ACT_NONE, 0, 0},
};

KILN_TEST(GpuConvTest, Depthwise) {
  for (size_t i = 0; i < sizeof(kDepthwiseCases) / sizeof(kDepthwiseCases[0]); ++i) {
    char what[48];
    snprintf(what, sizeof(what), "depthwise case %zu", i);
    run_conv_case(what, KILN_KERNEL_DEPTHWISE_CONV2D, &kDepthwiseCases[i], false);
  }
}

static const conv_case_t kTransposeCases[] = {
    // Stride-2 upsampling 4x4 kernel pad 1 (DCGAN-like) with bias + relu.
    {{1, 6, 5, 5, 4, 1, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0}, true, false, KILN_ACT_RELU, 0, 0},
    // Groups 2, 3x3 stride 2 pad 1 output_padding 1, residual.
    {{2, 4, 4, 6, 6, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1}, true, true, KILN_ACT_NONE, 0, 0},
    // Dilation 2, stride 3 x 1, no pads.
    {{1, 3, 4, 5, 2, 1, 2, 3, 3, 1, 0, 0, 0, 0, 2, 2, 0, 0}, false, false, KILN_ACT_NONE, 0, 0},
};

// The cpu variants built with only each case's paths (what the bridge
// records per dispatch), then with a path the case takes left out: NaN.
KILN_TEST(GpuGemmTest, CpuPathsPerLayout) {
  kiln_kernel_arch_caps_t caps;
  KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch("cpu", &caps));
  kiln_kernel_config_t config;
  KILN_ASSERT_OK(
      kiln_kernel_config_select(KILN_KERNEL_GEMM, &caps, KILN_KERNEL_STORAGE_FP32, &config));
  KILN_ASSERT_EQ(config.variant, KILN_KERNEL_VARIANT_CPU);
  const paths_mode_t modes[2] = {PATHS_LAYOUT, PATHS_WRONG};
  for (size_t m = 0; m < 2; ++m) {
    g_paths = modes[m];
    const size_t gemm = sizeof(kGemmCases) / sizeof(kGemmCases[0]);
    const size_t edge = sizeof(kEdgeCases) / sizeof(kEdgeCases[0]);
    for (size_t i = 0; i < gemm + edge; ++i) {
      char what[96];
      snprintf(what, sizeof(what), "gemm_cpu %s paths, case %zu", m ? "wrong" : "layout", i);
      run_gemm_case(what, i < gemm ? &kGemmCases[i] : &kEdgeCases[i - gemm], config, false);
    }
  }
  g_paths = PATHS_ALL;
}

// conv2d_cpu and depthwise_conv2d_cpu compute 8-wide tiles only: a config
// with another channel block or pixel tile (a module config.c did not
// make) writes NaN over every output its grid covers, never leaves one
// unwritten.
KILN_TEST(GpuConvTest, CpuOtherTileWritesNaN) {
  kiln_kernel_arch_caps_t caps;
  KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch("cpu", &caps));
  const uint32_t tiles[][2] = {{4, 8}, {16, 8}, {1, 8}, {8, 4}, {8, 16}};
  g_paths = PATHS_WRONG;  // expect_result: every output NaN
  for (size_t t = 0; t < sizeof(tiles) / sizeof(tiles[0]); ++t) {
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(
        kiln_kernel_config_select(KILN_KERNEL_CONV2D, &caps, KILN_KERNEL_STORAGE_FP32, &config));
    KILN_ASSERT_EQ(config.variant, KILN_KERNEL_VARIANT_CPU);
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_CONV_CO_BLOCK, tiles[t][0]));
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_CONV_TILE_W, tiles[t][1]));
    char what[96];
    snprintf(what, sizeof(what), "conv2d_cpu CO_BLOCK %u TILE_W %u", tiles[t][0], tiles[t][1]);
    run_conv_case_config(what, KILN_KERNEL_CONV2D, &kConvCases[0], false, &config);
  }
  const uint32_t widths[] = {1, 4, 16};
  for (size_t t = 0; t < sizeof(widths) / sizeof(widths[0]); ++t) {
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_DEPTHWISE_CONV2D, &caps,
                                             KILN_KERNEL_STORAGE_FP32, &config));
    KILN_ASSERT_EQ(config.variant, KILN_KERNEL_VARIANT_CPU);
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_CONV_TILE_W, widths[t]));
    char what[96];
    snprintf(what, sizeof(what), "depthwise_conv2d_cpu TILE_W %u", widths[t]);
    run_conv_case_config(what, KILN_KERNEL_DEPTHWISE_CONV2D, &kDepthwiseCases[0], false,
                         &config);
  }
  g_paths = PATHS_ALL;
}

// gemm_cpu computes 8 x 8 tiles only: another TM or TN writes NaN.
KILN_TEST(GpuGemmTest, CpuOtherTileWritesNaN) {
  kiln_kernel_arch_caps_t caps;
  KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch("cpu", &caps));
  const uint32_t tiles[][2] = {{4, 8}, {8, 4}, {16, 16}, {1, 1}};
  g_paths = PATHS_WRONG;  // expect_result: every output NaN
  for (size_t t = 0; t < sizeof(tiles) / sizeof(tiles[0]); ++t) {
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(
        kiln_kernel_config_select(KILN_KERNEL_GEMM, &caps, KILN_KERNEL_STORAGE_FP32, &config));
    KILN_ASSERT_EQ(config.variant, KILN_KERNEL_VARIANT_CPU);
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_TM, tiles[t][0]));
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_TN, tiles[t][1]));
    char what[96];
    snprintf(what, sizeof(what), "gemm_cpu TM %u TN %u", tiles[t][0], tiles[t][1]);
    run_gemm_case(what, &kGemmCases[3], config, false);  // batch 3 of 19 x 70
  }
  g_paths = PATHS_ALL;
}

KILN_TEST(GpuConvTest, CpuPathsPerLayout) {
  kiln_kernel_arch_caps_t caps;
  KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch("cpu", &caps));
  const kiln_kernel_id_t kernels[3] = {KILN_KERNEL_CONV2D, KILN_KERNEL_CONV2D_GEMM,
                                       KILN_KERNEL_DEPTHWISE_CONV2D};
  const paths_mode_t modes[2] = {PATHS_LAYOUT, PATHS_WRONG};
  for (size_t m = 0; m < 2; ++m) {
    g_paths = modes[m];
    for (size_t kn = 0; kn < 3; ++kn) {
      kiln_kernel_config_t config;
      KILN_ASSERT_OK(
          kiln_kernel_config_select(kernels[kn], &caps, KILN_KERNEL_STORAGE_FP32, &config));
      KILN_ASSERT_EQ(config.variant, KILN_KERNEL_VARIANT_CPU);
      const bool depthwise = kernels[kn] == KILN_KERNEL_DEPTHWISE_CONV2D;
      const conv_case_t* cases = depthwise ? kDepthwiseCases : kConvCases;
      const size_t count = depthwise ? sizeof(kDepthwiseCases) / sizeof(kDepthwiseCases[0])
                                     : sizeof(kConvCases) / sizeof(kConvCases[0]);
      for (size_t i = 0; i < count; ++i) {
        char what[96];
        snprintf(what, sizeof(what), "%s %s paths, case %zu", kiln_kernel_desc(kernels[kn])->name,
                 m ? "wrong" : "layout", i);
        run_conv_case_config(what, kernels[kn], &cases[i], false, &config);
      }
    }
  }
  g_paths = PATHS_ALL;
}

KILN_TEST(GpuConvTest, ConvTranspose) {
  for (size_t i = 0; i < sizeof(kTransposeCases) / sizeof(kTransposeCases[0]); ++i) {
    char what[48];
    snprintf(what, sizeof(what), "conv_transpose case %zu", i);
    run_conv_case(what, KILN_KERNEL_CONV_TRANSPOSE2D, &kTransposeCases[i], false);
  }
}

KILN_TEST(GpuConvTest, Fp16StorageVariants) {
  if (!kiln_vk_harness_caps(gpu_harness())->fp16_storage) {
    KILN_FAIL("device lacks 16-bit storage; the fp16 variants cannot be checked");
  }
  run_conv_case("conv2d_f16", KILN_KERNEL_CONV2D, &kConvCases[1], true);
  run_conv_case("depthwise_f16", KILN_KERNEL_DEPTHWISE_CONV2D, &kDepthwiseCases[1], true);
  run_conv_case("conv_transpose_f16", KILN_KERNEL_CONV_TRANSPOSE2D, &kTransposeCases[1], true);
  run_conv_case("conv2d_gemm_f16", KILN_KERNEL_CONV2D_GEMM, &kConvCases[1], true);
}

// ONNX MatMul / Gemm through kiln_kernel_params_matmul: A broadcast over
// the batch, B stored transposed, a row-vector bias, scale 0.5.
KILN_TEST(GpuGemmTest, MatmulParamsHelper) {
  const size_t batch = 3, m = 21, n = 18, k = 40;
  float* a = gpu_random_alloc(m * k, 91, -1, 1);
  float* b = gpu_random_alloc(batch * n * k, 92, -1, 1);
  float* bias = gpu_random_alloc(n, 93, -1, 1);
  float* want = gpu_alloc(batch * m * n);
  float* got = gpu_alloc(batch * m * n);
  kiln_kernel_gemm_params_t p;
  KILN_ASSERT_OK(kiln_kernel_params_matmul(batch, 1, batch, m, n, k, 0, 1, 0.5f, &p));
  kiln_kernel_config_t config = gpu_config(KILN_KERNEL_GEMM, KILN_KERNEL_STORAGE_FP32);
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_HAS_BIAS, 1));
  uint32_t grid[3];
  KILN_ASSERT_OK(kiln_kernel_grid_gemm(&config, &p, grid));
  gpu_arg_t args[5] = {{a, m * k * 4}, {b, batch * n * k * 4}, {bias, n * 4}, {NULL, 4},
                       {NULL, batch * m * n * 4}};
  gpu_run(KILN_KERNEL_GEMM, config.variant, &config, &p, sizeof(p), args, 5, 4, got,
          batch * m * n * 4, grid);
  ref_gemm(batch, m, n, k, a, false, false, b, true, true, 0.5f, bias, false, NULL,
           KILN_ACT_NONE, 0, 0, want);
  gpu_expect_close("matmul helper", got, want, batch * m * n, 1e-4, 1e-4);
  free(a);
  free(b);
  free(bias);
  free(want);
  free(got);
}

// The implicit-GEMM conv on the same cases, plus depthwise shapes (one
// output channel per group) it must also get right.
KILN_TEST(GpuConvTest, Conv2dAsImplicitGemm) {
  for (size_t i = 0; i < sizeof(kConvCases) / sizeof(kConvCases[0]); ++i) {
    char what[48];
    snprintf(what, sizeof(what), "conv2d_gemm case %zu", i);
    run_conv_case(what, KILN_KERNEL_CONV2D_GEMM, &kConvCases[i], false);
  }
  for (size_t i = 0; i < sizeof(kDepthwiseCases) / sizeof(kDepthwiseCases[0]); ++i) {
    char what[48];
    snprintf(what, sizeof(what), "conv2d_gemm depthwise case %zu", i);
    run_conv_case(what, KILN_KERNEL_CONV2D_GEMM, &kDepthwiseCases[i], false);
  }
}


// conv2d_gemm on every tiling of the tuning table (it shares gemm's core).
KILN_TEST(GpuConvTest, ImplicitGemmEveryTuningTiling) {
  kiln_kernel_gemm_tiling_t tilings[64];
  size_t table_count = 0;
  distinct_tilings(tilings, 64, &table_count);
  for (size_t i = 0; i < table_count; ++i) {
    kiln_kernel_config_t config;
    if (!tiling_config(KILN_KERNEL_CONV2D_GEMM, &tilings[i], &config)) continue;
    for (size_t c = 0; c < sizeof(kConvCases) / sizeof(kConvCases[0]); ++c) {
      char what[96];
      snprintf(what, sizeof(what), "conv2d_gemm case %zu, tiling %ux%u x %ux%u TK %u", c,
               tilings[i].wg_x, tilings[i].wg_y, tilings[i].tm, tilings[i].tn, tilings[i].tk);
      run_conv_case_config(what, KILN_KERNEL_CONV2D_GEMM, &kConvCases[c], false, &config);
    }
  }
}

// The occupancy candidates (gemm_occupancy.c: narrow blocks, k split in
// the workgroup) against the C reference, with two more k-split tilings
// that fit small shared memories (KS 2 on 8x8 register tiles, an odd KS 3
// with TM 4 / TN 8). k-split tilings run the edge cases with k = 17 (the
// later slices get no step), k = 1000 and k = 3 (batch 2) and two conv
// cases (k over channels x taps); the others one edge case each (every
// pipeline costs seconds on llvmpipe). Tilings that do not fit the device
// are skipped.
KILN_TEST(GpuGemmTest, OccupancyCandidatesAtEdgeSizes) {
  static const kiln_kernel_gemm_tiling_t kSplitTilings[] = {{4, 4, 8, 8, 8, 2},
                                                            {8, 4, 4, 8, 4, 3}};
  static const size_t kSplitCases[] = {0, 3, 4};
  const size_t cases = sizeof(kEdgeCases) / sizeof(kEdgeCases[0]);
  const size_t conv_cases = sizeof(kConvCases) / sizeof(kConvCases[0]);
  const size_t candidates = kiln_kernel_gemm_occupancy_candidate_count();
  size_t ran = 0, split = 0;
  for (size_t i = 0; i < candidates + 2; ++i) {
    const kiln_kernel_gemm_tiling_t* t =
        i < candidates ? kiln_kernel_gemm_occupancy_candidate(i) : &kSplitTilings[i - candidates];
    const uint32_t ks = kiln_kernel_gemm_tiling_ks(t);
    kiln_kernel_config_t config;
    if (!tiling_config(KILN_KERNEL_GEMM, t, &config)) continue;
    ++ran;
    split += ks > 1;
    for (size_t j = 0; j < (ks > 1 ? 3 : 1); ++j) {
      const size_t c = ks > 1 ? kSplitCases[j] : i % cases;
      char what[128];
      snprintf(what, sizeof(what), "gemm edge case %zu, occupancy tiling %zu (%ux%u x %ux%u "
               "TK %u KS %u)", c, i, t->wg_x, t->wg_y, t->tm, t->tn, t->tk, ks);
      run_gemm_case(what, &kEdgeCases[c], config, false);
    }
    if (ks == 1 || !tiling_config(KILN_KERNEL_CONV2D_GEMM, t, &config)) continue;
    for (size_t c = i % conv_cases, n = 0; n < 2; ++n, c = (c + 1) % conv_cases) {
      char what[128];
      snprintf(what, sizeof(what), "conv2d_gemm case %zu, occupancy tiling %zu (KS %u)", c, i,
               ks);
      run_conv_case_config(what, KILN_KERNEL_CONV2D_GEMM, &kConvCases[c], false, &config);
    }
  }
  KILN_EXPECT_GE(ran, 6u);
  KILN_EXPECT_GE(split, 3u);
}
