// Reductions longer than llvmpipe's loop limit (65535 loop passes per
// invocation, kernels_loops.h) through the real ONNX compile + run path:
// MatMul/Gemm k, Conv input channels, depthwise and transposed-conv windows,
// at sizes whose single-dispatch kernels would make more than 65535 and more
// than 8 x 65535 passes. Each result is checked against the plain C
// reference executor: max |gpu - ref| <= 1e-6 * sqrt(K) * max |ref| (K the
// reduction length; float32 rounding of a K-term sum grows like sqrt(K),
// while a cut-short loop is off by a sizeable fraction of max |ref|).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "graph_build.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"
#include "tensor_compare.h"

#define KILN_LOOP_MAX_INPUTS 3

typedef struct kiln_loop_graph_t {
  kiln_graph_t graph;
  int32_t node;
} kiln_loop_graph_t;

// One node `op` over the graph inputs `names`/shapes, optionally followed by
// a Relu (fused into the last part of a split reduction); output "y".
static void kiln_loop_build(kiln_loop_graph_t* out, const char* op, size_t input_count,
                            const char* const* names, const int32_t* ranks,
                            const int64_t (*dims)[4], bool relu) {
  kiln_graph_t* g = &out->graph;
  kiln_graph_initialize(kiln_allocator_system(), "loop-limit-test", g);
  g->opset = 13;
  int32_t ins[KILN_LOOP_MAX_INPUTS];
  for (size_t i = 0; i < input_count; ++i) {
    ins[i] = kiln_test_graph_input(g, names[i], ranks[i], dims[i]);
  }
  int32_t y = -1, z = -1, relu_node = -1;
  KILN_EXPECT_OK(kiln_graph_add_value(g, relu ? "t" : "y", KILN_GRAPH_DTYPE_INVALID, &y));
  KILN_EXPECT_OK(kiln_graph_add_node(g, op, "reduce_node", ins, input_count, &y, 1, &out->node));
  if (relu) {
    KILN_EXPECT_OK(kiln_graph_add_value(g, "y", KILN_GRAPH_DTYPE_INVALID, &z));
    KILN_EXPECT_OK(kiln_graph_add_node(g, "Relu", "relu", &y, 1, &z, 1, &relu_node));
    y = z;
  }
  KILN_EXPECT_OK(kiln_gpu_graph_add_output(g, y));
}

// Fills the inputs with values in [-1, 1) from a fixed LCG, runs the C
// reference, then compiles and runs on the device and compares.
static void kiln_loop_check(kiln_loop_graph_t* lg, double k) {
  kiln_graph_t* g = &lg->graph;
  kiln_reference_check_t check;
  kiln_reference_check_prepare(g, 12345u, &check);
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(g, NULL, check.inputs, &check.actual, &stats));
  kiln_tensor_expect_sum_error(&check.actual, &check.expected, k, g->nodes[lg->node].op_type);
  kiln_reference_check_release(&check);
  kiln_graph_deinitialize(g);
}

// [m, k] x [k, n]: k = 600000 (k % 4 == 0) takes gemm_cpu's vec4 path,
// 150000 passes in one dispatch; odd k the scalar path (k passes).
static void kiln_loop_matmul(int64_t m, int64_t k, int64_t n) {
  kiln_loop_graph_t lg;
  const char* names[] = {"a", "b"};
  const int32_t ranks[] = {2, 2};
  const int64_t dims[][4] = {{m, k}, {k, n}};
  kiln_loop_build(&lg, "MatMul", 2, names, ranks, dims, false);
  kiln_loop_check(&lg, (double)k);
}

KILN_TEST(OnnxGpuLoopLimitTest, MatMulLongK) {
  kiln_loop_matmul(3, 70001, 5);    // scalar k loop: just over 65535
  kiln_loop_matmul(3, 600000, 5);   // vec4 k loop: 150000 passes
  kiln_loop_matmul(2, 600001, 9);   // scalar: over 8 x 65535
  kiln_loop_matmul(5, 1000, 7);     // short: one dispatch
}

