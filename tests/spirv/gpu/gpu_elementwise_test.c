// Elementwise kernels (binary with broadcasting, unary, copy) on the test
// device against tests/spirv/reference. Tolerances: one fp32 operation per
// value, so atol 1e-6 + rtol 1e-5 for arithmetic; transcendental ops go
// through the driver's exp/log/pow (a few ulp) and GLSL's erf
// approximation (1.5e-7), so atol 1e-5 + rtol 1e-4 there.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "kiln/compiler/kernels_params.h"
#include "kiln_test.h"
#include "reference/reference.h"

static size_t product(const size_t* shape, size_t rank) {
  size_t n = 1;
  for (size_t d = 0; d < rank; ++d) n *= shape[d];
  return n;
}

static void run_binary(const char* what, uint32_t op, const size_t* a_shape, size_t a_rank,
                       const size_t* b_shape, size_t b_rank, float lo, float hi,
                       uint32_t act, double atol, double rtol) {
  // Shapes as the graph IR holds them (int64); the library builds the
  // broadcast strides.
  int64_t a_dims[6], b_dims[6], out_dims[6];
  for (size_t d = 0; d < a_rank; ++d) a_dims[d] = (int64_t)a_shape[d];
  for (size_t d = 0; d < b_rank; ++d) b_dims[d] = (int64_t)b_shape[d];
  kiln_kernel_binary_params_t p;
  size_t rank = 0;
  KILN_ASSERT_OK(kiln_kernel_params_binary(a_dims, a_rank, b_dims, b_rank, 0, 0, &p,
                                           out_dims, &rank));
  size_t count = p.count;
  KILN_EXPECT_EQ(rank, a_rank > b_rank ? a_rank : b_rank);
  size_t a_count = product(a_shape, a_rank), b_count = product(b_shape, b_rank);
  float* a = gpu_random_alloc(a_count, 41, lo, hi);
  float* b = gpu_random_alloc(b_count, 42, lo, hi);
  if (op == KILN_BINARY_POW) {
    // Negative bases need integral exponents: round b, keep it small.
    for (size_t i = 0; i < b_count; ++i) b[i] = roundf(b[i] * 2.0f);
  }
  float* want = gpu_alloc(count);
  float* got = gpu_alloc(count);
  kiln_kernel_config_t config = gpu_config(KILN_KERNEL_BINARY, KILN_KERNEL_STORAGE_FP32);
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_BINARY_OP, op));
  KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_BINARY_ACTIVATION, act));
  uint32_t grid[3];
  KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, count, grid));
  gpu_arg_t args[3] = {{a, a_count * 4}, {b, b_count * 4}, {NULL, count * 4}};
  gpu_run(KILN_KERNEL_BINARY, KILN_KERNEL_VARIANT_FP32, &config, &p, sizeof(p), args, 3, 2,
          got, count * 4, grid);
  ref_binary(op, a, a_shape, a_rank, b, b_shape, b_rank, act, 0, 0, want);
  gpu_expect_close(what, got, want, count, atol, rtol);
  free(a);
  free(b);
  free(want);
  free(got);
}

KILN_TEST(GpuElementwiseTest, BinaryOpsWithBroadcasting) {
  const size_t a4[] = {2, 3, 4, 5}, b3[] = {3, 1, 5}, scalar[] = {1}, same[] = {2, 3, 4, 5};
  const size_t c1[] = {1, 3, 1, 1}, row[] = {5};
  const char* names[] = {"add", "sub", "mul", "div", "pow", "max", "min", "select"};
  for (uint32_t op = 0; op < KILN_BINARY_COUNT; ++op) {
    bool transcendental = op == KILN_BINARY_POW;
    double atol = transcendental ? 1e-5 : 1e-6, rtol = transcendental ? 1e-4 : 1e-5;
    float lo = op == KILN_BINARY_DIV ? 0.5f : -2.0f;  // keep divisors away from 0
    char what[64];
    snprintf(what, sizeof(what), "%s [2,3,4,5] x [3,1,5]", names[op]);
    run_binary(what, op, a4, 4, b3, 3, lo, 2.0f, KILN_ACT_NONE, atol, rtol);
    snprintf(what, sizeof(what), "%s [2,3,4,5] x scalar", names[op]);
    run_binary(what, op, a4, 4, scalar, 1, lo, 2.0f, KILN_ACT_NONE, atol, rtol);
    snprintf(what, sizeof(what), "%s same shape", names[op]);
    run_binary(what, op, a4, 4, same, 4, lo, 2.0f, KILN_ACT_NONE, atol, rtol);
  }
  // Both operands broadcast: [1,3,1,1] x [5] -> [1,3,1,5]; with fused relu.
  run_binary("add both broadcast + relu", KILN_BINARY_ADD, c1, 4, row, 1, -1, 1,
             KILN_ACT_RELU, 1e-6, 1e-5);
}

typedef struct unary_case_t {
  uint32_t op;
  const char* name;
  float lo, hi, alpha, beta;
} unary_case_t;

