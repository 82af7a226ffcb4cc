// fp16-storage builds of the elementwise, pooling and copy kernels, and the
// fp32 <-> fp16 casts, against the references run on fp16-rounded inputs.
// Tolerances: moves and max are exact (bit for bit); arithmetic rounds its
// fp32 result to fp16 once: atol 1e-3 + rtol 2^-10; fp32 -> fp16 casts may
// round to nearest or toward zero (Vulkan allows both): within 1 fp16 ulp.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "kiln/compiler/kernels_params.h"
#include "kiln_test.h"
#include "reference/reference.h"

static bool have_fp16(void) {
  if (kiln_vk_harness_caps(gpu_harness())->fp16_storage) return true;
  KILN_ADD_FAILURE("device lacks 16-bit storage; fp16 builds cannot be checked");
  return false;
}

// Random values rounded to fp16: `half` gets the bits, `value` the floats.
static void random_half(size_t count, uint32_t seed, float lo, float hi, uint16_t** half,
                        float** value) {
  *value = gpu_random_alloc(count, seed, lo, hi);
  *half = malloc(count * 2 + 2);
  if (!*half) abort();
  for (size_t i = 0; i < count; ++i) {
    (*half)[i] = gpu_float_to_half((*value)[i]);
    (*value)[i] = gpu_half_to_float((*half)[i]);
  }
}

static void halves_to_floats(const uint16_t* half, size_t count, float* out) {
  for (size_t i = 0; i < count; ++i) out[i] = gpu_half_to_float(half[i]);
}

KILN_TEST(GpuFp16Test, CastsRoundTrip) {
  if (!have_fp16()) return;
  const size_t count = 4099;
  float* x = gpu_random_alloc(count, 200, -300, 300);
  uint16_t* half = malloc(count * 2 + 2);
  float* back = gpu_alloc(count);
  KILN_ASSERT_TRUE(half != NULL);
  kiln_kernel_copy_params_t p = {(uint32_t)count};
  kiln_kernel_config_t config = gpu_config(KILN_KERNEL_CAST_F32_TO_F16, KILN_KERNEL_STORAGE_FP32);
  KILN_EXPECT_EQ(config.required_features, KILN_KERNEL_FEATURE_FP16_STORAGE);
  uint32_t grid[3];
  KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, count, grid));
  gpu_arg_t to_half[2] = {{x, count * 4}, {NULL, count * 2}};
  gpu_run(KILN_KERNEL_CAST_F32_TO_F16, KILN_KERNEL_VARIANT_FP32, &config, &p, sizeof(p),
          to_half, 2, 1, half, count * 2, grid);
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    float h = gpu_half_to_float(half[i]);
    // One fp16 ulp at x: 2^(floor(log2|x|) - 10).
    float ulp = ldexpf(1.0f, ilogbf(fabsf(x[i]) > 6.1e-5f ? x[i] : 6.1e-5f) - 10);
    if (!(fabsf(h - x[i]) <= ulp)) ++bad;
  }
  KILN_EXPECT_EQ(bad, 0);
  config = gpu_config(KILN_KERNEL_CAST_F16_TO_F32, KILN_KERNEL_STORAGE_FP32);
  gpu_arg_t to_float[2] = {{half, count * 2}, {NULL, count * 4}};
  gpu_run(KILN_KERNEL_CAST_F16_TO_F32, KILN_KERNEL_VARIANT_FP32, &config, &p, sizeof(p),
          to_float, 2, 1, back, count * 4, grid);
  float* want = gpu_alloc(count);
  halves_to_floats(half, count, want);
  KILN_EXPECT_BYTES_EQ(back, want, count * 4);  // fp16 -> fp32 is exact
  free(x);
  free(half);
  free(back);
  free(want);
}

