#include "conv_graph.h"

#include <stdio.h>
#include <stdlib.h>

#include "graph_build.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"
#include "tensor_compare.h"

const kiln_conv_case_t kiln_conv_cases[] = {
    // ResNet's 3x3 at 14x14 (P 196: rows padded to 200), batch 2, relu.
    {{2, 64, 14, 14}, {128, 64, 3, 3}, {1, 1, 1, 1}, 1, 1, false, true},
    // stride 2, dilation 2, asymmetric pads, odd sizes.
    {{1, 32, 17, 19}, {48, 32, 3, 3}, {1, 0, 2, 1}, 2, 2, false, false},
    // 5x5 (K 400), no pads, residual + relu.
    {{1, 16, 12, 12}, {24, 16, 5, 5}, {0, 0, 0, 0}, 1, 1, true, true},
    // 3x3 at 7x7 (P 49) with 512 channels: K 4608.
    {{1, 512, 7, 7}, {64, 512, 3, 3}, {1, 1, 1, 1}, 1, 1, false, true},
    // ResNet-50's large 1x1s at 7x7 and 14x14 (rows of 49 and 196, not
    // 8-aligned: 49 through padded columns, 196 in place by quads),
    // residual + relu, and batch 2.
    {{1, 512, 7, 7}, {2048, 512, 1, 1}, {0, 0, 0, 0}, 1, 1, true, true},
    {{2, 1024, 14, 14}, {256, 1024, 1, 1}, {0, 0, 0, 0}, 1, 1, false, true},
    // A ResNet stem: 7x7 over 3 channels, stride 2 (K 147, off the multiple
    // of 8: the constant weight's rows are padded to 152), batch 2.
    {{2, 3, 23, 21}, {16, 3, 7, 7}, {3, 3, 3, 3}, 2, 1, false, true, true},
};
const size_t kiln_conv_case_count = sizeof(kiln_conv_cases) / sizeof(kiln_conv_cases[0]);

void kiln_conv_case_graph(const kiln_conv_case_t* c, kiln_graph_t* g) {
  kiln_graph_initialize(kiln_allocator_system(), "conv-case", g);
  g->opset = 13;
  const int64_t bias_dims[1] = {c->w[0]};
  int32_t w = -1;
  if (c->constant_weight) {
    const size_t count = (size_t)(c->w[0] * c->w[1] * c->w[2] * c->w[3]);
    float* data = malloc(count * sizeof(float));
    KILN_ASSERT_TRUE(data != NULL);
    uint32_t state = 12345u;
    for (size_t i = 0; i < count; ++i) {
      state = state * 1664525u + 1013904223u;
      data[i] = (float)(state >> 8) / 16777216.0f * 0.5f - 0.25f;
    }
    const kiln_graph_shape_t shape = kiln_test_shape(4, c->w);
    KILN_EXPECT_OK(kiln_graph_add_constant(g, "w", KILN_GRAPH_DTYPE_F32, &shape, data, &w));
    free(data);
  } else {
    w = kiln_test_graph_input(g, "w", 4, c->w);
  }
  const int32_t in[3] = {kiln_test_graph_input(g, "x", 4, c->x), w,
                         kiln_test_graph_input(g, "b", 1, bias_dims)};
  int32_t node = -1, y = -1;
  KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "Conv", in, 3, &node, &y));
  kiln_test_attr_ints(g, node, "pads", c->pads, 4);
  const int64_t strides[2] = {c->stride, c->stride}, dilations[2] = {c->dilation, c->dilation};
  kiln_test_attr_ints(g, node, "strides", strides, 2);
  kiln_test_attr_ints(g, node, "dilations", dilations, 2);
  if (c->residual) {
    int64_t dims[4] = {c->x[0], c->w[0], 0, 0};
    for (int d = 0; d < 2; ++d) {
      const int64_t span = c->dilation * (c->w[2 + d] - 1) + 1;
      dims[2 + d] = (c->x[2 + d] + c->pads[d] + c->pads[2 + d] - span) / c->stride + 1;
    }
    const int32_t sum[2] = {y, kiln_test_graph_input(g, "r", 4, dims)};
    KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "Add", sum, 2, &node, &y));
  }
  if (c->relu) {
    const int32_t one[1] = {y};
    KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "Relu", one, 1, &node, &y));
  }
  KILN_EXPECT_OK(kiln_gpu_graph_add_output(g, y));
}

void kiln_conv_case_compile_with(const kiln_conv_case_t* c,
                                 kiln_onnx_compile_options_t* options,
                                 kiln_gpu_capture_t* assembly) {
  kiln_graph_t g;
  kiln_conv_case_graph(c, &g);
  KILN_ASSERT_OK(kiln_gpu_capture_begin(options, assembly));
  size_t dispatches = 0;
  kiln_status_t status = kiln_gpu_dispatch_count(&g, options, &dispatches);
  kiln_gpu_capture_end(assembly);
  KILN_EXPECT_OK(status);
  kiln_graph_deinitialize(&g);
}

void kiln_conv_case_compile(const kiln_conv_case_t* c, const char* target,
                            kiln_onnx_precision_t precision, bool cooperative_matrix,
                            kiln_gpu_capture_t* assembly) {
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.precision = precision;
  options.cooperative_matrix = cooperative_matrix;
  options.targets = &target;
  options.target_count = 1;
  kiln_conv_case_compile_with(c, &options, assembly);
}

void kiln_conv_case_check_posed(const kiln_conv_case_t* c, const char* target,
                                kiln_onnx_precision_t precision, uint32_t seed,
                                const char* label) {
  kiln_graph_t g;
  kiln_conv_case_graph(c, &g);
  kiln_reference_check_t check;
  kiln_reference_check_prepare(&g, seed, &check);
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.precision = precision;
  options.cooperative_matrix = false;
  options.targets = &target;
  options.target_count = 1;
  char uri[128];
  snprintf(uri, sizeof(uri), "vulkan://0?triple=%s", target);
  kiln_test_pose_t pose;
  KILN_ASSERT_OK(kiln_test_pose_begin(uri, NULL, &pose));
  kiln_gpu_run_stats_t stats;
  kiln_status_t status =
      kiln_gpu_compile_and_run(&g, &options, check.inputs, &check.actual, &stats);
  KILN_EXPECT_OK(kiln_test_pose_end(&pose));
  KILN_EXPECT_OK(status);
  if (precision == KILN_ONNX_PRECISION_F16) {
    kiln_tensor_expect_relative_error(&check.actual, &check.expected, 1e-2, label);
  } else {
    kiln_tensor_expect_sum_error(&check.actual, &check.expected, kiln_conv_case_k(c), label);
  }
  kiln_reference_check_release(&check);
  kiln_graph_deinitialize(&g);
}

double kiln_conv_case_k(const kiln_conv_case_t* c) {
  return (double)(c->w[1] * c->w[2] * c->w[3]);
}
