// NaN, infinities, signed zeros and denormals through every elementwise op
// and activation, compiled and run on the device, against the plain C
// references of tests/spirv/reference (PyTorch semantics: NaN in -> NaN
// out, pow/sqrt/log as C99; values checked in PyTorch 1.13).
//
// Denormal float32 inputs: lavapipe reports shaderDenormPreserveFloat32 =
// false and flushes them to zero (docs/onnx.md), so an element whose input
// is denormal may instead match the op applied to a zero of the same sign.
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/kernels_codes.h"
#include "graph_build.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"
#include "reference/reference.h"

#define KILN_IEEE_DENORMAL 1e-40f

static const float kValues[] = {
    NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -2.5f, 3.5f,
    20.0f, -20.0f, 90.0f, -90.0f, FLT_MAX, -FLT_MAX, FLT_MIN, KILN_IEEE_DENORMAL,
    -KILN_IEEE_DENORMAL};
#define KILN_IEEE_COUNT (sizeof(kValues) / sizeof(kValues[0]))

static bool kiln_ieee_is_denormal(float x) {
  return x != 0.0f && fabsf(x) < FLT_MIN;
}

// NaN matches NaN, an infinity itself, anything else within
// 1e-6 + 2e-5 |want| (the device's exp/log/pow precision).
static bool kiln_ieee_close(float got, double want_double) {
  float want = (float)want_double;
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
  if (isinf(want) || isinf(got)) return got == want;
  return fabs((double)got - (double)want) <= 1e-6 + 2e-5 * fabs((double)want);
}

// Runs graph (one output of `count` floats, inputs of `count` floats) and
// returns the output in `got`.
static void kiln_ieee_run(kiln_graph_t* graph, const float* const* inputs, size_t count_each,
                          float* got) {
  KILN_ASSERT_OK(kiln_graph_infer_shapes(graph));
  kiln_graph_tensor_t tensors[2], output;
  size_t count = graph->input_count;
  for (size_t i = 0; i < count; ++i) {
    KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                              &graph->values[graph->inputs[i]].shape,
                                              &tensors[i]));
    memcpy(tensors[i].data, inputs[i], count_each * sizeof(float));
  }
  kiln_gpu_run_stats_t stats;
  kiln_status_t status = kiln_gpu_compile_and_run(graph, NULL, tensors, &output, &stats);
  for (size_t i = 0; i < count; ++i) kiln_graph_tensor_deinit(&tensors[i]);
  KILN_ASSERT_OK(status);
  KILN_ASSERT_EQ(output.byte_size, count_each * sizeof(float));
  memcpy(got, output.data, output.byte_size);
  kiln_graph_tensor_deinit(&output);
}

static const kiln_graph_shape_t kShape = {.rank = 1, .dims = {KILN_IEEE_COUNT}};

typedef struct kiln_ieee_unary_t {
  const char* op;
  uint32_t code;
  float alpha, beta;  // attributes (LeakyRelu, HardSigmoid, Elu) or Clip's bounds
} kiln_ieee_unary_t;

