// Passes on hand-built graphs. Each graph is built twice: one copy runs
// raw, the other after the passes; the reference executor must agree
// (rtol 1e-5, atol 1e-6: folding reorders float arithmetic), and the pass
// must have rewritten what it claims.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/graph_memory_plan.h"
#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/graph_print.h"
#include "kiln/compiler/graph_reference.h"
#include "kiln_test.h"
#include "onnx_test_util.h"

typedef void (*kiln_build_fn_t)(kiln_graph_t* graph);

static uint32_t kiln_rng = 12345;
static float kiln_random(void) {
  kiln_rng = kiln_rng * 1664525u + 1013904223u;
  return (float)((kiln_rng >> 8) & 0xffff) / 65536.0f * 2.0f - 1.0f;
}

static int32_t kiln_const(kiln_graph_t* g, int32_t rank, const int64_t* dims,
                          float scale, float offset) {
  kiln_graph_shape_t shape = {rank, {0}};
  size_t count = 1;
  for (int32_t i = 0; i < rank; ++i) {
    shape.dims[i] = dims[i];
    count *= (size_t)dims[i];
  }
  float* data = malloc(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) data[i] = kiln_random() * scale + offset;
  int32_t id = -1;
  kiln_status_t status =
      kiln_graph_add_constant(g, NULL, KILN_GRAPH_DTYPE_F32, &shape, data, &id);
  free(data);
  KILN_EXPECT_OK(status);
  return id;
}

static int32_t kiln_input(kiln_graph_t* g, const char* name, int32_t rank,
                          const int64_t* dims) {
  int32_t id = -1;
  KILN_EXPECT_OK(kiln_graph_add_value(g, name, KILN_GRAPH_DTYPE_F32, &id));
  g->values[id].has_shape = true;
  g->values[id].shape.rank = rank;
  memcpy(g->values[id].shape.dims, dims, (size_t)rank * sizeof(int64_t));
  g->values[id].is_input = true;
  KILN_EXPECT_OK(kiln_allocator_realloc_array(
      g->allocator, g->input_count + 1, sizeof(int32_t), (void**)&g->inputs));
  g->inputs[g->input_count++] = id;
  return id;
}

static int32_t kiln_node(kiln_graph_t* g, const char* op, const int32_t* in,
                         size_t in_count) {
  int32_t out = -1, node = -1;
  KILN_EXPECT_OK(kiln_graph_add_value(g, NULL, KILN_GRAPH_DTYPE_INVALID, &out));
  KILN_EXPECT_OK(kiln_graph_add_node(g, op, NULL, in, in_count, &out, 1, &node));
  return out;
}

static void kiln_output(kiln_graph_t* g, int32_t id) {
  KILN_EXPECT_OK(kiln_allocator_realloc_array(
      g->allocator, g->output_count + 1, sizeof(int32_t), (void**)&g->outputs));
  g->outputs[g->output_count++] = id;
  g->values[id].is_output = true;
}

static void kiln_attr_ints(kiln_graph_t* g, const char* name,
                           const int64_t* values, size_t count) {
  kiln_graph_attr_t attr;
  memset(&attr, 0, sizeof(attr));
  attr.name = name;
  attr.type = KILN_GRAPH_ATTR_INTS;
  attr.ints = values;
  attr.count = count;
  KILN_EXPECT_OK(kiln_graph_node_set_attr(g, (int32_t)g->node_count - 1, &attr));
}

// Builds, infers, optionally runs the passes; returns the graph.
static void kiln_make(kiln_build_fn_t build, bool passes, kiln_graph_t* g) {
  kiln_rng = 12345;
  kiln_graph_initialize(kiln_allocator_system(), "test", g);
  g->opset = 13;
  build(g);
  KILN_ASSERT_OK(kiln_graph_infer_shapes(g));
  if (passes) KILN_ASSERT_OK(kiln_graph_run_default_passes(g));
}

static size_t kiln_live(const kiln_graph_t* g, const char* op) {
  size_t count = 0;
  for (size_t n = 0; n < g->node_count; ++n) {
    if (!g->nodes[n].removed && strcmp(g->nodes[n].op_type, op) == 0) ++count;
  }
  return count;
}

