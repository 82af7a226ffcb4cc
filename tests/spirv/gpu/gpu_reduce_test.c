// Pooling, reductions, softmax and normalization on the test device against
// tests/spirv/reference, for the fp32 build and (where the device has
// subgroup arithmetic) the subgroup build. Tolerances: sums of up to ~1000
// values in [-1, 1] in fp32 with a different order than the reference:
// atol 1e-4 + rtol 1e-4; max/min and pooling max are exact.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "kiln/compiler/kernels_params.h"
#include "kiln_test.h"
#include "reference/reference.h"

// The variants of `kernel` this device can run: fp32, and subgroup if both
// built and supported.
static size_t runnable_variants(kiln_kernel_id_t kernel, kiln_kernel_variant_t out[2]) {
  size_t n = 0;
  out[n++] = KILN_KERNEL_VARIANT_FP32;
  const kiln_kernel_desc_t* desc = kiln_kernel_desc(kernel);
  if ((desc->variant_mask & (1u << KILN_KERNEL_VARIANT_SUBGROUP)) &&
      kiln_vk_harness_caps(gpu_harness())->subgroup_arithmetic) {
    out[n++] = KILN_KERNEL_VARIANT_SUBGROUP;
  }
  return n;
}

typedef struct axis_case_t {
  size_t outer, size, inner;
} axis_case_t;

static const axis_case_t kAxisCases[] = {
    {1, 1, 1}, {7, 1000, 1}, {3, 17, 5}, {2, 64, 3}, {1, 3, 1}, {100, 49, 1},
};

KILN_TEST(GpuReduceTest, AllOpsAllShapes) {
  const char* names[] = {"sum", "mean", "max", "min", "sum_abs", "sum_square",
                         "l2", "sqrt_sum", "log_sum", "log_sum_exp", "prod"};
  KILN_ASSERT_EQ(sizeof(names) / sizeof(names[0]), KILN_REDUCE_COUNT);
  kiln_kernel_variant_t variants[2];
  size_t variant_count = runnable_variants(KILN_KERNEL_REDUCE, variants);
  for (size_t v = 0; v < variant_count; ++v) {
    for (uint32_t op = 0; op < KILN_REDUCE_COUNT; ++op) {
      for (size_t s = 0; s < sizeof(kAxisCases) / sizeof(kAxisCases[0]); ++s) {
        const axis_case_t* c = &kAxisCases[s];
        size_t in_count = c->outer * c->size * c->inner, out_count = c->outer * c->inner;
        // sqrt/log of a sum: positive values (a sum near 0 is ill-conditioned).
        bool positive = op == KILN_REDUCE_SQRT_SUM || op == KILN_REDUCE_LOG_SUM;
        float* x = gpu_random_alloc(in_count, 70 + (uint32_t)s, positive ? 0.01f : -1, 1);
        float* want = gpu_alloc(out_count);
        float* got = gpu_alloc(out_count);
        kiln_kernel_reduce_params_t p = {(uint32_t)c->outer, (uint32_t)c->size,
                                         (uint32_t)c->inner};
        kiln_kernel_config_t config = gpu_config(KILN_KERNEL_REDUCE, KILN_KERNEL_STORAGE_FP32);
        KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_REDUCE_OP, op));
        uint32_t grid[3];
        KILN_ASSERT_OK(kiln_kernel_grid_rows(&config, out_count, grid));
        gpu_arg_t args[2] = {{x, in_count * 4}, {NULL, out_count * 4}};
        gpu_run(KILN_KERNEL_REDUCE, variants[v], &config, &p, sizeof(p), args, 2, 1, got,
                out_count * 4, grid);
        ref_reduce(op, c->outer, c->size, c->inner, x, want);
        char what[96];
        snprintf(what, sizeof(what), "reduce %s [%zu,%zu,%zu] %s", names[op], c->outer,
                 c->size, c->inner, kiln_kernel_variant_name(variants[v]));
        gpu_expect_close(what, got, want, out_count, 1e-4, 1e-4);
        free(x);
        free(want);
        free(got);
      }
    }
  }
}

