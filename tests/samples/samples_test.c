// Each sample module runs through kiln-run-module on the default device
// (lavapipe in CI, under the validation layer) and its result is checked
// with --expected_output against a plain C reference computed here in
// double precision. Tolerances: exact for elementwise products; 1e-4
// absolute for matmul/MLP (f32 accumulation over K <= 64 of values < 1);
// 1e-6 for softmax probabilities.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../samples/mlp/mlp_weights.h"
#include "kiln_test.h"
#include "sample_runner.h"

static char output[1 << 16];

// Runs `module` on inputs a (and b) and expects `expected` within the
// f32 threshold; then checks a corrupted expectation is caught.
static void kiln_expect_sample(const char* module, kiln_host_tensor_t* a,
                               kiln_host_tensor_t* b,
                               kiln_host_tensor_t* expected,
                               const char* threshold) {
  char args[4096];
  const char* a_arg = kiln_test_npy_argument(a, 0);
  const char* b_arg = b ? kiln_test_npy_argument(b, 1) : NULL;
  const char* e_arg = kiln_test_npy_argument(expected, 2);
  snprintf(args, sizeof(args),
           "--module='%s' --function=predict --input='%s' %s%s%s "
           "--expected_output='%s' --expected_f32_threshold=%s "
           "--output_max_element_count=8",
           kiln_test_sample_path(module), a_arg, b ? "--input='" : "",
           b ? b_arg : "", b ? "'" : "", e_arg, threshold);
  int code = kiln_test_run_tool(args, output, sizeof(output));
  KILN_EXPECT_EQ(code, 0);
  KILN_EXPECT_CONTAINS(output, "EXEC @predict");
  KILN_EXPECT_CONTAINS(output, "[SUCCESS] all function outputs matched");
  if (code != 0) printf("%s\n", output);
  // A wrong expectation must fail: the comparison is not vacuous.
  float* data = (float*)expected->data;
  data[expected->element_count / 2] += 0.5f;
  e_arg = kiln_test_npy_argument(expected, 2);
  snprintf(args, sizeof(args),
           "--module='%s' --input='%s' %s%s%s --expected_output='%s'",
           kiln_test_sample_path(module), a_arg, b ? "--input='" : "",
           b ? b_arg : "", b ? "'" : "", e_arg);
  code = kiln_test_run_tool(args, output, sizeof(output));
  KILN_EXPECT_EQ(code, 1);
  KILN_EXPECT_CONTAINS(output, "[FAILED] result[0]: FAILED_PRECONDITION: element");
}

static void kiln_fill(kiln_host_tensor_t* tensor, kiln_test_rng_t* rng,
                      float lo, float hi) {
  float* data = (float*)tensor->data;
  for (size_t i = 0; i < tensor->element_count; ++i) {
    data[i] = kiln_test_rng_uniform(rng, lo, hi);
  }
}

KILN_TEST(SamplesTest, ElementwiseMultiply) {
  kiln_test_rng_t rng = {1};
  int64_t n[1] = {1000};  // not a multiple of any workgroup size
  kiln_host_tensor_t a = kiln_test_f32_tensor(1, n);
  kiln_host_tensor_t b = kiln_test_f32_tensor(1, n);
  kiln_host_tensor_t c = kiln_test_f32_tensor(1, n);
  kiln_fill(&a, &rng, -4, 4);
  kiln_fill(&b, &rng, -4, 4);
  for (int i = 0; i < 1000; ++i) {
    kiln_test_f32_data(&c)[i] = kiln_test_f32_data(&a)[i] * kiln_test_f32_data(&b)[i];
  }
  kiln_expect_sample("elementwise_mul", &a, &b, &c, "0");
  kiln_host_tensor_deinit(&a);
  kiln_host_tensor_deinit(&b);
  kiln_host_tensor_deinit(&c);
}

// out[m][n] = sum_k a[m][k] * b[k][n], in double.
static void kiln_reference_matmul(const float* a, const float* b, float* out,
                                  int m, int n, int k) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int p = 0; p < k; ++p) sum += (double)a[i * k + p] * b[p * n + j];
      out[i * n + j] = (float)sum;
    }
  }
}

