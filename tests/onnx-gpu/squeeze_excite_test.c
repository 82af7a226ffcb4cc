// Squeeze-and-excitation blocks as exporters write them, x * act2(conv2(
// act1(conv1(GlobalAveragePool(x))))): the pool and both 1x1 convs lower
// to one squeeze_excite dispatch (lower_squeeze_excite.c), checked on the
// device against the C reference executor on the same graph (max|err| <=
// 1e-4 max|ref| at fp32, 1e-2 at --precision=f16), after a first call
// with other inputs (the per-image counters must start from zero every
// call). Shapes: two images of 40 channels over 33x17 pixels (five
// channel groups, two parts of pixels, an odd last part), EfficientNet's
// SiLU / Sigmoid with biases; MobileNetV3's ReLU / HardSigmoid without
// the first bias at 7x7; weight rows off whole vectors and rows of many
// vectors. Where a rule of the chain fails (the pool's
// value also a graph output; x read by nothing after the block, so its
// memory may be reused before the second conv; a block past
// KILN_SE_MAX_PRODUCT) the three dispatches stay.
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph_build.h"
#include "kiln/compiler/graph_reference.h"
#include "kiln/compiler/kernels_codes.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"
#include "tensor_compare.h"

typedef struct kiln_se_case_t {
  const char* name;
  int64_t x[4];
  int64_t hidden;
  const char* act1;
  const char* act2;
  bool bias1;
  bool pool_output;  // the pool's value is a graph output too (not fused)
  bool x_dies;       // x comes from a Relu and only the pool reads it (not fused)
} kiln_se_case_t;

static const kiln_se_case_t kCases[] = {
    {"efficientnet", {2, 40, 33, 17}, 10, "Sigmoid", "Sigmoid", true, false, false},
    {"mobilenet_v3", {1, 24, 7, 7}, 8, "Relu", "HardSigmoid", false, false, false},
    {"pool output", {1, 16, 5, 5}, 4, "Relu", "Sigmoid", true, true, false},
    {"x dies", {1, 16, 5, 5}, 4, "Relu", "Sigmoid", true, false, true},
    // Rows off whole vectors (20 channels, 5 hidden units at fp16: element
    // by element), and rows longer than a team's four vectors (1160
    // channels: 145 vectors of 8 halves, 290 of 4 floats).
    {"odd rows", {1, 20, 6, 6}, 5, "Relu", "Sigmoid", true, false, false},
    {"long rows", {1, 1160, 3, 3}, 8, "Relu", "Sigmoid", true, false, false},
    // Past KILN_SE_MAX_PRODUCT (256 x 48): the three dispatches stay.
    {"big block", {1, 256, 4, 4}, 48, "Relu", "Sigmoid", true, false, false},
};

static int32_t kiln_se_const(kiln_graph_t* g, int32_t rank, const int64_t* dims, float scale,
                             uint32_t seed) {
  kiln_graph_shape_t shape = kiln_test_shape(rank, dims);
  size_t count = 1;
  for (int32_t d = 0; d < rank; ++d) count *= (size_t)dims[d];
  float* data = malloc(count * sizeof(float));
  KILN_ASSERT_TRUE(data != NULL);
  for (size_t i = 0; i < count; ++i) {
    seed = seed * 1664525u + 1013904223u;
    data[i] = ((float)(seed >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
  }
  int32_t id = -1;
  KILN_EXPECT_OK(kiln_graph_add_constant(g, NULL, KILN_GRAPH_DTYPE_F32, &shape, data, &id));
  free(data);
  return id;
}

// conv 1x1 (in -> out channels) on `x`, then `act` (its fusion into the
// conv's epilogue is the passes' work).
static int32_t kiln_se_conv(kiln_graph_t* g, int32_t x, int64_t in, int64_t out, bool bias,
                            const char* act, uint32_t seed) {
  const int64_t wd[] = {out, in, 1, 1}, bd[] = {out};
  // Long rows scaled down so that the activations do not saturate.
  const float scale = in > 64 ? 12.0f / sqrtf((float)in) : 1.5f;
  int32_t inputs[3] = {x, kiln_se_const(g, 4, wd, scale, seed), -1};
  if (bias) inputs[2] = kiln_se_const(g, 1, bd, 0.5f, seed + 1);
  int32_t node = -1, y = -1, a = -1;
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(g, "Conv", inputs, bias ? 3 : 2, &node, &y));
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(g, act, &y, 1, &node, &a));
  return a;
}