// Gemm with transA, transB, a bias row and alpha, then Relu: the parts
// add bias once and activate once.
KILN_TEST(OnnxGpuLoopLimitTest, GemmTransposedLongKWithBiasAndRelu) {
  const int64_t ks[] = {70003, 530000};
  for (size_t i = 0; i < 2; ++i) {
    kiln_loop_graph_t lg;
    const char* names[] = {"a", "b", "c"};
    const int32_t ranks[] = {2, 2, 1};
    const int64_t dims[][4] = {{ks[i], 3}, {6, ks[i]}, {6}};
    kiln_loop_build(&lg, "Gemm", 3, names, ranks, dims, true);
    kiln_test_attr_int(&lg.graph, lg.node, "transA", 1);
    kiln_test_attr_int(&lg.graph, lg.node, "transB", 1);
    kiln_test_attr_float(&lg.graph, lg.node, "alpha", 0.5f);
    kiln_loop_check(&lg, (double)ks[i]);
  }
}

// x [n, c, h, w], w [co, c / group, kh, kw], pads all `pad`.
static void kiln_loop_conv(const char* op, const int64_t x[4], const int64_t w[4],
                           int64_t group, int64_t pad, bool relu) {
  kiln_loop_graph_t lg;
  const char* names[] = {"x", "w"};
  const int32_t ranks[] = {4, 4};
  const int64_t dims[][4] = {{x[0], x[1], x[2], x[3]}, {w[0], w[1], w[2], w[3]}};
  kiln_loop_build(&lg, op, 2, names, ranks, dims, relu);
  const int64_t pads[4] = {pad, pad, pad, pad};
  kiln_test_attr_ints(&lg.graph, lg.node, "pads", pads, 4);
  if (group != 1) kiln_test_attr_int(&lg.graph, lg.node, "group", group);
  const bool transpose = strcmp(op, "ConvTranspose") == 0;
  const int64_t cig = transpose ? x[1] / group : w[1];
  kiln_loop_check(&lg, (double)(cig * w[2] * w[3]));
}

// conv2d_cpu: the general path at 4x4 outputs (16 passes per channel:
// 4096 channels cross 65535, 32768 cross 8 x 65535) and the 3-wide row
// path at 8-wide rows (4 passes per channel).
KILN_TEST(OnnxGpuLoopLimitTest, Conv3x3ManyInputChannels) {
  const int64_t x1[4] = {1, 4096, 6, 6}, w1[4] = {4, 4096, 3, 3};
  kiln_loop_conv("Conv", x1, w1, 1, 0, true);
  const int64_t x2[4] = {1, 8192, 6, 6}, w2[4] = {3, 8192, 3, 3};
  kiln_loop_conv("Conv", x2, w2, 1, 0, false);
  const int64_t x3[4] = {1, 32768, 4, 4}, w3[4] = {2, 32768, 3, 3};
  kiln_loop_conv("Conv", x3, w3, 1, 1, false);
  const int64_t x4[4] = {1, 20000, 3, 10}, w4[4] = {9, 20000, 3, 3};
  kiln_loop_conv("Conv", x4, w4, 1, 0, false);
}

// RepLKNet-style depthwise 27x27 and 31x31 at 56x56 (the sizes that came
// back wrong; 16 and 8 channels: the grid keeps the items per invocation,
// 14-16 of 8 outputs, the same at any channel count), and a 255x255 window,
// whose one channel has to be split by kernel rows.
KILN_TEST(OnnxGpuLoopLimitTest, DepthwiseLargeWindows) {
  const int64_t x1[4] = {1, 16, 56, 56}, w1[4] = {16, 1, 31, 31};
  kiln_loop_conv("Conv", x1, w1, 16, 15, false);
  const int64_t x2[4] = {1, 8, 56, 56}, w2[4] = {8, 1, 27, 27};
  kiln_loop_conv("Conv", x2, w2, 8, 13, true);
  const int64_t x3[4] = {1, 2, 258, 261}, w3[4] = {2, 1, 255, 255};
  kiln_loop_conv("Conv", x3, w3, 2, 0, false);
}