// Global average pooling is a mean over H*W per (n, c).
KILN_TEST(GpuReduceTest, GlobalAveragePool) {
  const size_t n = 2, c = 32, hw = 7 * 7;
  float* x = gpu_random_alloc(n * c * hw, 80, -1, 1);
  float* want = gpu_alloc(n * c);
  float* got = gpu_alloc(n * c);
  ref_pool2d_t pool = {n * c, 7, 7, 7, 7, 1, 1, 0, 0, 0, 0, 1, 1, false};
  ref_avg_pool2d(&pool, x, want);
  // GlobalAveragePool is ReduceMean over axes {2, 3} of NCHW.
  const int64_t dims[] = {(int64_t)n, (int64_t)c, 7, 7}, axes[] = {2, 3};
  kiln_kernel_reduce_params_t p;
  KILN_ASSERT_OK(kiln_kernel_params_axes(dims, 4, axes, 2, &p));
  KILN_EXPECT_EQ(p.outer, n * c);
  kiln_kernel_config_t config = gpu_config(KILN_KERNEL_REDUCE, KILN_KERNEL_STORAGE_FP32);
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_REDUCE_OP, KILN_REDUCE_MEAN));
  uint32_t grid[3];
  KILN_ASSERT_OK(kiln_kernel_grid_rows(&config, n * c, grid));
  gpu_arg_t args[2] = {{x, n * c * hw * 4}, {NULL, n * c * 4}};
  gpu_run(KILN_KERNEL_REDUCE, config.variant, &config, &p, sizeof(p), args, 2, 1, got,
          n * c * 4, grid);
  gpu_expect_close("global average pool", got, want, n * c, 1e-5, 1e-5);
  free(x);
  free(want);
  free(got);
}

KILN_TEST(GpuReduceTest, SoftmaxAndLogSoftmax) {
  kiln_kernel_variant_t variants[2];
  size_t variant_count = runnable_variants(KILN_KERNEL_SOFTMAX, variants);
  for (size_t v = 0; v < variant_count; ++v) {
    for (int log_softmax = 0; log_softmax < 2; ++log_softmax) {
      for (size_t s = 0; s < sizeof(kAxisCases) / sizeof(kAxisCases[0]); ++s) {
        const axis_case_t* c = &kAxisCases[s];
        size_t count = c->outer * c->size * c->inner;
        // A wide range checks the max subtraction (exp(80) overflows fp32).
        float* x = gpu_random_alloc(count, 90 + (uint32_t)s, -80, 80);
        float* want = gpu_alloc(count);
        float* got = gpu_alloc(count);
        kiln_kernel_softmax_params_t p = {(uint32_t)c->outer, (uint32_t)c->size,
                                          (uint32_t)c->inner};
        kiln_kernel_config_t config = gpu_config(KILN_KERNEL_SOFTMAX, KILN_KERNEL_STORAGE_FP32);
        KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_SOFTMAX_LOG,
                                                   (uint32_t)log_softmax));
        uint32_t grid[3];
        KILN_ASSERT_OK(kiln_kernel_grid_rows(&config, c->outer * c->inner, grid));
        gpu_arg_t args[2] = {{x, count * 4}, {NULL, count * 4}};
        gpu_run(KILN_KERNEL_SOFTMAX, variants[v], &config, &p, sizeof(p), args, 2, 1, got,
                count * 4, grid);
        ref_softmax(log_softmax != 0, c->outer, c->size, c->inner, x, want);
        char what[96];
        snprintf(what, sizeof(what), "%s [%zu,%zu,%zu] %s",
                 log_softmax ? "log_softmax" : "softmax", c->outer, c->size, c->inner,
                 kiln_kernel_variant_name(variants[v]));
        // LogSoftmax values reach ~160 in magnitude: relative tolerance.
        gpu_expect_close(what, got, want, count, 1e-5, 1e-4);
        free(x);
        free(want);
        free(got);
      }
    }
  }
}