// `folded`: the op runs on a constant, so the compiler's constant folding
// (the CPU reference ops) computes it; the graph adds the zeros input.
static void kiln_ieee_check_unary(const kiln_ieee_unary_t* u, bool folded) {
  kiln_graph_t graph;
  kiln_graph_initialize(kiln_allocator_system(), "ieee-unary", &graph);
  graph.opset = 20;  // Gelu
  int32_t inputs[3] = {-1, -1, -1}, node = -1, y = -1, x = -1;
  KILN_ASSERT_OK(kiln_gpu_graph_add_input(&graph, "x", &kShape, &x));
  inputs[0] = x;
  if (folded) {
    KILN_ASSERT_OK(kiln_graph_add_constant(&graph, "values", KILN_GRAPH_DTYPE_F32, &kShape,
                                           kValues, &inputs[0]));
  }
  size_t input_count = 1;
  if (u->code == KILN_ACT_CLIP) {
    const kiln_graph_shape_t scalar = {.rank = 0};
    KILN_ASSERT_OK(kiln_graph_add_constant(&graph, "lo", KILN_GRAPH_DTYPE_F32, &scalar,
                                           &u->alpha, &inputs[1]));
    KILN_ASSERT_OK(kiln_graph_add_constant(&graph, "hi", KILN_GRAPH_DTYPE_F32, &scalar,
                                           &u->beta, &inputs[2]));
    input_count = 3;
  }
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&graph, u->op, inputs, input_count, &node, &y));
  if (u->code == KILN_ACT_LEAKY_RELU || u->code == KILN_ACT_ELU ||
      u->code == KILN_ACT_HARD_SIGMOID) {
    kiln_test_attr_float(&graph, node, "alpha", u->alpha);
  }
  if (u->code == KILN_ACT_HARD_SIGMOID) kiln_test_attr_float(&graph, node, "beta", u->beta);
  if (folded) {
    int32_t sum_in[2] = {y, x};
    KILN_ASSERT_OK(kiln_gpu_graph_add_node(&graph, "Add", sum_in, 2, &node, &y));
  }
  KILN_ASSERT_OK(kiln_gpu_graph_add_output(&graph, y));
  float got[KILN_IEEE_COUNT];
  static const float kZeros[KILN_IEEE_COUNT];
  const float* input = folded ? kZeros : kValues;
  kiln_ieee_run(&graph, &input, KILN_IEEE_COUNT, got);
  kiln_graph_deinitialize(&graph);
  for (size_t i = 0; i < KILN_IEEE_COUNT; ++i) {
    double want = ref_activation(u->code, kValues[i], u->alpha, u->beta);
    bool ok = kiln_ieee_close(got[i], want);
    if (!ok && kiln_ieee_is_denormal(kValues[i])) {
      ok = kiln_ieee_close(got[i], ref_activation(u->code, copysignf(0.0f, kValues[i]),
                                                  u->alpha, u->beta));
    }
    if (!ok) {
      KILN_ADD_FAILURE("%s%s(%g) = %g, want %g", folded ? "folded " : "", u->op,
                       (double)kValues[i], (double)got[i], (double)(float)want);
    }
  }
}

KILN_TEST(OnnxIeeeTest, ActivationsAndUnaryOps) {
  static const kiln_ieee_unary_t kOps[] = {
      {"Relu", KILN_ACT_RELU, 0, 0},
      {"LeakyRelu", KILN_ACT_LEAKY_RELU, 0.1f, 0},
      {"Clip", KILN_ACT_CLIP, -1.0f, 6.0f},
      {"Sigmoid", KILN_ACT_SIGMOID, 0, 0},
      {"HardSigmoid", KILN_ACT_HARD_SIGMOID, 0.2f, 0.5f},
      {"HardSwish", KILN_ACT_HARD_SWISH, 0, 0},
      {"Tanh", KILN_ACT_TANH, 0, 0},
      {"Gelu", KILN_ACT_GELU, 0, 0},
      {"Erf", KILN_ACT_ERF, 0, 0},
      {"Elu", KILN_ACT_ELU, 1.0f, 0},
      {"Softplus", KILN_ACT_SOFTPLUS, 0, 0},
      {"Sqrt", KILN_ACT_SQRT, 0, 0},
      {"Exp", KILN_ACT_EXP, 0, 0},
      {"Log", KILN_ACT_LOG, 0, 0},
      {"Neg", KILN_ACT_NEG, 0, 0},
      {"Abs", KILN_ACT_ABS, 0, 0},
      {"Reciprocal", KILN_ACT_RECIPROCAL, 0, 0},
      {"kiln.Silu", KILN_ACT_SILU, 0, 0},
  };
  for (size_t k = 0; k < sizeof(kOps) / sizeof(kOps[0]); ++k) {
    kiln_ieee_check_unary(&kOps[k], false);
  }
}

