#include "conv_graph.h"

#include <stdlib.h>

#include "graph_build.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"

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

double kiln_conv_case_k(const kiln_conv_case_t* c) {
  return (double)(c->w[1] * c->w[2] * c->w[3]);
}