KILN_TEST(GpuReduceTest, LayerNormAndInstanceNorm) {
  kiln_kernel_variant_t variants[2];
  size_t variant_count = runnable_variants(KILN_KERNEL_NORM, variants);
  for (size_t v = 0; v < variant_count; ++v) {
    // LayerNorm: 6 rows of 300 (e.g. [2, 3, 300] over the last axis).
    {
      const size_t rows = 6, size = 300;
      float* x = gpu_random_alloc(rows * size, 100, -3, 5);  // nonzero mean
      float* scale = gpu_random_alloc(size, 101, 0.5f, 1.5f);
      float* bias = gpu_random_alloc(size, 102, -1, 1);
      float* want = gpu_alloc(rows * size);
      float* got = gpu_alloc(rows * size);
      kiln_kernel_norm_params_t p = {(uint32_t)rows, (uint32_t)size, 1, 1e-5f};
      kiln_kernel_config_t config = gpu_config(KILN_KERNEL_NORM, KILN_KERNEL_STORAGE_FP32);
      KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_NORM_KIND, KILN_NORM_LAYER));
      uint32_t grid[3];
      KILN_ASSERT_OK(kiln_kernel_grid_rows(&config, rows, grid));
      gpu_arg_t args[4] = {{x, rows * size * 4}, {scale, size * 4}, {bias, size * 4},
                           {NULL, rows * size * 4}};
      gpu_run(KILN_KERNEL_NORM, variants[v], &config, &p, sizeof(p), args, 4, 3, got,
              rows * size * 4, grid);
      ref_layer_norm(rows, size, x, scale, bias, 1e-5f, want);
      gpu_expect_close(kiln_kernel_variant_name(variants[v]), got, want, rows * size, 1e-4, 1e-4);
      free(x);
      free(scale);
      free(bias);
      free(want);
      free(got);
    }
    // InstanceNorm: N=2, C=3, 7x7.
    {
      const size_t n = 2, c = 3, hw = 49;
      float* x = gpu_random_alloc(n * c * hw, 110, -2, 3);
      float* scale = gpu_random_alloc(c, 111, 0.5f, 1.5f);
      float* bias = gpu_random_alloc(c, 112, -1, 1);
      float* want = gpu_alloc(n * c * hw);
      float* got = gpu_alloc(n * c * hw);
      kiln_kernel_norm_params_t p = {(uint32_t)(n * c), (uint32_t)hw, (uint32_t)c, 1e-5f};
      kiln_kernel_config_t config = gpu_config(KILN_KERNEL_NORM, KILN_KERNEL_STORAGE_FP32);
      KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_NORM_KIND, KILN_NORM_INSTANCE));
      uint32_t grid[3];
      KILN_ASSERT_OK(kiln_kernel_grid_rows(&config, n * c, grid));
      gpu_arg_t args[4] = {{x, n * c * hw * 4}, {scale, c * 4}, {bias, c * 4},
                           {NULL, n * c * hw * 4}};
      gpu_run(KILN_KERNEL_NORM, variants[v], &config, &p, sizeof(p), args, 4, 3, got,
              n * c * hw * 4, grid);
      ref_instance_norm(n, c, hw, x, scale, bias, 1e-5f, want);
      gpu_expect_close("instance norm", got, want, n * c * hw, 1e-4, 1e-4);
      free(x);
      free(scale);
      free(bias);
      free(want);
      free(got);
    }
  }
}

typedef struct pool_case_t {
  ref_pool2d_t p;
  uint32_t op;
} pool_case_t;