KILN_TEST(SamplesTest, TiledMatmul) {
  kiln_test_rng_t rng = {2};
  const int m = 37, k = 50, n = 29;  // ragged against every tile size
  int64_t a_dims[2] = {m, k}, b_dims[2] = {k, n}, c_dims[2] = {m, n};
  kiln_host_tensor_t a = kiln_test_f32_tensor(2, a_dims);
  kiln_host_tensor_t b = kiln_test_f32_tensor(2, b_dims);
  kiln_host_tensor_t c = kiln_test_f32_tensor(2, c_dims);
  kiln_fill(&a, &rng, -1, 1);
  kiln_fill(&b, &rng, -1, 1);
  kiln_reference_matmul(kiln_test_f32_data(&a), kiln_test_f32_data(&b),
                        kiln_test_f32_data(&c), m, n, k);
  kiln_expect_sample("matmul", &a, &b, &c, "1e-4");
  kiln_host_tensor_deinit(&a);
  kiln_host_tensor_deinit(&b);
  kiln_host_tensor_deinit(&c);
}

KILN_TEST(SamplesTest, Softmax) {
  kiln_test_rng_t rng = {3};
  const int rows = 7, cols = 300;
  int64_t dims[2] = {rows, cols};
  kiln_host_tensor_t x = kiln_test_f32_tensor(2, dims);
  kiln_host_tensor_t y = kiln_test_f32_tensor(2, dims);
  kiln_fill(&x, &rng, -20, 20);
  const float* in = kiln_test_f32_data(&x);
  for (int r = 0; r < rows; ++r) {
    double max = in[r * cols];
    for (int c = 1; c < cols; ++c) max = fmax(max, in[r * cols + c]);
    double sum = 0;
    for (int c = 0; c < cols; ++c) sum += exp(in[r * cols + c] - max);
    for (int c = 0; c < cols; ++c) {
      kiln_test_f32_data(&y)[r * cols + c] = (float)(exp(in[r * cols + c] - max) / sum);
    }
  }
  kiln_expect_sample("softmax", &x, NULL, &y, "1e-6");
  kiln_host_tensor_deinit(&x);
  kiln_host_tensor_deinit(&y);
}

KILN_TEST(SamplesTest, TwoLayerPerceptronWithRodataWeights) {
  kiln_test_rng_t rng = {4};
  const int batch = 5;
  int64_t x_dims[2] = {batch, KILN_MLP_IN}, y_dims[2] = {batch, KILN_MLP_OUT};
  kiln_host_tensor_t x = kiln_test_f32_tensor(2, x_dims);
  kiln_host_tensor_t y = kiln_test_f32_tensor(2, y_dims);
  kiln_fill(&x, &rng, -1, 1);
  const float* in = kiln_test_f32_data(&x);
  for (int r = 0; r < batch; ++r) {
    double hidden[KILN_MLP_HIDDEN];
    for (int j = 0; j < KILN_MLP_HIDDEN; ++j) {
      double sum = kiln_mlp_weight(1, j);
      for (int i = 0; i < KILN_MLP_IN; ++i) {
        sum += in[r * KILN_MLP_IN + i] * (double)kiln_mlp_weight(0, i * KILN_MLP_HIDDEN + j);
      }
      hidden[j] = sum > 0 ? sum : 0;
    }
    for (int o = 0; o < KILN_MLP_OUT; ++o) {
      double sum = kiln_mlp_weight(3, o);
      for (int j = 0; j < KILN_MLP_HIDDEN; ++j) {
        sum += hidden[j] * kiln_mlp_weight(2, j * KILN_MLP_OUT + o);
      }
      kiln_test_f32_data(&y)[r * KILN_MLP_OUT + o] = (float)sum;
    }
  }
  kiln_expect_sample("mlp", &x, NULL, &y, "1e-4");
  kiln_host_tensor_deinit(&x);
  kiln_host_tensor_deinit(&y);
}