KILN_TEST(GpuFp16Test, BinaryAndUnary) {
  if (!have_fp16()) return;
  const int64_t a_dims[] = {2, 3, 4, 5}, b_dims[] = {3, 1, 5};
  const size_t a_shape[] = {2, 3, 4, 5}, b_shape[] = {3, 1, 5};
  kiln_kernel_binary_params_t p;
  KILN_ASSERT_OK(kiln_kernel_params_binary(a_dims, 4, b_dims, 3, 0, 0, &p, NULL, NULL));
  size_t count = p.count;
  uint16_t *ha, *hb;
  float *a, *b;
  random_half(120, 201, -2, 2, &ha, &a);
  random_half(15, 202, -2, 2, &hb, &b);
  uint16_t* hout = malloc(count * 2 + 2);
  float* got = gpu_alloc(count);
  float* want = gpu_alloc(count);
  KILN_ASSERT_TRUE(hout != NULL);
  kiln_kernel_config_t config = gpu_config(KILN_KERNEL_BINARY, KILN_KERNEL_STORAGE_FP16);
  KILN_EXPECT_EQ(config.variant, KILN_KERNEL_VARIANT_FP16_STORAGE);
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_BINARY_OP, KILN_BINARY_MUL));
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_BINARY_ACTIVATION, KILN_ACT_RELU));
  uint32_t grid[3];
  KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, count, grid));
  gpu_arg_t args[3] = {{ha, 240}, {hb, 30}, {NULL, count * 2}};
  gpu_run(KILN_KERNEL_BINARY, KILN_KERNEL_VARIANT_FP16_STORAGE, &config, &p, sizeof(p), args,
          3, 2, hout, count * 2, grid);
  halves_to_floats(hout, count, got);
  ref_binary(KILN_BINARY_MUL, a, a_shape, 4, b, b_shape, 3, KILN_ACT_RELU, 0, 0, want);
  gpu_expect_close("binary_f16 mul+relu", got, want, count, 1e-3, 1.0 / 1024);

  const uint32_t ops[] = {KILN_ACT_SIGMOID, KILN_ACT_HARD_SWISH, KILN_ACT_GELU, KILN_ACT_TANH,
                          KILN_ACT_SILU};
  for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); ++o) {
    kiln_kernel_unary_params_t u = {120, 0, 0};
    config = gpu_config(KILN_KERNEL_UNARY, KILN_KERNEL_STORAGE_FP16);
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_UNARY_OP, ops[o]));
    KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, 120, grid));
    gpu_arg_t uargs[2] = {{ha, 240}, {NULL, 240}};
    gpu_run(KILN_KERNEL_UNARY, KILN_KERNEL_VARIANT_FP16_STORAGE, &config, &u, sizeof(u), uargs,
            2, 1, hout, 240, grid);
    halves_to_floats(hout, 120, got);
    for (size_t i = 0; i < 120; ++i) want[i] = (float)ref_activation(ops[o], a[i], 0, 0);
    char what[48];
    snprintf(what, sizeof(what), "unary_f16 op %u", ops[o]);
    gpu_expect_close(what, got, want, 120, 1e-3, 1.0 / 1024);
  }
  free(ha);
  free(hb);
  free(a);
  free(b);
  free(hout);
  free(got);
  free(want);
}

KILN_TEST(GpuFp16Test, PoolAndMoves) {
  if (!have_fp16()) return;
  // Max pool 3x3 stride 2 pad 1 over 4 planes of 9x9: exact in fp16.
  ref_pool2d_t r = {4, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, false};
  kiln_kernel_pool2d_attrs_t attrs = {4, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, false};
  kiln_kernel_pool2d_params_t p;
  KILN_ASSERT_OK(kiln_kernel_params_pool2d(&attrs, &p));
  size_t in_count = 4 * 81, out_count = 4 * p.out_height * p.out_width;
  uint16_t* hx;
  float* x;
  random_half(in_count, 203, -1, 1, &hx, &x);
  uint16_t* hout = malloc(in_count * 2 + 2);
  float* got = gpu_alloc(in_count);
  float* want = gpu_alloc(in_count);
  KILN_ASSERT_TRUE(hout != NULL);
  kiln_kernel_config_t config = gpu_config(KILN_KERNEL_POOL2D, KILN_KERNEL_STORAGE_FP16);
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_POOL_OP, KILN_POOL_MAX));
  uint32_t grid[3];
  KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, out_count, grid));
  gpu_arg_t args[2] = {{hx, in_count * 2}, {NULL, out_count * 2}};
  gpu_run(KILN_KERNEL_POOL2D, KILN_KERNEL_VARIANT_FP16_STORAGE, &config, &p, sizeof(p), args, 2,
          1, hout, out_count * 2, grid);
  halves_to_floats(hout, out_count, got);
  ref_max_pool2d(&r, x, want);
  KILN_EXPECT_BYTES_EQ(got, want, out_count * 4);

  // Transpose NCHW -> NHWC of the same halves: a move, bit for bit.
  const int64_t dims[] = {1, 4, 9, 9}, perm[] = {0, 2, 3, 1};
  const size_t shape[] = {1, 4, 9, 9}, perm_s[] = {0, 2, 3, 1};
  kiln_kernel_strided_copy_params_t t;
  KILN_ASSERT_OK(kiln_kernel_params_transpose(dims, 4, perm, &t));
  config = gpu_config(KILN_KERNEL_STRIDED_COPY, KILN_KERNEL_STORAGE_FP16);
  KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, in_count, grid));
  gpu_arg_t targs[2] = {{hx, in_count * 2}, {NULL, in_count * 2}};
  gpu_run(KILN_KERNEL_STRIDED_COPY, KILN_KERNEL_VARIANT_FP16_STORAGE, &config, &t, sizeof(t),
          targs, 2, 1, hout, in_count * 2, grid);
  halves_to_floats(hout, in_count, got);
  ref_transpose(x, shape, 4, perm_s, want);
  KILN_EXPECT_BYTES_EQ(got, want, in_count * 4);

  kiln_kernel_copy_params_t c = {(uint32_t)in_count};
  config = gpu_config(KILN_KERNEL_COPY, KILN_KERNEL_STORAGE_FP16);
  gpu_run(KILN_KERNEL_COPY, KILN_KERNEL_VARIANT_FP16_STORAGE, &config, &c, sizeof(c), targs, 2,
          1, hout, in_count * 2, grid);
  KILN_EXPECT_BYTES_EQ(hout, hx, in_count * 2);
  free(hx);
  free(x);
  free(hout);
  free(got);
  free(want);
}