KILN_TEST(GpuPoolTest, MaxAndAverage) {
  // {planes, H, W, KH, KW, SH, SW, pads t/l/b/r, DH, DW, count_include_pad,
  //  ceil_mode}
  const pool_case_t cases[] = {
      // ResNet stem max pool: 3x3 stride 2 pad 1.
      {{6, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false}, KILN_POOL_MAX},
      {{4, 9, 7, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, false}, KILN_POOL_MAX},
      {{3, 10, 10, 3, 3, 1, 1, 1, 1, 1, 1, 2, 2, false}, KILN_POOL_MAX},
      {{5, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false}, KILN_POOL_AVG},
      {{5, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true}, KILN_POOL_AVG},
      // Asymmetric pads with count_include_pad: edge windows differ.
      {{2, 7, 6, 3, 2, 2, 2, 0, 1, 2, 1, 1, 1, true}, KILN_POOL_AVG},
      {{2, 7, 6, 3, 2, 2, 2, 0, 1, 2, 1, 1, 1, false}, KILN_POOL_AVG},
      // ceil_mode: partial last windows (8 -> 4 with 3x3 stride 2).
      {{3, 8, 8, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, false, true}, KILN_POOL_MAX},
      {{3, 8, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, true}, KILN_POOL_AVG},
      {{3, 8, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, true}, KILN_POOL_AVG},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    const ref_pool2d_t* r = &cases[i].p;
    size_t oh = ref_pool2d_out_h(r), ow = ref_pool2d_out_w(r);
    size_t in_count = r->planes * r->in_h * r->in_w, out_count = r->planes * oh * ow;
    float* x = gpu_random_alloc(in_count, 120 + (uint32_t)i, -1, 1);
    float* want = gpu_alloc(out_count);
    float* got = gpu_alloc(out_count);
    kiln_kernel_pool2d_attrs_t attrs = {
        (int64_t)r->planes,   (int64_t)r->in_h,     (int64_t)r->in_w,
        (int64_t)r->kernel_h, (int64_t)r->kernel_w, (int64_t)r->stride_h,
        (int64_t)r->stride_w, (int64_t)r->pad_top,  (int64_t)r->pad_left,
        (int64_t)r->pad_bottom, (int64_t)r->pad_right, (int64_t)r->dilation_h,
        (int64_t)r->dilation_w, r->ceil_mode, r->count_include_pad};
    kiln_kernel_pool2d_params_t p;
    KILN_ASSERT_OK(kiln_kernel_params_pool2d(&attrs, &p));
    KILN_EXPECT_EQ(p.out_height, oh);
    KILN_EXPECT_EQ(p.out_width, ow);
    kiln_kernel_config_t config = gpu_config(KILN_KERNEL_POOL2D, KILN_KERNEL_STORAGE_FP32);
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_POOL_OP, cases[i].op));
    uint32_t grid[3];
    KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, out_count, grid));
    gpu_arg_t args[2] = {{x, in_count * 4}, {NULL, out_count * 4}};
    gpu_run(KILN_KERNEL_POOL2D, KILN_KERNEL_VARIANT_FP32, &config, &p, sizeof(p), args, 2, 1,
            got, out_count * 4, grid);
    if (cases[i].op == KILN_POOL_MAX) ref_max_pool2d(r, x, want);
    else ref_avg_pool2d(r, x, want);
    char what[48];
    snprintf(what, sizeof(what), "pool case %zu", i);
    gpu_expect_close(what, got, want, out_count, cases[i].op == KILN_POOL_MAX ? 0 : 1e-6, 1e-5);
    free(x);
    free(want);
    free(got);
  }
}