static const kiln_graph_node_t* kiln_find_live(const kiln_graph_t* g,
                                               const char* op) {
  for (size_t n = 0; n < g->node_count; ++n) {
    if (!g->nodes[n].removed && strcmp(g->nodes[n].op_type, op) == 0) {
      return &g->nodes[n];
    }
  }
  return NULL;
}

// Runs raw and optimized (with a memory plan) on the same random input.
static void kiln_compare_before_after(kiln_build_fn_t build,
                                      kiln_graph_t* optimized) {
  kiln_graph_t raw;
  kiln_make(build, false, &raw);
  kiln_make(build, true, optimized);
  kiln_graph_tensor_t inputs[2];
  KILN_ASSERT_EQ(raw.input_count, optimized->input_count);
  for (size_t i = 0; i < raw.input_count; ++i) {
    const kiln_graph_value_t* v = &raw.values[raw.inputs[i]];
    KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), v->dtype,
                                              &v->shape, &inputs[i]));
    float* data = (float*)inputs[i].data;
    for (size_t k = 0; k < inputs[i].byte_size / 4; ++k) data[k] = kiln_random();
  }
  kiln_graph_memory_plan_t plan;
  KILN_ASSERT_OK(kiln_graph_memory_plan_build(optimized, 64,
                                              kiln_allocator_system(), &plan));
  KILN_ASSERT_OK(kiln_graph_memory_plan_verify(optimized, &plan));
  kiln_graph_tensor_t before[4], after[4];
  KILN_ASSERT_OK(kiln_graph_reference_run(&raw, inputs, raw.input_count, NULL,
                                          kiln_allocator_system(), before));
  KILN_ASSERT_OK(kiln_graph_reference_run(optimized, inputs, raw.input_count,
                                          &plan, kiln_allocator_system(), after));
  for (size_t i = 0; i < raw.output_count; ++i) {
    char message[256];
    bool same = kiln_onnx_test_compare(&after[i], &before[i], 1e-5, 1e-6,
                                       message, sizeof(message));
    if (!same) KILN_ADD_FAILURE("output %zu: %s", i, message);
    kiln_graph_tensor_deinit(&before[i]);
    kiln_graph_tensor_deinit(&after[i]);
  }
  for (size_t i = 0; i < raw.input_count; ++i) kiln_graph_tensor_deinit(&inputs[i]);
  kiln_graph_memory_plan_deinit(&plan);
  kiln_graph_deinitialize(&raw);
}

// Conv(+B) -> BatchNormalization -> Add(residual: input) -> Relu.
static void kiln_build_conv_bn_residual(kiln_graph_t* g) {
  int64_t xd[] = {1, 4, 6, 6}, wd[] = {4, 4, 3, 3}, cd[] = {4};
  int32_t x = kiln_input(g, "x", 4, xd);
  int32_t conv_in[] = {x, kiln_const(g, 4, wd, 0.5f, 0.0f),
                       kiln_const(g, 1, cd, 0.5f, 0.0f)};
  int32_t conv = kiln_node(g, "Conv", conv_in, 3);
  int64_t pads[] = {1, 1, 1, 1};
  kiln_attr_ints(g, "pads", pads, 4);
  int32_t bn_in[] = {conv, kiln_const(g, 1, cd, 0.5f, 1.0f),
                     kiln_const(g, 1, cd, 0.5f, 0.0f),
                     kiln_const(g, 1, cd, 0.5f, 0.0f),
                     kiln_const(g, 1, cd, 0.4f, 1.0f)};
  int32_t bn = kiln_node(g, "BatchNormalization", bn_in, 5);
  int32_t add_in[] = {x, bn};
  int32_t add = kiln_node(g, "Add", add_in, 2);
  int32_t relu = kiln_node(g, "Relu", &add, 1);
  kiln_output(g, relu);
}