// The row kernels' fp16-storage builds (--precision=f16): fp16 in and out,
// statistics in fp32, so the result is the fp32 reference on the rounded
// inputs rounded once: atol 1e-3 + rtol 2^-10. A row sum of 2048 values near
// 30 (about 61000, just under fp16's 65504) shows the sum is not kept in fp16.
KILN_TEST(GpuFp16Test, SoftmaxReduceLayerNorm) {
  if (!have_fp16()) return;
  const size_t outer = 3, size = 2048, inner = 2, count = outer * size * inner;
  uint16_t *hx, *hscale, *hbias;
  float *x, *scale, *bias;
  random_half(count, 210, 28, 32, &hx, &x);
  random_half(size, 211, 0.5f, 1.5f, &hscale, &scale);
  random_half(size, 212, -1, 1, &hbias, &bias);
  uint16_t* hout = malloc(count * 2 + 2);
  float* got = gpu_alloc(count);
  float* want = gpu_alloc(count);
  KILN_ASSERT_TRUE(hout != NULL);
  uint32_t grid[3];
  // Both fp16 builds: the shared-memory tree, and the subgroup reduction
  // that the config picks where the device has subgroup arithmetic.
  const bool subgroup = kiln_vk_harness_caps(gpu_harness())->subgroup_arithmetic;
  static const char* const names[2][3] = {
      {"softmax_f16", "reduce_f16 sum", "norm_f16 layer norm"},
      {"softmax_f16_subgroup", "reduce_f16_subgroup sum", "norm_f16_subgroup layer norm"}};
  for (int v = 0; v < (subgroup ? 2 : 1); ++v) {
    const kiln_kernel_variant_t variant =
        v ? KILN_KERNEL_VARIANT_FP16_SUBGROUP : KILN_KERNEL_VARIANT_FP16_STORAGE;
    kiln_kernel_softmax_params_t sp = {(uint32_t)outer, (uint32_t)size, (uint32_t)inner};
    kiln_kernel_config_t config = gpu_config(KILN_KERNEL_SOFTMAX, KILN_KERNEL_STORAGE_FP16);
    KILN_EXPECT_EQ(config.variant, subgroup ? KILN_KERNEL_VARIANT_FP16_SUBGROUP
                                            : KILN_KERNEL_VARIANT_FP16_STORAGE);
    KILN_ASSERT_OK(kiln_kernel_grid_rows(&config, outer * inner, grid));
    gpu_arg_t sargs[2] = {{hx, count * 2}, {NULL, count * 2}};
    gpu_run(KILN_KERNEL_SOFTMAX, variant, &config, &sp, sizeof(sp), sargs,
            2, 1, hout, count * 2, grid);
    halves_to_floats(hout, count, got);
    ref_softmax(false, outer, size, inner, x, want);
    gpu_expect_close(names[v][0], got, want, count, 1e-3, 1.0 / 1024);

    kiln_kernel_reduce_params_t rp = {(uint32_t)outer, (uint32_t)size, (uint32_t)inner, 0, 0.0f};
    config = gpu_config(KILN_KERNEL_REDUCE, KILN_KERNEL_STORAGE_FP16);
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_REDUCE_OP, KILN_REDUCE_SUM));
    KILN_ASSERT_OK(kiln_kernel_grid_rows(&config, outer * inner, grid));
    gpu_arg_t rargs[2] = {{hx, count * 2}, {NULL, outer * inner * 2}};
    gpu_run(KILN_KERNEL_REDUCE, variant, &config, &rp, sizeof(rp), rargs,
            2, 1, hout, outer * inner * 2, grid);
    halves_to_floats(hout, outer * inner, got);
    ref_reduce(KILN_REDUCE_SUM, outer, size, inner, x, want);
    gpu_expect_close(names[v][1], got, want, outer * inner, 1e-3, 1.0 / 1024);

    const size_t rows = outer * inner;  // [rows, size] rows of the same data
    kiln_kernel_norm_params_t np = {(uint32_t)rows, (uint32_t)size, 1, 1e-5f};
    config = gpu_config(KILN_KERNEL_NORM, KILN_KERNEL_STORAGE_FP16);
    KILN_ASSERT_OK(kiln_kernel_grid_rows(&config, rows, grid));
    gpu_arg_t nargs[4] = {{hx, count * 2}, {hscale, size * 2}, {hbias, size * 2},
                          {NULL, count * 2}};
    gpu_run(KILN_KERNEL_NORM, variant, &config, &np, sizeof(np), nargs, 4,
            3, hout, count * 2, grid);
    halves_to_floats(hout, count, got);
    ref_layer_norm(rows, size, x, scale, bias, 1e-5f, want);
    gpu_expect_close(names[v][2], got, want, count, 1e-3, 1.0 / 1024);
  }
  free(hx);
  free(x);
  free(hscale);
  free(scale);
  free(hbias);
  free(bias);
  free(hout);
  free(got);
  free(want);
}