// More rows than the 65535 workgroups a grid may have: the row kernels'
// workgroup-stride loop must cover the rest. Small workgroups (8) keep
// this quick on a CPU device.
KILN_TEST(GpuReduceTest, RowsBeyondTheGridLimit) {
  const size_t rows = 70001, size = 5;
  float* x = gpu_random_alloc(rows * size, 140, -1, 1);
  float* want = gpu_alloc(rows * size);
  float* got = gpu_alloc(rows * size);
  float* scale = gpu_random_alloc(size, 141, 0.5f, 1.5f);
  float* bias = gpu_random_alloc(size, 142, -1, 1);
  const kiln_kernel_id_t kernels[] = {KILN_KERNEL_REDUCE, KILN_KERNEL_SOFTMAX, KILN_KERNEL_NORM};
  for (size_t k = 0; k < 3; ++k) {
    kiln_kernel_variant_t variants[2];
    size_t variant_count = runnable_variants(kernels[k], variants);
    for (size_t v = 0; v < variant_count; ++v) {
      kiln_kernel_config_t config = gpu_config(kernels[k], KILN_KERNEL_STORAGE_FP32);
      KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_WORKGROUP_X, 8));
      config.workgroup_size[0] = 8;
      uint32_t grid[3];
      KILN_ASSERT_OK(kiln_kernel_grid_rows(&config, rows, grid));
      KILN_EXPECT_EQ(grid[0], 65535);
      size_t out_count = kernels[k] == KILN_KERNEL_REDUCE ? rows : rows * size;
      if (kernels[k] == KILN_KERNEL_NORM) {
        kiln_kernel_norm_params_t p = {(uint32_t)rows, (uint32_t)size, 1, 1e-5f};
        gpu_arg_t args[4] = {{x, rows * size * 4}, {scale, size * 4}, {bias, size * 4},
                             {NULL, out_count * 4}};
        gpu_run(kernels[k], variants[v], &config, &p, sizeof(p), args, 4, 3, got,
                out_count * 4, grid);
        ref_layer_norm(rows, size, x, scale, bias, 1e-5f, want);
      } else if (kernels[k] == KILN_KERNEL_REDUCE) {
        kiln_kernel_reduce_params_t p = {(uint32_t)rows, (uint32_t)size, 1, 0, 0.0f};
        gpu_arg_t args[2] = {{x, rows * size * 4}, {NULL, out_count * 4}};
        gpu_run(kernels[k], variants[v], &config, &p, sizeof(p), args, 2, 1, got,
                out_count * 4, grid);
        ref_reduce(KILN_REDUCE_SUM, rows, size, 1, x, want);
      } else {
        kiln_kernel_softmax_params_t p = {(uint32_t)rows, (uint32_t)size, 1};
        gpu_arg_t args[2] = {{x, rows * size * 4}, {NULL, out_count * 4}};
        gpu_run(kernels[k], variants[v], &config, &p, sizeof(p), args, 2, 1, got,
                out_count * 4, grid);
        ref_softmax(false, rows, size, 1, x, want);
      }
      char what[64];
      snprintf(what, sizeof(what), "%s over %zu rows, %s", kiln_kernel_desc(kernels[k])->name,
               rows, kiln_kernel_variant_name(variants[v]));
      // LayerNorm of 5 values divides by a small std: relative error grows.
      gpu_expect_close(what, got, want, out_count, 1e-4, 1e-4);
    }
  }
  free(x);
  free(want);
  free(got);
  free(scale);
  free(bias);
}