KILN_TEST(GraphPassesTest, FoldsBatchNormAndFusesResidualAndRelu) {
  kiln_graph_t g;
  kiln_compare_before_after(kiln_build_conv_bn_residual, &g);
  KILN_EXPECT_EQ(kiln_live(&g, "BatchNormalization"), 0u);
  KILN_EXPECT_EQ(kiln_live(&g, "Add"), 0u);
  KILN_EXPECT_EQ(kiln_live(&g, "Relu"), 0u);
  const kiln_graph_node_t* conv = kiln_find_live(&g, "Conv");
  KILN_ASSERT_TRUE(conv != NULL);
  const kiln_graph_attr_t* act = kiln_graph_node_find_attr(conv, "kiln.activation");
  KILN_ASSERT_TRUE(act != NULL);
  KILN_EXPECT_STREQ(act->s, "Relu");
  const kiln_graph_attr_t* first = kiln_graph_node_find_attr(conv, "kiln.residual_first");
  KILN_ASSERT_TRUE(first != NULL);
  KILN_EXPECT_EQ(first->i, 1);
  char* text = NULL;
  size_t size = 0;
  FILE* stream = open_memstream(&text, &size);
  kiln_graph_print(&g, stream);
  fclose(stream);
  KILN_EXPECT_CONTAINS(text, "kiln.activation=\"Relu\"");
  KILN_EXPECT_CONTAINS(text, "input %x:float32[1x4x6x6]");
  KILN_EXPECT_CONTAINS(text, " = Conv '");
  free(text);
  kiln_graph_deinitialize(&g);
}

// MatMul -> Add(constant bias) -> Clip(0, 6) -> Add(residual after).
static void kiln_build_matmul_bias_clip(kiln_graph_t* g) {
  int64_t xd[] = {2, 3, 8}, wd[] = {8, 8}, bd[] = {8};
  int32_t x = kiln_input(g, "x", 3, xd);
  int32_t mm_in[] = {x, kiln_const(g, 2, wd, 1.0f, 0.0f)};
  int32_t mm = kiln_node(g, "MatMul", mm_in, 2);
  int32_t add_in[] = {mm, kiln_const(g, 1, bd, 1.0f, 0.0f)};
  int32_t add = kiln_node(g, "Add", add_in, 2);
  kiln_graph_shape_t scalar = {0, {0}};
  float low = 0.0f, high = 0.5f;
  int32_t lo = -1, hi = -1;
  KILN_EXPECT_OK(kiln_graph_add_constant(g, "lo", KILN_GRAPH_DTYPE_F32, &scalar, &low, &lo));
  KILN_EXPECT_OK(kiln_graph_add_constant(g, "hi", KILN_GRAPH_DTYPE_F32, &scalar, &high, &hi));
  int32_t clip_in[] = {add, lo, hi};
  int32_t clip = kiln_node(g, "Clip", clip_in, 3);
  int32_t res_in[] = {clip, x};
  int32_t res = kiln_node(g, "Add", res_in, 2);
  kiln_output(g, res);
}

// The kernels add a residual before the activation only, so a residual
// after the activation stays a separate Add.
KILN_TEST(GraphPassesTest, FusesMatMulBiasClipButNotLateResidual) {
  kiln_graph_t g;
  kiln_compare_before_after(kiln_build_matmul_bias_clip, &g);
  KILN_EXPECT_EQ(kiln_live(&g, "Add"), 1u);
  KILN_EXPECT_EQ(kiln_live(&g, "Clip"), 0u);
  const kiln_graph_node_t* mm = kiln_find_live(&g, "MatMul");
  KILN_ASSERT_TRUE(mm != NULL);
  KILN_EXPECT_TRUE(kiln_graph_node_find_attr(mm, "kiln.bias") != NULL);
  KILN_EXPECT_TRUE(kiln_graph_node_find_attr(mm, "kiln.residual") == NULL);
  const kiln_graph_attr_t* beta = kiln_graph_node_find_attr(mm, "kiln.activation_beta");
  KILN_ASSERT_TRUE(beta != NULL);
  KILN_EXPECT_NEAR(beta->f, 0.5, 0.0);
  kiln_graph_deinitialize(&g);
}

// A batched constant addend (attention bias [heads, L, L]) is no matrix bias;
// one of the output's full shape becomes the residual.
static void kiln_build_matmul_batched_bias(kiln_graph_t* g) {
  int64_t xd[] = {2, 4, 4}, wd[] = {2, 4, 4}, bd[] = {2, 4, 4};
  int32_t x = kiln_input(g, "x", 3, xd);
  int32_t mm_in[] = {x, kiln_const(g, 3, wd, 0.5f, 0.25f)};
  int32_t mm = kiln_node(g, "MatMul", mm_in, 2);
  int32_t add_in[] = {mm, kiln_const(g, 3, bd, 0.75f, -1.0f)};
  kiln_output(g, kiln_node(g, "Add", add_in, 2));
}