// conv_columns' fp16 build (one uvec4 of 8 halves per invocation): a
// move, bit for bit against ref_conv_columns on the halves, over a
// poisoned buffer (row tails of P = 90 and 9 zeroed), padded and strided.
KILN_TEST(GpuFp16Test, ConvColumns) {
  if (!have_fp16()) return;
  // batch, in_channels, in_h, in_w, out_channels, groups, kernel_h, kernel_w,
  // stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right, dilation_h, dilation_w
  const ref_conv2d_t cases[] = {
      {2, 3, 9, 10, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0},
      {1, 4, 6, 5, 1, 1, 3, 3, 2, 2, 1, 0, 1, 2, 1, 1, 0, 0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    const ref_conv2d_t* r = &cases[i];
    const size_t oh = ref_conv2d_out_h(r), ow = ref_conv2d_out_w(r);
    kiln_kernel_conv2d_params_t p = {
        .batch = (uint32_t)r->batch, .in_channels = (uint32_t)r->in_channels,
        .in_height = (uint32_t)r->in_h, .in_width = (uint32_t)r->in_w, .out_channels = 1,
        .out_height = (uint32_t)oh, .out_width = (uint32_t)ow, .groups = 1,
        .kernel_h = (uint32_t)r->kernel_h, .kernel_w = (uint32_t)r->kernel_w,
        .stride_h = (uint32_t)r->stride_h, .stride_w = (uint32_t)r->stride_w,
        .pad_top = (uint32_t)r->pad_top, .pad_left = (uint32_t)r->pad_left,
        .dilation_h = (uint32_t)r->dilation_h, .dilation_w = (uint32_t)r->dilation_w};
    const size_t in_count = r->batch * r->in_channels * r->in_h * r->in_w;
    const size_t count = r->batch * r->in_channels * r->kernel_h * r->kernel_w *
                         ((oh * ow + 7) / 8 * 8);
    uint16_t* hx = NULL;
    float* x = NULL;
    random_half(in_count, 250 + (uint32_t)i, -2, 2, &hx, &x);
    uint16_t* poison = malloc(count * 2);
    uint16_t* hout = malloc(count * 2);
    float* got = gpu_alloc(count);
    float* want = gpu_alloc(count);
    KILN_ASSERT_TRUE(poison != NULL && hout != NULL);
    for (size_t e = 0; e < count; ++e) poison[e] = 0x4700;  // 7.0
    kiln_kernel_config_t config = gpu_config(KILN_KERNEL_CONV_COLUMNS, KILN_KERNEL_STORAGE_FP16);
    uint32_t grid[3];
    KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, count / 8, grid));
    gpu_arg_t args[2] = {{hx, in_count * 2}, {poison, count * 2}};
    gpu_run(KILN_KERNEL_CONV_COLUMNS, KILN_KERNEL_VARIANT_FP16_STORAGE, &config, &p, sizeof(p),
            args, 2, 1, hout, count * 2, grid);
    halves_to_floats(hout, count, got);
    ref_conv_columns(r, x, want);
    if (memcmp(got, want, count * 4) != 0) KILN_ADD_FAILURE("conv_columns f16 case %zu", i);
    free(hx);
    free(x);
    free(poison);
    free(hout);
    free(got);
    free(want);
  }
}