// rows_split's three phases, chained through host copies of the stats, for
// every kind over rows cut into uneven chunks (1000 values, chunk 96),
// against the reference (same tolerances as the fused kernels).
KILN_TEST(GpuReduceTest, RowsSplitAllKindsAcrossChunks) {
  const size_t outer = 2, size = 1000, inner = 3, chunk = 96, channels = 3;
  const size_t count = outer * size * inner, chunks = (size + chunk - 1) / chunk;
  float* x = gpu_random_alloc(count, 150, -3, 5);
  float* scale = gpu_random_alloc(size, 151, 0.5f, 1.5f);
  float* bias = gpu_random_alloc(size, 152, -1, 1);
  float* want = gpu_alloc(count);
  float* got = gpu_alloc(count);
  const uint32_t kinds[] = {KILN_ROWS_SOFTMAX, KILN_ROWS_LOG_SOFTMAX, KILN_ROWS_LAYER_NORM,
                            KILN_ROWS_INSTANCE_NORM};
  for (size_t k = 0; k < 4; ++k) {
    bool softmax = kinds[k] <= KILN_ROWS_LOG_SOFTMAX;
    // Norms: rows of `size` contiguous values (inner 1), 6 rows.
    size_t p_outer = softmax ? outer : outer * inner, p_inner = softmax ? inner : 1;
    size_t rows = p_outer * p_inner;
    size_t stats_count = 3 * rows * chunks + 2 * rows;
    float* stats = gpu_alloc(stats_count);
    memset(stats, 0, stats_count * sizeof(float));
    kiln_kernel_rows_split_params_t p = {(uint32_t)p_outer, (uint32_t)size, (uint32_t)p_inner,
                                         (uint32_t)chunk, (uint32_t)channels, 1e-5f};
    const uint32_t phases[] = {KILN_ROWS_PHASE_PARTIAL, KILN_ROWS_PHASE_COMBINE,
                               KILN_ROWS_PHASE_APPLY};
    for (size_t ph = 0; ph < 3; ++ph) {
      kiln_kernel_config_t config = gpu_config(KILN_KERNEL_ROWS_SPLIT, KILN_KERNEL_STORAGE_FP32);
      KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_ROWS_KIND, kinds[k]));
      KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_ROWS_PHASE, phases[ph]));
      uint32_t grid[3];
      KILN_ASSERT_OK(kiln_kernel_grid_rows(
          &config, phases[ph] == KILN_ROWS_PHASE_COMBINE ? rows : rows * chunks, grid));
      gpu_arg_t args[5] = {{x, count * 4}, {scale, size * 4}, {bias, size * 4},
                           {stats, stats_count * 4}, {NULL, count * 4}};
      bool apply = phases[ph] == KILN_ROWS_PHASE_APPLY;
      gpu_run(KILN_KERNEL_ROWS_SPLIT, KILN_KERNEL_VARIANT_FP32, &config, &p, sizeof(p), args, 5,
              apply ? 4 : 3, apply ? (void*)got : (void*)stats,
              apply ? count * 4 : stats_count * 4, grid);
    }
    if (softmax) {
      ref_softmax(kinds[k] == KILN_ROWS_LOG_SOFTMAX, outer, size, inner, x, want);
    } else if (kinds[k] == KILN_ROWS_LAYER_NORM) {
      ref_layer_norm(rows, size, x, scale, bias, 1e-5f, want);
    } else {
      ref_instance_norm(outer, channels, size, x, scale, bias, 1e-5f, want);
    }
    char what[64];
    snprintf(what, sizeof(what), "rows_split kind %u", kinds[k]);
    gpu_expect_close(what, got, want, count, 1e-4, 1e-4);
    free(stats);
  }
  free(x);
  free(scale);
  free(bias);
  free(want);
  free(got);
}

// reduce in chunks: partials of [2, 1000, 3] in chunks of 96, then the
// partials with the full size as the mean's divisor.
KILN_TEST(GpuReduceTest, ChunkPartialsThenPartials) {
  const size_t outer = 2, size = 1000, inner = 3, chunk = 96;
  const size_t chunks = (size + chunk - 1) / chunk;
  float* x = gpu_random_alloc(outer * size * inner, 160, -1, 1);
  float* partial = gpu_alloc(outer * chunks * inner);
  float* got = gpu_alloc(outer * inner);
  float* want = gpu_alloc(outer * inner);
  for (uint32_t op = 0; op < KILN_REDUCE_COUNT; ++op) {
    uint32_t first_op = kiln_kernel_reduce_step_op(op, true, false, false);
    kiln_kernel_reduce_params_t p1 = {(uint32_t)outer, (uint32_t)size, (uint32_t)inner,
                                      (uint32_t)chunk, 0.0f};
    kiln_kernel_reduce_params_t p2 = {(uint32_t)outer, (uint32_t)chunks, (uint32_t)inner, 0,
                                      (float)size};
    const uint32_t ops[2] = {first_op, kiln_kernel_reduce_step_op(op, false, true, true)};
    const kiln_kernel_reduce_params_t* ps[2] = {&p1, &p2};
    const float* ins[2] = {x, partial};
    size_t in_counts[2] = {outer * size * inner, outer * chunks * inner};
    size_t out_counts[2] = {outer * chunks * inner, outer * inner};
    float* outs[2] = {partial, got};
    for (int pass = 0; pass < 2; ++pass) {
      kiln_kernel_config_t config = gpu_config(KILN_KERNEL_REDUCE, KILN_KERNEL_STORAGE_FP32);
      KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_REDUCE_OP, ops[pass]));
      uint32_t grid[3];
      KILN_ASSERT_OK(kiln_kernel_grid_rows(&config, out_counts[pass], grid));
      gpu_arg_t args[2] = {{ins[pass], in_counts[pass] * 4}, {NULL, out_counts[pass] * 4}};
      gpu_run(KILN_KERNEL_REDUCE, config.variant, &config, ps[pass], sizeof(p1), args, 2, 1,
              outs[pass], out_counts[pass] * 4, grid);
    }
    ref_reduce(op, outer, size, inner, x, want);
    char what[64];
    snprintf(what, sizeof(what), "reduce op %u in chunks of %zu", op, chunk);
    gpu_expect_close(what, got, want, outer * inner, 1e-4, 1e-4);
  }
  free(x);
  free(partial);
  free(got);
  free(want);
}

