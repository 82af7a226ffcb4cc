// SiLU as exporters write it, Mul(y, Sigmoid(y)), after a Conv, a depthwise
// Conv, a Gemm and on its own: compiled for the device (pass_fuse_silu.c
// makes it one kiln.Silu, which the epilogue pass folds into the producer)
// against the C reference executor on the unfused graph: max|err| <=
// 1e-4 max|ref| at fp32, 1e-2 at --precision=f16 (fp16 storage). The fused
// graph must cost no dispatch more than the producer alone.
#include <stdio.h>
#include <string.h>

#include "graph_build.h"
#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/graph_reference.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"
#include "tensor_compare.h"

typedef enum {
  KILN_SILU_CONV,
  KILN_SILU_DEPTHWISE,
  KILN_SILU_GEMM,
  KILN_SILU_LONE,
} kiln_silu_case_t;

static const char* const kCaseNames[] = {"conv", "depthwise", "gemm", "lone"};

// A constant of dims[0..rank) with values in [-scale, scale) from an LCG.
static int32_t kiln_silu_const(kiln_graph_t* g, int32_t rank, const int64_t* dims, float scale,
                               uint32_t seed) {
  kiln_graph_shape_t shape = kiln_test_shape(rank, dims);
  size_t count = 1;
  for (int32_t d = 0; d < rank; ++d) count *= (size_t)dims[d];
  float data[4096];
  KILN_EXPECT_TRUE(count <= sizeof(data) / sizeof(data[0]));
  for (size_t i = 0; i < count; ++i) {
    seed = seed * 1664525u + 1013904223u;
    data[i] = ((float)(seed >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
  }
  int32_t id = -1;
  KILN_EXPECT_OK(kiln_graph_add_constant(g, NULL, KILN_GRAPH_DTYPE_F32, &shape, data, &id));
  return id;
}

// The producer of `c` (none for the lone case), then SiLU when `silu`, the
// Mul's operands swapped when `swapped`. Weights are scaled so that the
// products span about [-8, 8]: both tails of the sigmoid are exercised.
static void kiln_silu_build(kiln_silu_case_t c, bool silu, bool swapped, kiln_graph_t* g) {
  kiln_graph_initialize(kiln_allocator_system(), kCaseNames[c], g);
  g->opset = 13;
  int32_t node = -1, y = -1;
  if (c == KILN_SILU_GEMM) {
    int64_t xd[] = {9, 40}, wd[] = {24, 40}, bd[] = {24};
    int32_t in[] = {kiln_test_graph_input(g, "x", 2, xd), kiln_silu_const(g, 2, wd, 0.5f, 1),
                    kiln_silu_const(g, 1, bd, 1.0f, 2)};
    KILN_ASSERT_OK(kiln_gpu_graph_add_node(g, "Gemm", in, 3, &node, &y));
    kiln_test_attr_int(g, node, "transB", 1);
  } else if (c == KILN_SILU_LONE) {
    int64_t xd[] = {2, 3, 37};
    y = kiln_test_graph_input(g, "x", 3, xd);
  } else {
    const bool dw = c == KILN_SILU_DEPTHWISE;
    int64_t xd[] = {1, 8, 9, 11}, wd[] = {dw ? 8 : 16, dw ? 1 : 8, 3, 3}, bd[] = {dw ? 8 : 16};
    int32_t in[] = {kiln_test_graph_input(g, "x", 4, xd),
                    kiln_silu_const(g, 4, wd, dw ? 2.0f : 0.6f, 3),
                    kiln_silu_const(g, 1, bd, 1.0f, 4)};
    KILN_ASSERT_OK(kiln_gpu_graph_add_node(g, "Conv", in, 3, &node, &y));
    const int64_t pads[] = {1, 1, 1, 1};
    kiln_test_attr_ints(g, node, "pads", pads, 4);
    if (dw) kiln_test_attr_int(g, node, "group", 8);
  }
  int32_t out = y;
  if (silu || c == KILN_SILU_LONE) {
    const char* op = silu ? "Sigmoid" : "Relu";  // the lone case's baseline: one unary op
    int32_t s = -1;
    KILN_ASSERT_OK(kiln_gpu_graph_add_node(g, op, &y, 1, &node, &s));
    out = s;
    if (silu) {
      int32_t mul_in[] = {swapped ? s : y, swapped ? y : s};
      KILN_ASSERT_OK(kiln_gpu_graph_add_node(g, "Mul", mul_in, 2, &node, &out));
    }
  }
  kiln_test_graph_finish(g, &out, 1);
}

static size_t kiln_silu_live(const kiln_graph_t* g, const char* op) {
  size_t count = 0;
  for (size_t n = 0; n < g->node_count; ++n) {
    count += !g->nodes[n].removed && strcmp(g->nodes[n].op_type, op) == 0;
  }
  return count;
}

static void kiln_silu_check(kiln_silu_case_t c, bool swapped, bool f16) {
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.precision = f16 ? KILN_ONNX_PRECISION_F16 : KILN_ONNX_PRECISION_F32;
  kiln_graph_t raw, device, baseline;
  kiln_silu_build(c, true, swapped, &raw);
  kiln_silu_build(c, true, swapped, &device);
  kiln_graph_tensor_t input, expected, actual;
  kiln_tensor_random_inputs(&raw, 7u + (uint32_t)c, &input);
  // Inputs in [-1, 1) reach the lone SiLU: stretch them over both tails.
  float* x = (float*)input.data;
  for (size_t i = 0; c == KILN_SILU_LONE && i < input.byte_size / sizeof(float); ++i) x[i] *= 12.0f;
  KILN_ASSERT_OK(
      kiln_graph_reference_run(&raw, &input, 1, NULL, kiln_allocator_system(), &expected));
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&device, &options, &input, &actual, &stats));
  // The pass fired: no Sigmoid or Mul is left, the SiLU sits in the
  // producer's epilogue (or is the one kiln.Silu node).
  KILN_EXPECT_EQ(kiln_silu_live(&device, "Sigmoid") + kiln_silu_live(&device, "Mul"), 0u);
  KILN_EXPECT_EQ(kiln_silu_live(&device, "kiln.Silu"), c == KILN_SILU_LONE ? 1u : 0u);
  kiln_tensor_error_t error = kiln_tensor_max_error(&actual, &expected);
  const double tolerance = f16 ? 1e-2 : 1e-4;
  printf("silu %s%s %s: max|err| / max|ref| %.3g (max|ref| %.3g)\n", kCaseNames[c],
         swapped ? " (swapped)" : "", f16 ? "f16" : "f32", error.max_err / error.max_ref,
         error.max_ref);
  KILN_EXPECT_TRUE(error.max_ref > 1.0);
  KILN_EXPECT_TRUE(error.max_err <= tolerance * error.max_ref);
  // As many dispatches as the producer alone (the lone case: one unary op).
  kiln_graph_t fused;
  kiln_silu_build(c, true, swapped, &fused);
  kiln_silu_build(c, false, false, &baseline);
  size_t with_silu = 0, without = 0;
  KILN_ASSERT_OK(kiln_gpu_dispatch_count(&fused, &options, &with_silu));
  KILN_ASSERT_OK(kiln_gpu_dispatch_count(&baseline, &options, &without));
  KILN_EXPECT_EQ(with_silu, without);
  kiln_graph_deinitialize(&fused);
  kiln_graph_deinitialize(&baseline);
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&expected);
  kiln_graph_tensor_deinit(&actual);
  kiln_graph_deinitialize(&raw);
  kiln_graph_deinitialize(&device);
}

KILN_TEST(OnnxGpuSiluTest, FusedMatchesUnfusedReferenceF32) {
  for (int c = KILN_SILU_CONV; c <= KILN_SILU_LONE; ++c) {
    kiln_silu_check((kiln_silu_case_t)c, false, false);
    kiln_silu_check((kiln_silu_case_t)c, true, false);
  }
}

KILN_TEST(OnnxGpuSiluTest, FusedMatchesUnfusedReferenceF16) {
  for (int c = KILN_SILU_CONV; c <= KILN_SILU_LONE; ++c) {
    kiln_silu_check((kiln_silu_case_t)c, c == KILN_SILU_GEMM, true);
  }
}