// ConvTranspose sums over input channels x taps per output.
KILN_TEST(OnnxGpuLoopLimitTest, ConvTransposeManyInputChannels) {
  const int64_t x1[4] = {1, 70000, 2, 2}, w1[4] = {70000, 2, 3, 3};
  kiln_loop_conv("ConvTranspose", x1, w1, 1, 0, false);
  const int64_t x2[4] = {1, 9000, 3, 3}, w2[4] = {9000, 2, 2, 2};
  kiln_loop_conv("ConvTranspose", x2, w2, 1, 0, false);
}

// A 1-D convolution whose one kernel row alone is longer than the loop
// budget cannot be split further: refused at compile time, naming the node.
KILN_TEST(OnnxGpuLoopLimitTest, KernelRowPastTheBudgetIsRefused) {
  kiln_loop_graph_t lg;
  const char* names[] = {"x", "w"};
  const int32_t ranks[] = {3, 3};
  const int64_t dims[][4] = {{1, 1, 70010}, {1, 1, 70000}};
  kiln_loop_build(&lg, "Conv", 2, names, ranks, dims, false);
  KILN_ASSERT_OK(kiln_graph_infer_shapes(&lg.graph));
  kiln_graph_tensor_t inputs[2], actual;
  memset(&actual, 0, sizeof(actual));
  for (size_t i = 0; i < 2; ++i) {
    KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                              &lg.graph.values[lg.graph.inputs[i]].shape,
                                              &inputs[i]));
  }
  kiln_gpu_run_stats_t stats;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_UNIMPLEMENTED,
                             "node 'reduce_node' (op Conv, opset 13): one kernel row of 70000 "
                             "taps exceeds the 65535 loop passes",
                             kiln_gpu_compile_and_run(&lg.graph, NULL, inputs, &actual, &stats));
  for (size_t i = 0; i < 2; ++i) kiln_graph_tensor_deinit(&inputs[i]);
  kiln_graph_tensor_deinit(&actual);
  kiln_graph_deinitialize(&lg.graph);
}

// The same compile + run path for the lowering's GEMM shapes: a batched A
// times a 2-D weight (the batch folds into M: one GEMM of batch * m rows,
// also from one-row matrices, the seq-first transformer case), one-row
// products (gemv) from MatMul and from Gemm with transB, and a batched B
// (no folding).
KILN_TEST(OnnxGpuLoopLimitTest, MatMulBatchFoldAndOneRowProducts) {
  const int64_t shapes[][2][4] = {
      {{4, 3, 40}, {40, 7}},     // folds: 12 x 40 x 7
      {{6, 1, 33}, {33, 9}},     // folds from one-row matrices: 6 x 33 x 9
      {{2, 3, 5, 16}, {16, 6}},  // rank 4 folds: 30 x 16 x 6
      {{1, 1, 130}, {130, 11}},  // one row: gemv
      {{3, 4, 20}, {3, 20, 5}},  // batched B: 3 GEMMs
  };
  const int32_t ranks[][2] = {{3, 2}, {3, 2}, {4, 2}, {3, 2}, {3, 3}};
  for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); ++i) {
    kiln_loop_graph_t lg;
    const char* names[] = {"a", "b"};
    kiln_loop_build(&lg, "MatMul", 2, names, ranks[i], shapes[i], i % 2 == 0);
    kiln_loop_check(&lg, (double)shapes[i][1][ranks[i][1] - 2]);
  }
  // Gemm, one row, transB (a classifier's Linear): gemv over k-contiguous B.
  kiln_loop_graph_t lg;
  const char* names[] = {"a", "b", "c"};
  const int32_t gemm_ranks[] = {2, 2, 1};
  const int64_t dims[][4] = {{1, 300}, {10, 300}, {10}};
  kiln_loop_build(&lg, "Gemm", 3, names, gemm_ranks, dims, true);
  kiln_test_attr_int(&lg.graph, lg.node, "transB", 1);
  kiln_loop_check(&lg, 300.0);
}