// One norm_parts case: `parts` parts of 5 rows of 300 (part stride 1536,
// past rows * size) + bias + residual, spec count `spec`, by the build of
// `variant` (fp16 ones read and write halves; the reference then sums the
// fp16-rounded inputs in fp32), against the sum and ref_layer_norm:
// atol / rtol 1e-4 at fp32, 1e-3 / 2^-10 at fp16 (one rounding of y). A
// spec count that is not the push constants' (`nan`) writes NaN
// everywhere, never a partial sum.
static void norm_parts_case(kiln_kernel_variant_t variant, uint32_t parts, uint32_t spec,
                            bool nan, uint32_t seed) {
  const size_t rows = 5, size = 300, stride = 1536;
  const bool f16 = variant == KILN_KERNEL_VARIANT_FP16_STORAGE ||
                   variant == KILN_KERNEL_VARIANT_FP16_SUBGROUP;
  const size_t elem = f16 ? 2 : 4;
  // Parts; params (bias at 0, scale at size, beta at 2 * size); residual.
  const size_t counts[3] = {parts * stride, 3 * size, rows * size};
  float* values[3] = {gpu_random_alloc(counts[0], seed, -2, 2),
                      gpu_random_alloc(counts[1], 121, 0.5f, 1.5f),
                      gpu_random_alloc(counts[2], 122, -1, 1)};
  uint16_t* halves[3] = {NULL, NULL, NULL};
  for (int i = 0; f16 && i < 3; ++i) {
    halves[i] = malloc(counts[i] * 2 + 2);
    KILN_ASSERT_TRUE(halves[i] != NULL);
    for (size_t e = 0; e < counts[i]; ++e) {
      halves[i][e] = gpu_float_to_half(values[i][e]);
      values[i][e] = gpu_half_to_float(halves[i][e]);
    }
  }
  const float *part = values[0], *params = values[1], *residual = values[2];
  float* x = gpu_alloc(rows * size);
  float* want = gpu_alloc(rows * size);
  float* got = gpu_alloc(rows * size);
  uint16_t* got_halves = malloc(rows * size * 2 + 2);
  KILN_ASSERT_TRUE(got_halves != NULL);
  for (size_t i = 0; i < rows * size; ++i) {
    float s = 0.0f;
    for (uint32_t q = 0; q < parts; ++q) s += part[q * stride + i];
    x[i] = s + params[i % size] + residual[i];
  }
  ref_layer_norm(rows, size, x, params + size, params + 2 * size, 1e-5f, want);
  kiln_kernel_norm_parts_params_t p = {(uint32_t)rows, (uint32_t)size, parts, (uint32_t)stride,
                                       0, (uint32_t)size, (uint32_t)(2 * size), 1e-5f};
  kiln_kernel_config_t config = gpu_config(
      KILN_KERNEL_NORM_PARTS, f16 ? KILN_KERNEL_STORAGE_FP16 : KILN_KERNEL_STORAGE_FP32);
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_NORM_PARTS_BIAS, 1));
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_NORM_PARTS_RESIDUAL, 1));
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_NORM_PARTS_COUNT, spec));
  uint32_t grid[3];
  KILN_ASSERT_OK(kiln_kernel_grid_rows(&config, rows, grid));
  gpu_arg_t args[5];
  for (int i = 0; i < 3; ++i) {
    args[i] = (gpu_arg_t){f16 ? (void*)halves[i] : (void*)values[i], counts[i] * elem};
  }
  args[3] = args[4] = (gpu_arg_t){NULL, rows * size * elem};
  gpu_run(KILN_KERNEL_NORM_PARTS, variant, &config, &p, sizeof(p), args, 5, 3,
          f16 ? (void*)got_halves : (void*)got, rows * size * elem, grid);
  if (f16) {
    for (size_t i = 0; i < rows * size; ++i) got[i] = gpu_half_to_float(got_halves[i]);
  }
  char what[96];
  snprintf(what, sizeof(what), "norm_parts %s, %u parts, spec %u",
           kiln_kernel_variant_name(variant), parts, spec);
  if (nan) {
    size_t numbers = 0;
    for (size_t i = 0; i < rows * size; ++i) numbers += !isnan(got[i]);
    KILN_EXPECT_EQ(numbers, 0u);
  } else if (f16) {
    gpu_expect_close(what, got, want, rows * size, 1e-3, 1.0 / 1024);
  } else {
    gpu_expect_close(what, got, want, rows * size, 1e-4, 1e-4);
  }
  for (int i = 0; i < 3; ++i) {
    free(values[i]);
    free(halves[i]);
  }
  free(x);
  free(want);
  free(got);
  free(got_halves);
}