// SiLU as exported, Mul(x, Sigmoid(x)) in either order: the pass makes it one
// kiln.Silu dispatch, which must give what the two ops give (-inf -> NaN,
// large negative x -> -0, never NaN from exp overflow).
KILN_TEST(OnnxIeeeTest, SigmoidMulPattern) {
  for (int order = 0; order < 2; ++order) {
    kiln_graph_t graph;
    kiln_graph_initialize(kiln_allocator_system(), "ieee-silu", &graph);
    graph.opset = 20;
    int32_t x = -1, node = -1, s = -1, y = -1;
    KILN_ASSERT_OK(kiln_gpu_graph_add_input(&graph, "x", &kShape, &x));
    KILN_ASSERT_OK(kiln_gpu_graph_add_node(&graph, "Sigmoid", &x, 1, &node, &s));
    int32_t mul_in[2] = {order ? s : x, order ? x : s};
    KILN_ASSERT_OK(kiln_gpu_graph_add_node(&graph, "Mul", mul_in, 2, &node, &y));
    KILN_ASSERT_OK(kiln_gpu_graph_add_output(&graph, y));
    KILN_ASSERT_OK(kiln_graph_infer_shapes(&graph));
    KILN_ASSERT_OK(kiln_graph_run_default_passes(&graph));
    size_t fused = 0;
    for (size_t n = 0; n < graph.node_count; ++n) {
      if (graph.nodes[n].removed) continue;
      KILN_EXPECT_STREQ(graph.nodes[n].op_type, "kiln.Silu");
      ++fused;
    }
    KILN_EXPECT_EQ(fused, 1u);
    float got[KILN_IEEE_COUNT];
    const float* input = kValues;
    kiln_ieee_run(&graph, &input, KILN_IEEE_COUNT, got);
    kiln_graph_deinitialize(&graph);
    for (size_t i = 0; i < KILN_IEEE_COUNT; ++i) {
      // The unfused graph in C: a float sigmoid, then a float product.
      float sig = (float)ref_activation(KILN_ACT_SIGMOID, kValues[i], 0, 0);
      float want = kValues[i] * sig;
      bool ok = kiln_ieee_close(got[i], want);
      if (!ok && kiln_ieee_is_denormal(kValues[i])) ok = kiln_ieee_close(got[i], 0.0);
      if (!ok) {
        KILN_ADD_FAILURE("silu order %d (%g) = %g, want %g", order, (double)kValues[i],
                         (double)got[i], (double)want);
      }
    }
  }
}

// The same special values through constant folding of the activations the
// CPU reference implements (compiler-bridge/onnx/activation.c).
KILN_TEST(OnnxIeeeTest, FoldedActivations) {
  static const kiln_ieee_unary_t kOps[] = {
      {"Relu", KILN_ACT_RELU, 0, 0},
      {"LeakyRelu", KILN_ACT_LEAKY_RELU, 0.1f, 0},
      {"Clip", KILN_ACT_CLIP, -1.0f, 6.0f},
      {"HardSigmoid", KILN_ACT_HARD_SIGMOID, 0.2f, 0.5f},
      {"HardSwish", KILN_ACT_HARD_SWISH, 0, 0},
      {"Tanh", KILN_ACT_TANH, 0, 0},
      {"Sigmoid", KILN_ACT_SIGMOID, 0, 0},
      {"Elu", KILN_ACT_ELU, 1.0f, 0},
      {"kiln.Silu", KILN_ACT_SILU, 0, 0},
  };
  for (size_t k = 0; k < sizeof(kOps) / sizeof(kOps[0]); ++k) {
    kiln_ieee_check_unary(&kOps[k], true);
  }
}