KILN_TEST(GraphPassesTest, FusesBatchedConstantAddAsResidual) {
  kiln_graph_t g;
  kiln_compare_before_after(kiln_build_matmul_batched_bias, &g);
  KILN_EXPECT_EQ(kiln_live(&g, "Add"), 0u);
  const kiln_graph_node_t* mm = kiln_find_live(&g, "MatMul");
  KILN_ASSERT_TRUE(mm != NULL);
  KILN_EXPECT_TRUE(kiln_graph_node_find_attr(mm, "kiln.bias") == NULL);
  KILN_EXPECT_TRUE(kiln_graph_node_find_attr(mm, "kiln.residual") != NULL);
  kiln_graph_deinitialize(&g);
}

// ViT's attention output: a MatMul [6, 8] -> Reshape [6, 1, 8] -> Transpose
// [1, 6, 8] (size-1 dims only: a view) -> Add of the residual stream (the
// input r, [1, 6, 8]) -> Tanh. kiln_view_add_variant picks what must not
// fuse: the Add is a graph output, the residual broadcasts, or the view
// chain's middle value has a second reader.
enum {
  KILN_VIEW_ADD_FUSES,
  KILN_VIEW_ADD_IS_OUTPUT,
  KILN_VIEW_ADD_BROADCAST,
  KILN_VIEW_ADD_SHARED_VIEW,
};
static int kiln_view_add_variant;
static void kiln_build_matmul_views_add(kiln_graph_t* g) {
  int64_t xd[] = {6, 8}, wd[] = {8, 8}, rd[] = {1, 6, 8}, bd[] = {1, 1, 8};
  int32_t x = kiln_input(g, "x", 2, xd);
  const bool broadcast = kiln_view_add_variant == KILN_VIEW_ADD_BROADCAST;
  int32_t r = kiln_input(g, "r", 3, broadcast ? bd : rd);
  int32_t mm_in[] = {x, kiln_const(g, 2, wd, 1.0f, 0.0f)};
  int32_t mm = kiln_node(g, "MatMul", mm_in, 2);
  int64_t new_shape[] = {6, 1, 8};
  kiln_graph_shape_t s = {1, {3}};
  int32_t shape_id = -1;
  KILN_EXPECT_OK(kiln_graph_add_constant(g, NULL, KILN_GRAPH_DTYPE_I64, &s, new_shape, &shape_id));
  int32_t reshape_in[] = {mm, shape_id};
  int32_t reshaped = kiln_node(g, "Reshape", reshape_in, 2);
  int32_t t = kiln_node(g, "Transpose", &reshaped, 1);
  const int64_t perm[] = {1, 0, 2};
  kiln_attr_ints(g, "perm", perm, 3);
  int32_t add_in[] = {r, t};
  int32_t sum = kiln_node(g, "Add", add_in, 2);
  if (kiln_view_add_variant == KILN_VIEW_ADD_IS_OUTPUT) {
    kiln_output(g, sum);
    return;
  }
  if (kiln_view_add_variant == KILN_VIEW_ADD_SHARED_VIEW) {
    kiln_output(g, kiln_node(g, "Neg", &reshaped, 1));
  }
  kiln_output(g, kiln_node(g, "Tanh", &sum, 1));
}

KILN_TEST(GraphPassesTest, FusesResidualAddBehindViews) {
  kiln_graph_t g;
  kiln_view_add_variant = KILN_VIEW_ADD_FUSES;
  kiln_compare_before_after(kiln_build_matmul_views_add, &g);
  KILN_EXPECT_EQ(kiln_live(&g, "Add"), 0u);
  KILN_EXPECT_EQ(kiln_live(&g, "Transpose"), 1u);
  const kiln_graph_node_t* mm = kiln_find_live(&g, "MatMul");
  KILN_ASSERT_TRUE(mm != NULL);
  KILN_EXPECT_TRUE(kiln_graph_node_find_attr(mm, "kiln.residual") != NULL);
  const kiln_graph_attr_t* flat = kiln_graph_node_find_attr(mm, "kiln.residual_flat");
  KILN_ASSERT_TRUE(flat != NULL);
  KILN_EXPECT_EQ(flat->i, 1);
  // The Tanh reads the view of the sum.
  const kiln_graph_node_t* tanh = kiln_find_live(&g, "Tanh");
  const kiln_graph_node_t* transpose = kiln_find_live(&g, "Transpose");
  KILN_ASSERT_TRUE(tanh != NULL && transpose != NULL);
  KILN_EXPECT_EQ(tanh->inputs[0], transpose->outputs[0]);
  kiln_graph_deinitialize(&g);
  const int kept[] = {KILN_VIEW_ADD_IS_OUTPUT, KILN_VIEW_ADD_BROADCAST,
                      KILN_VIEW_ADD_SHARED_VIEW};
  for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); ++i) {
    kiln_view_add_variant = kept[i];
    kiln_compare_before_after(kiln_build_matmul_views_add, &g);
    KILN_EXPECT_EQ(kiln_live(&g, "Add"), 1u);
    mm = kiln_find_live(&g, "MatMul");
    KILN_ASSERT_TRUE(mm != NULL);
    KILN_EXPECT_TRUE(kiln_graph_node_find_attr(mm, "kiln.residual") == NULL);
    kiln_graph_deinitialize(&g);
  }
}