// norm_parts: LayerNorm of rows summed from split-K parts (+ bias +
// residual), with the part count as a spec constant (every part's load
// issued at once) or 0 (read from the push constants).
KILN_TEST(GpuReduceTest, NormParts) {
  const struct {
    uint32_t parts, spec;
    bool nan;
  } cases[] = {{1, 1, false}, {3, 3, false}, {12, 12, false}, {12, 0, false},
               {17, 0, false}, {16, 16, false}, {5, 4, true}};
  kiln_kernel_variant_t variants[2];
  const size_t variant_count = runnable_variants(KILN_KERNEL_NORM_PARTS, variants);
  for (size_t v = 0; v < variant_count; ++v) {
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c) {
      norm_parts_case(variants[v], cases[c].parts, cases[c].spec, cases[c].nan,
                      (uint32_t)(120 + c));
    }
  }
}

// norm_parts' fp16 builds: the tree-reduction build and, where the device
// has subgroup arithmetic, the subgroup one (the config's pick there).
KILN_TEST(GpuReduceTest, NormPartsF16) {
  const kiln_kernel_arch_caps_t* caps = kiln_vk_harness_caps(gpu_harness());
  if (!caps->fp16_storage) {
    KILN_ADD_FAILURE("device lacks 16-bit storage; fp16 builds cannot be checked");
    return;
  }
  kiln_kernel_config_t config = gpu_config(KILN_KERNEL_NORM_PARTS, KILN_KERNEL_STORAGE_FP16);
  KILN_EXPECT_EQ(config.variant, caps->subgroup_arithmetic ? KILN_KERNEL_VARIANT_FP16_SUBGROUP
                                                           : KILN_KERNEL_VARIANT_FP16_STORAGE);
  const kiln_kernel_variant_t variants[2] = {KILN_KERNEL_VARIANT_FP16_STORAGE,
                                             KILN_KERNEL_VARIANT_FP16_SUBGROUP};
  const uint32_t cases[][2] = {{3, 3}, {12, 12}, {12, 0}, {17, 0}};
  for (size_t v = 0; v < (caps->subgroup_arithmetic ? 2u : 1u); ++v) {
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c) {
      norm_parts_case(variants[v], cases[c][0], cases[c][1], false, (uint32_t)(140 + c));
    }
  }
  norm_parts_case(variants[caps->subgroup_arithmetic ? 1 : 0], 5, 4, true, 150);
}