// Every (a, b) pair of kValues, and the exponents Pow needs beyond them
// (odd, even, fractional, huge), through each binary op in one run.
KILN_TEST(OnnxIeeeTest, BinaryOps) {
  static const struct {
    const char* op;
    uint32_t code;
  } kOps[] = {{"Add", KILN_BINARY_ADD}, {"Sub", KILN_BINARY_SUB}, {"Mul", KILN_BINARY_MUL},
              {"Div", KILN_BINARY_DIV}, {"Pow", KILN_BINARY_POW}, {"Max", KILN_BINARY_MAX},
              {"Min", KILN_BINARY_MIN}};
  static const float kExtra[] = {-1.0f, -2.0f, -3.0f, 2.0f, 3.0f, 1.0f / 3.0f, 0.25f, 1e30f};
  enum { kRounds = KILN_IEEE_COUNT + sizeof(kExtra) / sizeof(kExtra[0]) };
  enum { kCount = KILN_IEEE_COUNT * kRounds };
  static float a[kCount], b[kCount], got[kCount], want[kCount];
  for (size_t r = 0; r < kRounds; ++r) {
    for (size_t j = 0; j < KILN_IEEE_COUNT; ++j) {
      a[r * KILN_IEEE_COUNT + j] = kValues[j];
      b[r * KILN_IEEE_COUNT + j] = r < KILN_IEEE_COUNT ? kValues[(j + r) % KILN_IEEE_COUNT]
                                                       : kExtra[r - KILN_IEEE_COUNT];
    }
  }
  const kiln_graph_shape_t shape = {.rank = 1, .dims = {kCount}};
  for (size_t k = 0; k < sizeof(kOps) / sizeof(kOps[0]); ++k) {
    kiln_graph_t graph;
    kiln_graph_initialize(kiln_allocator_system(), "ieee-binary", &graph);
    graph.opset = 13;
    int32_t in[2] = {-1, -1}, node = -1, y = -1;
    KILN_ASSERT_OK(kiln_gpu_graph_add_input(&graph, "a", &shape, &in[0]));
    KILN_ASSERT_OK(kiln_gpu_graph_add_input(&graph, "b", &shape, &in[1]));
    KILN_ASSERT_OK(kiln_gpu_graph_add_node(&graph, kOps[k].op, in, 2, &node, &y));
    KILN_ASSERT_OK(kiln_gpu_graph_add_output(&graph, y));
    const float* inputs[2] = {a, b};
    kiln_ieee_run(&graph, inputs, kCount, got);
    kiln_graph_deinitialize(&graph);
    size_t dims[1] = {kCount};
    ref_binary(kOps[k].code, a, dims, 1, b, dims, 1, KILN_ACT_NONE, 0, 0, want);
    size_t bad = 0;
    for (size_t j = 0; j < kCount; ++j) {
      bool ok = kiln_ieee_close(got[j], want[j]);
      if (!ok && (kiln_ieee_is_denormal(a[j]) || kiln_ieee_is_denormal(b[j]))) {
        float a0 = kiln_ieee_is_denormal(a[j]) ? copysignf(0.0f, a[j]) : a[j];
        float b0 = kiln_ieee_is_denormal(b[j]) ? copysignf(0.0f, b[j]) : b[j];
        float flushed = 0.0f;
        ref_binary(kOps[k].code, &a0, dims, 0, &b0, dims, 0, KILN_ACT_NONE, 0, 0, &flushed);
        ok = kiln_ieee_close(got[j], flushed);
      }
      // A denormal result may be flushed to a zero.
      if (!ok && kiln_ieee_is_denormal(want[j])) ok = got[j] == 0.0f;
      if (!ok && ++bad <= 20) {
        KILN_ADD_FAILURE("%s(%g, %g) = %g, want %g", kOps[k].op, (double)a[j], (double)b[j],
                         (double)got[j], (double)want[j]);
      }
    }
    KILN_EXPECT_EQ(bad, 0u);
  }
}

// The case: Pow(0, -1) is +inf (IEEE, onnxruntime), not 0.
KILN_TEST(OnnxIeeeTest, PowOfZeroToMinusOneIsInfinity) {
  kiln_graph_t graph;
  kiln_graph_initialize(kiln_allocator_system(), "ieee-pow", &graph);
  graph.opset = 13;
  int32_t in[2] = {-1, -1}, node = -1, y = -1;
  KILN_ASSERT_OK(kiln_gpu_graph_add_input(&graph, "a", &kShape, &in[0]));
  KILN_ASSERT_OK(kiln_gpu_graph_add_input(&graph, "b", &kShape, &in[1]));
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&graph, "Pow", in, 2, &node, &y));
  KILN_ASSERT_OK(kiln_gpu_graph_add_output(&graph, y));
  float a[KILN_IEEE_COUNT], b[KILN_IEEE_COUNT], got[KILN_IEEE_COUNT];
  for (size_t j = 0; j < KILN_IEEE_COUNT; ++j) {
    a[j] = j % 2 ? -0.0f : 0.0f;
    b[j] = -1.0f;
  }
  const float* inputs[2] = {a, b};
  kiln_ieee_run(&graph, inputs, KILN_IEEE_COUNT, got);
  kiln_graph_deinitialize(&graph);
  for (size_t j = 0; j < KILN_IEEE_COUNT; ++j) {
    KILN_EXPECT_TRUE(isinf(got[j]));
    KILN_EXPECT_EQ(signbit(got[j]) != 0, j % 2 == 1);
  }
}