// SiLU as exporters write it after a Conv: Mul(y, Sigmoid(y)), the Mul's
// operands in the order kiln_silu_variant picks (see the tests below).
enum {
  KILN_SILU_MUL_X_SIG,   // Mul(y, Sigmoid(y))
  KILN_SILU_MUL_SIG_X,   // Mul(Sigmoid(y), y)
  KILN_SILU_SIG_SHARED,  // the Sigmoid is also a graph output
  KILN_SILU_SE,          // Mul(y, Sigmoid(s)), s another tensor (squeeze-excite)
  KILN_SILU_LONE,        // Mul(x, Sigmoid(x)) on a graph input
};
static int kiln_silu_variant;

static void kiln_build_conv_silu(kiln_graph_t* g) {
  int64_t xd[] = {1, 3, 5, 5}, wd[] = {4, 3, 3, 3}, cd[] = {4};
  int32_t x = kiln_input(g, "x", 4, xd);
  int32_t y = x;
  if (kiln_silu_variant != KILN_SILU_LONE) {
    int32_t conv_in[] = {x, kiln_const(g, 4, wd, 2.0f, 0.0f), kiln_const(g, 1, cd, 1.0f, 0.0f)};
    y = kiln_node(g, "Conv", conv_in, 3);
    int64_t pads[] = {1, 1, 1, 1};
    kiln_attr_ints(g, "pads", pads, 4);
  }
  int32_t gate = y;
  if (kiln_silu_variant == KILN_SILU_SE) {
    int64_t sd[] = {1, 4, 5, 5};
    int32_t s_in[] = {kiln_input(g, "s", 4, sd)};
    gate = s_in[0];
  }
  int32_t sig = kiln_node(g, "Sigmoid", &gate, 1);
  int32_t mul_in[] = {y, sig};
  if (kiln_silu_variant == KILN_SILU_MUL_SIG_X) {
    mul_in[0] = sig;
    mul_in[1] = y;
  }
  kiln_output(g, kiln_node(g, "Mul", mul_in, 2));
  if (kiln_silu_variant == KILN_SILU_SIG_SHARED) kiln_output(g, sig);
}

// Either operand order: one Conv carrying kiln.Silu, no Sigmoid or Mul left.
KILN_TEST(GraphPassesTest, FusesSiluIntoConvInEitherOrder) {
  const int variants[] = {KILN_SILU_MUL_X_SIG, KILN_SILU_MUL_SIG_X};
  for (size_t v = 0; v < 2; ++v) {
    kiln_silu_variant = variants[v];
    kiln_graph_t g;
    kiln_compare_before_after(kiln_build_conv_silu, &g);
    KILN_EXPECT_EQ(kiln_live(&g, "Sigmoid"), 0u);
    KILN_EXPECT_EQ(kiln_live(&g, "Mul"), 0u);
    KILN_EXPECT_EQ(kiln_live(&g, "kiln.Silu"), 0u);
    const kiln_graph_node_t* conv = kiln_find_live(&g, "Conv");
    KILN_ASSERT_TRUE(conv != NULL);
    const kiln_graph_attr_t* act = kiln_graph_node_find_attr(conv, "kiln.activation");
    KILN_ASSERT_TRUE(act != NULL);
    KILN_EXPECT_STREQ(act->s, "kiln.Silu");
    kiln_graph_deinitialize(&g);
  }
}