KILN_TEST(GpuElementwiseTest, EveryUnaryOp) {
  const unary_case_t cases[] = {
      {KILN_ACT_NONE, "identity", -4, 4, 0, 0},
      {KILN_ACT_RELU, "relu", -4, 4, 0, 0},
      {KILN_ACT_LEAKY_RELU, "leaky_relu", -4, 4, 0.01f, 0},
      {KILN_ACT_CLIP, "clip", -8, 8, 0, 6},
      {KILN_ACT_SIGMOID, "sigmoid", -10, 10, 0, 0},
      {KILN_ACT_HARD_SIGMOID, "hard_sigmoid", -6, 6, 0.2f, 0.5f},
      {KILN_ACT_HARD_SWISH, "hard_swish", -6, 6, 0, 0},
      {KILN_ACT_TANH, "tanh", -20, 20, 0, 0},
      {KILN_ACT_GELU, "gelu", -5, 5, 0, 0},
      {KILN_ACT_ERF, "erf", -4, 4, 0, 0},
      {KILN_ACT_ELU, "elu", -5, 5, 1.0f, 0},
      {KILN_ACT_SOFTPLUS, "softplus", -30, 30, 0, 0},
      {KILN_ACT_SQRT, "sqrt", 0, 100, 0, 0},
      {KILN_ACT_EXP, "exp", -10, 10, 0, 0},
      {KILN_ACT_LOG, "log", 0.001f, 100, 0, 0},
      {KILN_ACT_NEG, "neg", -4, 4, 0, 0},
      {KILN_ACT_ABS, "abs", -4, 4, 0, 0},
      {KILN_ACT_RECIPROCAL, "reciprocal", 0.1f, 10, 0, 0},
      {KILN_ACT_MISH, "mish", -30, 30, 0, 0},
      {KILN_ACT_SOFTSIGN, "softsign", -10, 10, 0, 0},
      {KILN_ACT_SELU, "selu", -5, 5, 1.6732632f, 1.0507010f},
      {KILN_ACT_CELU, "celu", -5, 5, 2.0f, 0},
      {KILN_ACT_THRESHOLDED_RELU, "thresholded_relu", -4, 4, 1.0f, 0},
      {KILN_ACT_SHRINK, "shrink", -4, 4, 1.5f, 0.5f},
      {KILN_ACT_SIN, "sin", -6, 6, 0, 0},
      {KILN_ACT_COS, "cos", -6, 6, 0, 0},
      {KILN_ACT_TAN, "tan", -1.5f, 1.5f, 0, 0},
      {KILN_ACT_ASIN, "asin", -1, 1, 0, 0},
      {KILN_ACT_ACOS, "acos", -1, 1, 0, 0},
      {KILN_ACT_ATAN, "atan", -20, 20, 0, 0},
      {KILN_ACT_SINH, "sinh", -5, 5, 0, 0},
      {KILN_ACT_COSH, "cosh", -5, 5, 0, 0},
      {KILN_ACT_ASINH, "asinh", -50, 50, 0, 0},
      {KILN_ACT_ACOSH, "acosh", 1, 50, 0, 0},
      {KILN_ACT_ATANH, "atanh", -0.99f, 0.99f, 0, 0},
      {KILN_ACT_FLOOR, "floor", -10, 10, 0, 0},
      {KILN_ACT_CEIL, "ceil", -10, 10, 0, 0},
      {KILN_ACT_ROUND, "round", -10, 10, 0, 0},
      {KILN_ACT_SIGN, "sign", -4, 4, 0, 0},
      {KILN_ACT_SILU, "silu", -100, 30, 0, 0},
  };
  KILN_ASSERT_EQ(sizeof(cases) / sizeof(cases[0]), KILN_ACT_COUNT);
  const size_t count = 3001;  // not a multiple of any workgroup size
  for (size_t i = 0; i < KILN_ACT_COUNT; ++i) {
    const unary_case_t* c = &cases[i];
    KILN_EXPECT_EQ(c->op, i);
    float* x = gpu_random_alloc(count, 50 + (uint32_t)i, c->lo, c->hi);
    float* want = gpu_alloc(count);
    float* got = gpu_alloc(count);
    kiln_kernel_unary_params_t p = {(uint32_t)count, c->alpha, c->beta};
    kiln_kernel_config_t config = gpu_config(KILN_KERNEL_UNARY, KILN_KERNEL_STORAGE_FP32);
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_UNARY_OP, c->op));
    uint32_t grid[3];
    KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, count, grid));
    gpu_arg_t args[2] = {{x, count * 4}, {NULL, count * 4}};
    gpu_run(KILN_KERNEL_UNARY, KILN_KERNEL_VARIANT_FP32, &config, &p, sizeof(p), args, 2, 1,
            got, count * 4, grid);
    for (size_t j = 0; j < count; ++j) {
      want[j] = (float)ref_activation(c->op, x[j], c->alpha, c->beta);
    }
    gpu_expect_close(c->name, got, want, count, 1e-5, 1e-4);
    free(x);
    free(want);
    free(got);
  }
}

KILN_TEST(GpuElementwiseTest, CopyAndGridStride) {
  // More values than one grid's worth at a 1-workgroup grid: forces the
  // grid-stride loop to go round.
  const size_t count = 10007;
  float* x = gpu_random_alloc(count, 60, -1, 1);
  float* got = gpu_alloc(count);
  kiln_kernel_copy_params_t p = {(uint32_t)count};
  kiln_kernel_config_t config = gpu_config(KILN_KERNEL_COPY, KILN_KERNEL_STORAGE_FP32);
  uint32_t grid[3] = {1, 1, 1};
  gpu_arg_t args[2] = {{x, count * 4}, {NULL, count * 4}};
  gpu_run(KILN_KERNEL_COPY, KILN_KERNEL_VARIANT_FP32, &config, &p, sizeof(p), args, 2, 1,
          got, count * 4, grid);
  KILN_EXPECT_BYTES_EQ(got, x, count * 4);
  free(x);
  free(got);
}