// Where with a constant condition and one constant branch (masked_fill):
// the run-time branch passes through exactly, NaN and infinities included,
// and the constant branch may itself be -inf or NaN.
KILN_TEST(OnnxIeeeTest, WhereKeepsSpecialValues) {
  uint8_t cond[KILN_IEEE_COUNT];
  float k[KILN_IEEE_COUNT];
  for (size_t j = 0; j < KILN_IEEE_COUNT; ++j) {
    cond[j] = (uint8_t)(j % 3 != 0);
    k[j] = j % 2 ? -INFINITY : NAN;
  }
  for (int k_is_x = 0; k_is_x < 2; ++k_is_x) {
    kiln_graph_t graph;
    kiln_graph_initialize(kiln_allocator_system(), "ieee-where", &graph);
    graph.opset = 13;
    int32_t in[3] = {-1, -1, -1}, x = -1, node = -1, y = -1;
    KILN_ASSERT_OK(kiln_gpu_graph_add_input(&graph, "x", &kShape, &x));
    KILN_ASSERT_OK(kiln_graph_add_constant(&graph, "cond", KILN_GRAPH_DTYPE_BOOL, &kShape, cond,
                                           &in[0]));
    int32_t constant = -1;
    KILN_ASSERT_OK(
        kiln_graph_add_constant(&graph, "k", KILN_GRAPH_DTYPE_F32, &kShape, k, &constant));
    in[1] = k_is_x ? constant : x;
    in[2] = k_is_x ? x : constant;
    KILN_ASSERT_OK(kiln_gpu_graph_add_node(&graph, "Where", in, 3, &node, &y));
    KILN_ASSERT_OK(kiln_gpu_graph_add_output(&graph, y));
    float got[KILN_IEEE_COUNT];
    const float* inputs[1] = {kValues};
    kiln_ieee_run(&graph, inputs, KILN_IEEE_COUNT, got);
    kiln_graph_deinitialize(&graph);
    for (size_t j = 0; j < KILN_IEEE_COUNT; ++j) {
      float want = (cond[j] != 0) == (k_is_x != 0) ? k[j] : kValues[j];
      bool ok = isnan(want) ? isnan(got[j]) : got[j] == want;
      // A denormal x may be flushed to zero on its way through.
      if (!ok && kiln_ieee_is_denormal(want)) ok = got[j] == 0.0f;
      if (!ok) {
        KILN_ADD_FAILURE("Where(%d, k first %d) = %g, want %g", cond[j], k_is_x,
                         (double)got[j], (double)want);
      }
    }
  }
}

// The case: Log(Exp(x)) = x, also where exp(x) is a denormal
// (x < -87.3). A device that flushes float32 denormals gives -inf there
// (docs/onnx.md); never anything else.
KILN_TEST(OnnxIeeeTest, LogOfExpThroughDenormals) {
  static const float kX[] = {5.0f, 0.0f, -20.0f, -87.0f, -90.0f, -95.0f, -100.0f, -103.0f};
  enum { kCount = sizeof(kX) / sizeof(kX[0]) };
  const kiln_graph_shape_t shape = {.rank = 1, .dims = {kCount}};
  kiln_graph_t graph;
  kiln_graph_initialize(kiln_allocator_system(), "ieee-log-exp", &graph);
  graph.opset = 13;
  int32_t x = -1, e = -1, y = -1, node = -1;
  KILN_ASSERT_OK(kiln_gpu_graph_add_input(&graph, "x", &shape, &x));
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&graph, "Exp", &x, 1, &node, &e));
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&graph, "Log", &e, 1, &node, &y));
  KILN_ASSERT_OK(kiln_gpu_graph_add_output(&graph, y));
  float got[kCount];
  const float* inputs[1] = {kX};
  kiln_ieee_run(&graph, inputs, kCount, got);
  kiln_graph_deinitialize(&graph);
  for (size_t j = 0; j < kCount; ++j) {
    bool denormal = kiln_ieee_is_denormal(expf(kX[j]));
    // A denormal exp(x) is rounded to a multiple of 2^-149, which moves its
    // log by up to 2^-149 / exp(x) (0.5 at x = -103).
    double tolerance = 1e-4 + 1.5 * ldexp(1.0, -149) / exp((double)kX[j]);
    bool ok = fabs((double)got[j] - kX[j]) <= tolerance;
    if (!ok && denormal) ok = got[j] == -INFINITY;
    fprintf(stderr, "Log(Exp(%g)) = %g\n", (double)kX[j], (double)got[j]);
    if (!ok) KILN_ADD_FAILURE("Log(Exp(%g)) = %g", (double)kX[j], (double)got[j]);
  }
}