// A SiLU with no producer to fuse into stays one kiln.Silu node.
KILN_TEST(GraphPassesTest, LoneSiluBecomesOneNode) {
  kiln_silu_variant = KILN_SILU_LONE;
  kiln_graph_t g;
  kiln_compare_before_after(kiln_build_conv_silu, &g);
  KILN_EXPECT_EQ(kiln_live(&g, "Sigmoid") + kiln_live(&g, "Mul"), 0u);
  const kiln_graph_node_t* silu = kiln_find_live(&g, "kiln.Silu");
  KILN_ASSERT_TRUE(silu != NULL);
  KILN_EXPECT_EQ(silu->input_count, 1u);
  KILN_EXPECT_EQ(silu->inputs[0], g.inputs[0]);
  KILN_EXPECT_EQ(silu->outputs[0], g.outputs[0]);
  kiln_graph_deinitialize(&g);
}

// Not SiLU: a Sigmoid someone else reads, and squeeze-excite's gate of
// another tensor. Both keep their Sigmoid and Mul.
KILN_TEST(GraphPassesTest, LeavesSharedSigmoidAndGateAlone) {
  const int variants[] = {KILN_SILU_SIG_SHARED, KILN_SILU_SE};
  for (size_t v = 0; v < 2; ++v) {
    kiln_silu_variant = variants[v];
    kiln_graph_t g;
    kiln_compare_before_after(kiln_build_conv_silu, &g);
    KILN_EXPECT_EQ(kiln_live(&g, "Sigmoid"), 1u);
    KILN_EXPECT_EQ(kiln_live(&g, "Mul"), 1u);
    KILN_EXPECT_EQ(kiln_live(&g, "kiln.Silu"), 0u);
    const kiln_graph_node_t* conv = kiln_find_live(&g, "Conv");
    KILN_ASSERT_TRUE(conv != NULL);
    const kiln_graph_attr_t* act = kiln_graph_node_find_attr(conv, "kiln.activation");
    // Each Conv output has a reader that is no activation (the Mul).
    KILN_EXPECT_TRUE(act == NULL);
    kiln_graph_deinitialize(&g);
  }
}

// Exporter-style shape chain: Shape -> Gather -> Unsqueeze -> Concat ->
// Reshape, plus Identity/Dropout in the way.
static void kiln_build_shape_chain(kiln_graph_t* g) {
  int64_t xd[] = {2, 3, 4};
  int32_t x = kiln_input(g, "x", 3, xd);
  int32_t id = kiln_node(g, "Identity", &x, 1);
  int32_t shape = kiln_node(g, "Shape", &id, 1);
  kiln_graph_shape_t scalar = {0, {0}};
  kiln_graph_shape_t one = {1, {1}};
  int64_t zero = 0, minus_one = -1;
  int32_t index = -1, tail = -1, axes = -1;
  KILN_EXPECT_OK(kiln_graph_add_constant(g, "i", KILN_GRAPH_DTYPE_I64, &scalar, &zero, &index));
  KILN_EXPECT_OK(kiln_graph_add_constant(g, "t", KILN_GRAPH_DTYPE_I64, &one, &minus_one, &tail));
  KILN_EXPECT_OK(kiln_graph_add_constant(g, "a", KILN_GRAPH_DTYPE_I64, &one, &zero, &axes));
  int32_t gather_in[] = {shape, index};
  int32_t batch = kiln_node(g, "Gather", gather_in, 2);
  int32_t unsq_in[] = {batch, axes};
  int32_t batch1 = kiln_node(g, "Unsqueeze", unsq_in, 2);
  int32_t concat_in[] = {batch1, tail};
  int32_t dims = kiln_node(g, "Concat", concat_in, 2);
  kiln_graph_attr_t attr;
  memset(&attr, 0, sizeof(attr));
  attr.name = "axis";
  attr.type = KILN_GRAPH_ATTR_INT;
  attr.i = 0;
  KILN_EXPECT_OK(kiln_graph_node_set_attr(g, (int32_t)g->node_count - 1, &attr));
  int32_t drop = kiln_node(g, "Dropout", &id, 1);
  int32_t reshape_in[] = {drop, dims};
  int32_t reshaped = kiln_node(g, "Reshape", reshape_in, 2);
  int32_t out = kiln_node(g, "Relu", &reshaped, 1);
  kiln_output(g, out);
}