static void kiln_se_build(const kiln_se_case_t* c, kiln_graph_t* g) {
  kiln_graph_initialize(kiln_allocator_system(), c->name, g);
  g->opset = 13;
  int32_t x = kiln_test_graph_input(g, "x", 4, c->x);
  int32_t node = -1;
  if (c->x_dies) {
    int32_t r = -1;
    KILN_ASSERT_OK(kiln_gpu_graph_add_node(g, "Relu", &x, 1, &node, &r));
    x = r;
  }
  int32_t pooled = -1;
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(g, "GlobalAveragePool", &x, 1, &node, &pooled));
  const int32_t h = kiln_se_conv(g, pooled, c->x[1], c->hidden, c->bias1, c->act1, 11);
  const int32_t s = kiln_se_conv(g, h, c->hidden, c->x[1], true, c->act2, 21);
  int32_t outputs[2] = {s, pooled};
  if (!c->x_dies) {
    const int32_t mul_in[2] = {x, s};
    KILN_ASSERT_OK(kiln_gpu_graph_add_node(g, "Mul", mul_in, 2, &node, &outputs[0]));
  }
  kiln_test_graph_finish(g, outputs, c->pool_output ? 2 : 1);
}

static void kiln_se_check(const kiln_se_case_t* c, bool f16) {
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.precision = f16 ? KILN_ONNX_PRECISION_F16 : KILN_ONNX_PRECISION_F32;
  kiln_graph_t raw, device, counted;
  kiln_se_build(c, &raw);
  kiln_se_build(c, &device);
  kiln_se_build(c, &counted);
  kiln_graph_tensor_t first, input, expected[2], actual[2];
  kiln_tensor_random_inputs(&raw, 3u, &first);
  kiln_tensor_random_inputs(&raw, 5u, &input);
  const size_t outputs = c->pool_output ? 2 : 1;
  KILN_ASSERT_OK(
      kiln_graph_reference_run(&raw, &input, 1, NULL, kiln_allocator_system(), expected));
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run_after(&device, &options, &first, &input, actual, &stats));
  for (size_t o = 0; o < outputs; ++o) {
    kiln_tensor_error_t error = kiln_tensor_max_error(&actual[o], &expected[o]);
    printf("squeeze-excite %s %s output %zu: max|err| / max|ref| %.3g (max|ref| %.3g)\n",
           c->name, f16 ? "f16" : "f32", o, error.max_err / error.max_ref, error.max_ref);
    KILN_EXPECT_TRUE(error.max_ref > 0.1);
    KILN_EXPECT_TRUE(error.max_err <= (f16 ? 1e-2 : 1e-4) * error.max_ref);
  }
  // Fused: one dispatch for the block, the Mul another; else the pool,
  // two gemvs (and the Mul, or the Relu in front). At f16 a cast of the
  // input and of each output besides.
  size_t dispatches = 0;
  KILN_ASSERT_OK(kiln_gpu_dispatch_count(&counted, &options, &dispatches));
  const bool fused = !c->pool_output && !c->x_dies &&
                     c->hidden * c->x[1] <= KILN_SE_MAX_PRODUCT;
  KILN_EXPECT_EQ(dispatches, (fused ? 2u : 4u) + (f16 ? 1u + outputs : 0u));
  for (size_t o = 0; o < outputs; ++o) {
    kiln_graph_tensor_deinit(&expected[o]);
    kiln_graph_tensor_deinit(&actual[o]);
  }
  kiln_graph_tensor_deinit(&first);
  kiln_graph_tensor_deinit(&input);
  kiln_graph_deinitialize(&raw);
  kiln_graph_deinitialize(&device);
  kiln_graph_deinitialize(&counted);
}

KILN_TEST(OnnxGpuSqueezeExciteTest, OneDispatchMatchesReference) {
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    kiln_se_check(&kCases[i], false);
    kiln_se_check(&kCases[i], true);
  }
}
