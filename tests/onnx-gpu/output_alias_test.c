// Graph outputs that alias something else: a graph input, a constant (an
// initializer or a folded one), the same value listed twice, and an output
// also read by a later node. Each output is checked against plain C.
#include <math.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/onnx_compile.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"

#define KILN_ALIAS_N 6
static const float kX[KILN_ALIAS_N] = {-2.5f, -1.0f, 0.0f, 0.5f, 1.5f, 3.0f};
static const float kC[KILN_ALIAS_N] = {10.0f, 20.0f, 30.0f, 40.0f, 50.0f, 60.0f};

typedef struct kiln_alias_graph_t {
  kiln_graph_t graph;
  int32_t x;  // the graph input, 2x3
  int32_t c;  // a 2x3 constant
} kiln_alias_graph_t;

static const kiln_graph_shape_t kShape = {.rank = 2, .dims = {2, 3}};

static void kiln_alias_begin(kiln_alias_graph_t* g) {
  kiln_graph_initialize(kiln_allocator_system(), "alias-test", &g->graph);
  g->graph.opset = 13;
  KILN_ASSERT_OK(kiln_gpu_graph_add_input(&g->graph, "x", &kShape, &g->x));
  KILN_ASSERT_OK(
      kiln_graph_add_constant(&g->graph, "c", KILN_GRAPH_DTYPE_F32, &kShape, kC, &g->c));
}

static int32_t kiln_alias_node(kiln_alias_graph_t* g, const char* op, int32_t a, int32_t b) {
  int32_t y = -1, node = -1, in[2] = {a, b};
  KILN_EXPECT_OK(kiln_gpu_graph_add_node(&g->graph, op, in, b >= 0 ? 2 : 1, &node, &y));
  return y;
}

static void kiln_alias_output(kiln_alias_graph_t* g, int32_t value) {
  KILN_EXPECT_OK(kiln_gpu_graph_add_output(&g->graph, value));
}

// Compiles and runs on kX; checks output o against want[o] (6 floats each).
static void kiln_alias_check(kiln_alias_graph_t* g, const float* const* want) {
  KILN_ASSERT_OK(kiln_graph_infer_shapes(&g->graph));
  kiln_graph_tensor_t input, outputs[8];
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                            &kShape, &input));
  memcpy(input.data, kX, sizeof(kX));
  kiln_gpu_run_stats_t stats;
  size_t count = g->graph.output_count;
  kiln_status_t status = kiln_gpu_compile_and_run(&g->graph, NULL, &input, outputs, &stats);
  kiln_graph_tensor_deinit(&input);
  KILN_ASSERT_OK(status);
  for (size_t o = 0; o < count; ++o) {
    KILN_EXPECT_EQ(outputs[o].byte_size, sizeof(kX));
    for (int i = 0; i < KILN_ALIAS_N && outputs[o].byte_size == sizeof(kX); ++i) {
      float got = ((const float*)outputs[o].data)[i];
      if (got != want[o][i]) {
        KILN_ADD_FAILURE("output %zu element %d: got %g, want %g", o, i, got, want[o][i]);
      }
    }
    kiln_graph_tensor_deinit(&outputs[o]);
  }
  kiln_graph_deinitialize(&g->graph);
}

static void kiln_alias_relu(const float* x, float* y) {
  for (int i = 0; i < KILN_ALIAS_N; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

// outputs [x, Relu(x)]: the Relu must read the input, not output 0.
KILN_TEST(OnnxOutputAliasTest, OutputIsGraphInput) {
  kiln_alias_graph_t g;
  kiln_alias_begin(&g);
  int32_t r = kiln_alias_node(&g, "Relu", g.x, -1);
  kiln_alias_output(&g, g.x);
  kiln_alias_output(&g, r);
  float relu[KILN_ALIAS_N];
  kiln_alias_relu(kX, relu);
  const float* want[] = {kX, relu};
  kiln_alias_check(&g, want);
}

// outputs [x, x]: one input listed twice.
KILN_TEST(OnnxOutputAliasTest, GraphInputListedTwice) {
  kiln_alias_graph_t g;
  kiln_alias_begin(&g);
  kiln_alias_output(&g, g.x);
  kiln_alias_output(&g, g.x);
  const float* want[] = {kX, kX};
  kiln_alias_check(&g, want);
}

// outputs [r, Neg(r), r] with r = Relu(x): a computed value listed twice
// and read by a later node.
KILN_TEST(OnnxOutputAliasTest, OutputListedTwiceAndReadLater) {
  kiln_alias_graph_t g;
  kiln_alias_begin(&g);
  int32_t r = kiln_alias_node(&g, "Relu", g.x, -1);
  int32_t n = kiln_alias_node(&g, "Neg", r, -1);
  kiln_alias_output(&g, r);
  kiln_alias_output(&g, n);
  kiln_alias_output(&g, r);
  float relu[KILN_ALIAS_N], neg[KILN_ALIAS_N];
  kiln_alias_relu(kX, relu);
  for (int i = 0; i < KILN_ALIAS_N; ++i) neg[i] = -relu[i];
  const float* want[] = {relu, neg, relu};
  kiln_alias_check(&g, want);
}

// outputs [c, Add(x, c)]: an initializer as an output and an operand.
KILN_TEST(OnnxOutputAliasTest, OutputIsInitializer) {
  kiln_alias_graph_t g;
  kiln_alias_begin(&g);
  int32_t s = kiln_alias_node(&g, "Add", g.x, g.c);
  kiln_alias_output(&g, g.c);
  kiln_alias_output(&g, s);
  kiln_alias_output(&g, g.c);
  float sum[KILN_ALIAS_N];
  for (int i = 0; i < KILN_ALIAS_N; ++i) sum[i] = kX[i] + kC[i];
  const float* want[] = {kC, sum, kC};
  kiln_alias_check(&g, want);
}

// outputs [d, Mul(x, d), x] with d = Add(c, c) folded to a constant at
// compile time.
KILN_TEST(OnnxOutputAliasTest, OutputIsFoldedConstant) {
  kiln_alias_graph_t g;
  kiln_alias_begin(&g);
  int32_t d = kiln_alias_node(&g, "Add", g.c, g.c);
  int32_t m = kiln_alias_node(&g, "Mul", g.x, d);
  kiln_alias_output(&g, d);
  kiln_alias_output(&g, m);
  kiln_alias_output(&g, g.x);
  float twice[KILN_ALIAS_N], product[KILN_ALIAS_N];
  for (int i = 0; i < KILN_ALIAS_N; ++i) {
    twice[i] = kC[i] + kC[i];
    product[i] = kX[i] * twice[i];
  }
  const float* want[] = {twice, product, kX};
  kiln_alias_check(&g, want);
}