KILN_TEST(GraphPassesTest, FoldsShapeChainsAndDropsIdentities) {
  kiln_graph_t g;
  kiln_compare_before_after(kiln_build_shape_chain, &g);
  KILN_EXPECT_EQ(kiln_live(&g, "Shape") + kiln_live(&g, "Gather") +
                     kiln_live(&g, "Unsqueeze") + kiln_live(&g, "Concat") +
                     kiln_live(&g, "Identity") + kiln_live(&g, "Dropout"),
                 0u);
  const kiln_graph_node_t* reshape = kiln_find_live(&g, "Reshape");
  KILN_ASSERT_TRUE(reshape != NULL);
  const kiln_graph_value_t* dims = &g.values[reshape->inputs[1]];
  KILN_ASSERT_TRUE(dims->data != NULL);
  KILN_EXPECT_EQ(((const int64_t*)dims->data)[0], 2);
  KILN_EXPECT_EQ(((const int64_t*)dims->data)[1], -1);
  const kiln_graph_value_t* out = &g.values[g.outputs[0]];
  KILN_EXPECT_EQ(out->shape.rank, 2);
  KILN_EXPECT_EQ(out->shape.dims[1], 12);
  kiln_graph_deinitialize(&g);
}

// A chain of equal-size elementwise ops: two slots are enough.
static void kiln_build_chain(kiln_graph_t* g) {
  int64_t xd[] = {1, 1000};
  int32_t v = kiln_input(g, "x", 2, xd);
  const char* ops[] = {"Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Sqrt"};
  for (size_t i = 0; i < 6; ++i) v = kiln_node(g, ops[i], &v, 1);
  kiln_output(g, v);
}

// The --print-memory-plan report of `plan` (caller frees).
static char* kiln_plan_text(const kiln_graph_t* g, const kiln_graph_memory_plan_t* plan) {
  char* text = NULL;
  size_t size = 0;
  FILE* stream = open_memstream(&text, &size);
  if (!stream) return NULL;
  kiln_graph_memory_plan_print(g, plan, stream);
  fclose(stream);
  return text;
}

KILN_TEST(GraphMemoryPlanTest, ReusesSlotsAlongAChain) {
  kiln_graph_t g;
  kiln_compare_before_after(kiln_build_chain, &g);
  kiln_graph_memory_plan_t plan;
  KILN_ASSERT_OK(kiln_graph_memory_plan_build(&g, 256, kiln_allocator_system(),
                                              &plan));
  // Five intermediates of 4000 bytes (4096 aligned); only two live at once.
  KILN_EXPECT_EQ(plan.planned_count, 5u);
  KILN_EXPECT_EQ(plan.total_bytes, 5u * 4096u);
  KILN_EXPECT_EQ(plan.peak_bytes, 2u * 4096u);
  char* text = kiln_plan_text(&g, &plan);
  KILN_EXPECT_CONTAINS(text, "peak 8192 bytes vs 20480 bytes summed");
  free(text);
  kiln_graph_memory_plan_deinit(&plan);
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_graph_memory_plan_build(&g, 3, kiln_allocator_system(),
                                                  &plan));
  kiln_graph_deinitialize(&g);
}

KILN_TEST(GraphMemoryPlanTest, VerifyCatchesOverlap) {
  kiln_graph_t g;
  kiln_make(kiln_build_chain, true, &g);
  kiln_graph_memory_plan_t plan;
  KILN_ASSERT_OK(kiln_graph_memory_plan_build(&g, 256, kiln_allocator_system(),
                                              &plan));
  // Move every slot to offset 0: neighbours in the chain now collide.
  for (size_t v = 0; v < plan.value_count; ++v) {
    if (plan.offsets[v] != KILN_GRAPH_NOT_PLANNED) plan.offsets[v] = 0;
  }
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INTERNAL, "overlap",
                             kiln_graph_memory_plan_verify(&g, &plan));
  kiln_graph_memory_plan_deinit(&plan);
  kiln_graph_deinitialize(&g);
}

// Sigmoid -> Reshape -> Transpose of size-1 dims -> Transpose that moves
// data -> Tanh, and Reshape of the input -> Neg: the first Reshape and
// Transpose are views of Sigmoid's output; the moving transpose is not,
// nor is the reshape of the graph input.
static void kiln_build_views(kiln_graph_t* g) {
  int64_t xd[] = {1, 6, 8};
  int32_t x = kiln_input(g, "x", 3, xd);
  int64_t new_shape[] = {6, 1, 8};
  kiln_graph_shape_t s = {1, {3}};
  int32_t shape_id = -1;
  KILN_EXPECT_OK(kiln_graph_add_constant(g, NULL, KILN_GRAPH_DTYPE_I64, &s, new_shape, &shape_id));
  int32_t sig = kiln_node(g, "Sigmoid", &x, 1);
  int32_t in_r1[] = {sig, shape_id};
  int32_t r1 = kiln_node(g, "Reshape", in_r1, 2);
  int32_t t0 = kiln_node(g, "Transpose", &r1, 1);  // [6,1,8] -> [1,6,8]
  const int64_t perm0[] = {1, 0, 2};
  kiln_attr_ints(g, "perm", perm0, 3);
  int32_t t1 = kiln_node(g, "Transpose", &t0, 1);  // [1,6,8] -> [1,8,6]
  const int64_t perm1[] = {0, 2, 1};
  kiln_attr_ints(g, "perm", perm1, 3);
  int32_t y = kiln_node(g, "Tanh", &t1, 1);
  kiln_output(g, y);
  int32_t in_reshape[] = {x, shape_id};
  int32_t r0 = kiln_node(g, "Reshape", in_reshape, 2);  // of the input: a copy
  int32_t z = kiln_node(g, "Neg", &r0, 1);
  kiln_output(g, z);
}

KILN_TEST(GraphMemoryPlanTest, ViewsShareTheirInputsPlace) {
  kiln_graph_t g;
  kiln_compare_before_after(kiln_build_views, &g);  // the reference runs on the plan
  kiln_graph_memory_plan_t plan;
  KILN_ASSERT_OK(kiln_graph_memory_plan_build_by_level(&g, 256, kiln_allocator_system(), &plan));
  KILN_ASSERT_OK(kiln_graph_memory_plan_verify(&g, &plan));
  int32_t reshape_of_input = -1, sig = -1, reshape = -1, view_t = -1, moving_t = -1;
  for (size_t n = 0; n < g.node_count; ++n) {
    const kiln_graph_node_t* node = &g.nodes[n];
    if (node->removed) continue;
    if (strcmp(node->op_type, "Reshape") == 0) {
      if (g.values[node->inputs[0]].is_input) {
        reshape_of_input = node->outputs[0];
      } else {
        reshape = node->outputs[0];
      }
    } else if (strcmp(node->op_type, "Sigmoid") == 0) {
      sig = node->outputs[0];
    } else if (strcmp(node->op_type, "Transpose") == 0) {
      if (kiln_graph_transpose_is_view(&g, node)) {
        view_t = node->outputs[0];
      } else {
        moving_t = node->outputs[0];
      }
    }
  }
  KILN_ASSERT_TRUE(reshape_of_input >= 0 && sig >= 0 && reshape >= 0 && view_t >= 0 &&
                   moving_t >= 0);
  KILN_EXPECT_EQ(plan.view_of[reshape], sig);
  KILN_EXPECT_EQ(plan.view_of[view_t], sig);  // a chain ends at one root
  KILN_EXPECT_EQ(plan.offsets[reshape], plan.offsets[sig]);
  KILN_EXPECT_EQ(plan.offsets[view_t], plan.offsets[sig]);
  // Sigmoid's own last reader is the Reshape; the views keep its place
  // taken until the moving transpose has read it.
  KILN_EXPECT_EQ(plan.view_of[moving_t], -1);
  KILN_EXPECT_TRUE(plan.offsets[moving_t] != plan.offsets[sig]);
  KILN_EXPECT_EQ(plan.view_of[reshape_of_input], -1);  // the input is not planned
  KILN_EXPECT_EQ(plan.view_count, 2u);
  char* text = kiln_plan_text(&g, &plan);
  KILN_EXPECT_CONTAINS(text, "(and 2 views of them)");
  KILN_EXPECT_CONTAINS(text, "view of");
  free(text);
  // A plan that puts the moving transpose on the views' place is caught.
  plan.offsets[moving_t] = plan.offsets[sig];
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INTERNAL, "overlap",
                             kiln_graph_memory_plan_verify(&g, &plan));
  kiln_graph_memory_plan_deinit(&plan);
  kiln_graph_deinitialize(&g);
}
