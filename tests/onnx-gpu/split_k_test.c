// Implicit-GEMM convolution and split-K (issue 16) through the real ONNX
// compile + run path, against the C reference executor.
// Modules compiled for a GPU triple (valhall-g78: 64x64 blocks, 20 compute
// units in the split-K rule) run on lavapipe posing as that device, so the
// tiled conv2d_gemm and the split-K parts and sum run here; the same graphs
// compiled for the default targets (lavapipe among them) take conv2d_gemm's
// cpu variant and no split. Each case checks the dispatch count the split
// should give (parts + the sum) and the result:
// max |gpu - ref| <= 1e-6 * sqrt(K) * max |ref| (K the reduction length).
// The module is called first on other inputs and then checked: a result
// that leans on what the call before left in scratch fails.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/onnx_compile.h"
#include "graph_build.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"
#include "tensor_compare.h"

static const char kPoseUri[] = "vulkan://0?api=1.1&triple=valhall-g78-android30";
// f16 modules need 16-bit storage, which the 1.1 cap takes away.
static const char kPoseUriF16[] = "vulkan://0?triple=valhall-g78-android30";

// Adds `residual` (a graph input) and/or a Relu after value `y`; marks the
// result as the graph output.
static void splitk_tail(kiln_graph_t* g, int32_t y, int32_t residual, bool relu) {
  int32_t node = -1, out = -1;
  if (residual >= 0) {
    const int32_t in[2] = {y, residual};
    KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "Add", in, 2, &node, &out));
    y = out;
  }
  if (relu) {
    const int32_t in[1] = {y};
    KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "Relu", in, 1, &node, &out));
    y = out;
  }
  KILN_EXPECT_OK(kiln_gpu_graph_add_output(g, y));
}

// Compiles `g` for `target` (NULL: the default targets) and returns its
// dispatch count; then runs it (posing as the target's device when one is
// named) and compares with the C reference.
static size_t splitk_check_at(kiln_graph_t* g, const char* target, double k,
                              kiln_onnx_precision_t precision) {
  kiln_reference_check_t check, before;
  kiln_reference_check_prepare(g, 777u, &check);
  kiln_reference_check_prepare(g, 778u, &before);
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.precision = precision;
  // SIMT kernels only: lavapipe, posing, has no cooperative matrix.
  options.cooperative_matrix = false;
  const char* const targets[1] = {target};
  if (target) {
    options.targets = targets;
    options.target_count = 1;
  }
  // Compiling rewrites the graph (at f16 into f16 values): the count only
  // from an f32 graph; f16 callers count on a graph of their own.
  size_t dispatches = 0;
  if (precision != KILN_ONNX_PRECISION_F16) {
    KILN_EXPECT_OK(kiln_gpu_dispatch_count(g, &options, &dispatches));
  }
  const bool f16 = precision == KILN_ONNX_PRECISION_F16;
  // valhall poses as itself (a Vulkan 1.1 phone unless f16); other
  // triples as themselves on the device's own API version.
  char uri[128];
  const bool valhall = target && strcmp(target, "valhall-g78") == 0;
  snprintf(uri, sizeof(uri), "vulkan://0?triple=%s", target ? target : "");
  kiln_test_pose_t pose;
  KILN_ASSERT_OK(kiln_test_pose_begin(!target   ? NULL
                                      : valhall ? (f16 ? kPoseUriF16 : kPoseUri)
                                                : uri,
                                      NULL, &pose));
  kiln_gpu_run_stats_t stats;
  kiln_status_t status = kiln_gpu_compile_and_run_after(g, &options, before.inputs,
                                                        check.inputs, &check.actual, &stats);
  KILN_EXPECT_OK(kiln_test_pose_end(&pose));
  KILN_EXPECT_OK(status);
  char label[128];
  const char* where = target ? target : "default targets";
  if (f16) {
    snprintf(label, sizeof(label), "%s (f16)", where);
  } else {
    snprintf(label, sizeof(label), "%s: %zu dispatches", where, dispatches);
  }
  if (f16) {
    // fp16 operands and partials: the bound of docs/precision.md.
    kiln_tensor_expect_relative_error(&check.actual, &check.expected, 1e-2, label);
  } else {
    kiln_tensor_expect_sum_error(&check.actual, &check.expected, k, label);
  }
  kiln_reference_check_release(&check);
  kiln_reference_check_release(&before);
  return dispatches;
}

static size_t splitk_check(kiln_graph_t* g, const char* target, double k) {
  return splitk_check_at(g, target, k, KILN_ONNX_PRECISION_F32);
}

typedef struct conv_case_t {
  int64_t x[4], w[4];
  int64_t pads[4];  // top, left, bottom, right
  int64_t stride, dilation;
  bool bias, residual, relu;
  size_t split_dispatches;  // on valhall: parts + 1, or 1 unsplit
} conv_case_t;

static void splitk_conv(const conv_case_t* c, const char* target, size_t want_dispatches) {
  kiln_graph_t g;
  kiln_graph_initialize(kiln_allocator_system(), "split-k-conv", &g);
  g.opset = 13;
  int32_t in[3] = {kiln_test_graph_input(&g, "x", 4, c->x), kiln_test_graph_input(&g, "w", 4, c->w), -1};
  const int64_t bias_dims[1] = {c->w[0]};
  if (c->bias) in[2] = kiln_test_graph_input(&g, "b", 1, bias_dims);
  int32_t node = -1, y = -1;
  KILN_EXPECT_OK(kiln_gpu_graph_add_node(&g, "Conv", in, c->bias ? 3 : 2, &node, &y));
  kiln_test_attr_ints(&g, node, "pads", c->pads, 4);
  const int64_t strides[2] = {c->stride, c->stride}, dilations[2] = {c->dilation, c->dilation};
  kiln_test_attr_ints(&g, node, "strides", strides, 2);
  kiln_test_attr_ints(&g, node, "dilations", dilations, 2);
  int32_t residual = -1;
  if (c->residual) {
    // The output's shape, from the conv arithmetic.
    int64_t dims[4] = {c->x[0], c->w[0], 0, 0};
    for (int d = 0; d < 2; ++d) {
      int64_t span = c->dilation * (c->w[2 + d] - 1) + 1;
      dims[2 + d] = (c->x[2 + d] + c->pads[d] + c->pads[2 + d] - span) / c->stride + 1;
    }
    residual = kiln_test_graph_input(&g, "r", 4, dims);
  }
  splitk_tail(&g, y, residual, c->relu);
  size_t got = splitk_check(&g, target, (double)(c->w[1] * c->w[2] * c->w[3]));
  KILN_EXPECT_EQ(got, want_dispatches);
  kiln_graph_deinitialize(&g);
}

// valhall (20 units): split where blocks <= 10; parts = min(ceil(20 /
// blocks), k / 256, 8), then whole input channels (conv) or 64-k chunks
// (gemm) per part.
static const conv_case_t kConvCases[] = {
    // 3x3 at 7x7, 128 out: 2 blocks, k 576: 2 parts of 32 channels.
    {{1, 64, 7, 7}, {128, 64, 3, 3}, {1, 1, 1, 1}, 1, 1, true, false, true, 3},
    // odd sizes, C_in 61, stride 2, dilation 2, asymmetric pads: k 549,
    // 2 parts (31 + 30 channels).
    {{1, 61, 9, 11}, {24, 61, 3, 3}, {1, 0, 2, 1}, 2, 2, true, false, false, 3},
    // 1x1 stride 2 (ResNet's downsample): k 512, 2 parts.
    {{1, 512, 14, 14}, {64, 512, 1, 1}, {0, 0, 0, 0}, 2, 1, false, false, true, 3},
    // residual + relu: k 864, 3 parts of 32 channels.
    {{1, 96, 5, 5}, {40, 96, 3, 3}, {1, 1, 1, 1}, 1, 1, true, true, true, 4},
    // long k 4608: 8 parts of 64 channels.
    {{1, 512, 4, 4}, {32, 512, 3, 3}, {1, 1, 1, 1}, 1, 1, false, false, false, 9},
    // 1x1 stride 1 (a gemm): k 520 -> 2 parts -> chunks of 320: 320 + 200.
    {{1, 520, 6, 6}, {50, 520, 1, 1}, {0, 0, 0, 0}, 1, 1, true, false, true, 3},
    // k 9 and k 200: too short to split.
    {{1, 1, 5, 5}, {3, 1, 3, 3}, {1, 1, 1, 1}, 1, 1, true, false, false, 1},
    {{1, 8, 13, 13}, {16, 8, 5, 5}, {2, 2, 2, 2}, 1, 1, true, false, true, 1},
    // enough blocks (28x28, 96 out: 13 x 2 blocks > 10): no split.
    {{1, 32, 28, 28}, {96, 32, 3, 3}, {1, 1, 1, 1}, 1, 1, true, false, true, 1},
};

KILN_TEST(OnnxGpuSplitKTest, ConvOnTheTiledCoreWithSplitK) {
  for (size_t i = 0; i < sizeof(kConvCases) / sizeof(kConvCases[0]); ++i) {
    fprintf(stderr, "conv case %zu\n", i);
    splitk_conv(&kConvCases[i], "valhall-g78", kConvCases[i].split_dispatches);
  }
}

// The default (multi-target) module: conv2d_gemm for the GPU targets and
// conv2d_cpu for lavapipe in one executable; never split (a CPU target).
KILN_TEST(OnnxGpuSplitKTest, ConvInDefaultModules) {
  for (size_t i = 0; i < sizeof(kConvCases) / sizeof(kConvCases[0]); ++i) {
    fprintf(stderr, "conv case %zu\n", i);
    splitk_conv(&kConvCases[i], NULL, 1);
  }
}

// Gemm (transposes, alpha, bias row, relu) and MatMul (a batched A folded
// into M) on valhall.
KILN_TEST(OnnxGpuSplitKTest, GemmAndMatMul) {
  {
    // [5, 1000] x [1000, 7] + c, relu: k 1000 -> 3 parts -> chunks of 384:
    // 3 parts (the last 232).
    kiln_graph_t g;
    kiln_graph_initialize(kiln_allocator_system(), "split-k-gemm", &g);
    g.opset = 13;
    const int64_t a[2] = {5, 1000}, b[2] = {1000, 7}, c[1] = {7};
    const int32_t in[3] = {kiln_test_graph_input(&g, "a", 2, a), kiln_test_graph_input(&g, "b", 2, b),
                           kiln_test_graph_input(&g, "c", 1, c)};
    int32_t node = -1, y = -1;
    KILN_EXPECT_OK(kiln_gpu_graph_add_node(&g, "Gemm", in, 3, &node, &y));
    splitk_tail(&g, y, -1, true);
    KILN_EXPECT_EQ(splitk_check(&g, "valhall-g78", 1000), 4u);
    kiln_graph_deinitialize(&g);
  }
  {
    // transA, transB, alpha 0.5, bias per column: k 777 -> 3 parts ->
    // chunks of 320: 3 parts (the last 137).
    kiln_graph_t g;
    kiln_graph_initialize(kiln_allocator_system(), "split-k-gemm-t", &g);
    g.opset = 13;
    const int64_t a[2] = {777, 4}, b[2] = {6, 777}, c[1] = {6};
    const int32_t in[3] = {kiln_test_graph_input(&g, "a", 2, a), kiln_test_graph_input(&g, "b", 2, b),
                           kiln_test_graph_input(&g, "c", 1, c)};
    int32_t node = -1, y = -1;
    KILN_EXPECT_OK(kiln_gpu_graph_add_node(&g, "Gemm", in, 3, &node, &y));
    kiln_test_attr_int(&g, node, "transA", 1);
    kiln_test_attr_int(&g, node, "transB", 1);
    kiln_test_attr_float(&g, node, "alpha", 0.5f);
    splitk_tail(&g, y, -1, false);
    KILN_EXPECT_EQ(splitk_check(&g, "valhall-g78", 777), 4u);
    kiln_graph_deinitialize(&g);
  }
  {
    // [2, 3, 640] x [640, 9]: folds to 6 x 640 x 9; 2 equal parts of 320,
    // one dispatch (the parts as its batch) and the sum.
    kiln_graph_t g;
    kiln_graph_initialize(kiln_allocator_system(), "split-k-matmul", &g);
    g.opset = 13;
    const int64_t a[3] = {2, 3, 640}, b[2] = {640, 9};
    const int32_t in[2] = {kiln_test_graph_input(&g, "a", 3, a), kiln_test_graph_input(&g, "b", 2, b)};
    int32_t node = -1, y = -1;
    KILN_EXPECT_OK(kiln_gpu_graph_add_node(&g, "MatMul", in, 2, &node, &y));
    splitk_tail(&g, y, -1, false);
    KILN_EXPECT_EQ(splitk_check(&g, "valhall-g78", 640), 2u);
    kiln_graph_deinitialize(&g);
  }
}

// Compiles `g` for `target` with SIMT kernels only and returns how many of
// the module's executables run `kernel` (its _f16 build at f16);
// *out_dispatches: the module's dispatches.
static size_t splitk_executables(kiln_graph_t* g, const char* target,
                                 kiln_onnx_precision_t precision, const char* kernel,
                                 size_t* out_dispatches) {
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.precision = precision;
  options.cooperative_matrix = false;
  options.targets = &target;
  options.target_count = 1;
  kiln_gpu_capture_t capture;
  *out_dispatches = 0;
  KILN_ASSERT_OK(kiln_gpu_capture_begin(&options, &capture));
  KILN_EXPECT_OK(kiln_gpu_dispatch_count(g, &options, out_dispatches));
  kiln_gpu_capture_end(&capture);
  char name[64];
  snprintf(name, sizeof(name), "# executable '%s%s", kernel,
           precision == KILN_ONNX_PRECISION_F16 ? "_f16" : "_");
  const size_t count = kiln_gpu_text_count(capture.text, name);
  kiln_gpu_capture_release(&capture);
  return count;
}

// A gemm in equal k parts: one dispatch of the parts (its batch) and the
// gemv that adds them and runs the epilogue. Bias, residual (Add) and
// Relu; n off the quad (by element) and on it (by quad); a desktop triple
// whose per-product tilings split k inside the workgroup as well (BERT's
// [128, 768] x [768, 768]). fp16 storage too, without cooperative matrix.
typedef struct split_gemm_case_t {
  int64_t m, k, n;
  bool bias, residual, relu;
  const char* target;
} split_gemm_case_t;

static void splitk_gemm_graph(const split_gemm_case_t* c, kiln_graph_t* g) {
  kiln_graph_initialize(kiln_allocator_system(), "split-k-equal-parts", g);
  g->opset = 13;
  const int64_t a[2] = {c->m, c->k}, b[2] = {c->k, c->n}, bias[1] = {c->n}, r[2] = {c->m, c->n};
  int32_t in[3] = {kiln_test_graph_input(g, "a", 2, a), kiln_test_graph_input(g, "b", 2, b), -1};
  if (c->bias) in[2] = kiln_test_graph_input(g, "c", 1, bias);
  const int32_t residual = c->residual ? kiln_test_graph_input(g, "r", 2, r) : -1;
  int32_t node = -1, y = -1;
  KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "Gemm", in, c->bias ? 3 : 2, &node, &y));
  splitk_tail(g, y, residual, c->relu);
  KILN_EXPECT_OK(kiln_graph_infer_shapes(g));
}

static void splitk_gemm_equal_parts(const split_gemm_case_t* c, kiln_onnx_precision_t precision) {
  // The parts in one dispatch and their sum (f16: plus the casts of the
  // graph's f32 inputs and output).
  kiln_graph_t g;
  splitk_gemm_graph(c, &g);
  size_t dispatches = 0;
  KILN_EXPECT_EQ(splitk_executables(&g, c->target, precision, "gemv", &dispatches), 1u);
  if (precision != KILN_ONNX_PRECISION_F16) KILN_EXPECT_EQ(dispatches, 2u);
  kiln_graph_deinitialize(&g);
  splitk_gemm_graph(c, &g);
  splitk_check_at(&g, c->target, (double)c->k, precision);
  kiln_graph_deinitialize(&g);
}

static const split_gemm_case_t kSplitGemmCases[] = {
    {37, 1536, 130, true, true, true, "valhall-g78"},
    // 7 blocks: 3 parts of 400 (a multiple of 8, not of 64 or 128).
    {64, 1200, 448, true, false, true, "valhall-g78"},
    {20, 1536, 64, false, true, false, "valhall-g78"},
    {128, 768, 768, true, true, false, "ampere-rtx3080-windows"},
    {128, 3072, 772, true, false, true, "ampere-rtx3080-windows"},
};

KILN_TEST(OnnxGpuSplitKTest, GemmInEqualParts) {
  for (size_t i = 0; i < sizeof(kSplitGemmCases) / sizeof(kSplitGemmCases[0]); ++i) {
    fprintf(stderr, "split gemm case %zu\n", i);
    splitk_gemm_equal_parts(&kSplitGemmCases[i], KILN_ONNX_PRECISION_F32);
  }
}

KILN_TEST(OnnxGpuSplitKTest, GemmInEqualPartsAtF16) {
  for (size_t i = 0; i < sizeof(kSplitGemmCases) / sizeof(kSplitGemmCases[0]); ++i) {
    fprintf(stderr, "split gemm case %zu (f16)\n", i);
    splitk_gemm_equal_parts(&kSplitGemmCases[i], KILN_ONNX_PRECISION_F16);
  }
}

// A LayerNorm of a split gemm's output (Gemm + bias, Add residual,
// LayerNormalization with constant scale and beta: BERT's out-projection
// and FFN-down) runs as one norm_parts dispatch in place of the parts'
// sum and the norm. Cases: the residual a graph input; the residual an
// intermediate whose place the norm's output may take; the sum read again
// after the norm (norm_parts stores it); an activation in the gemm's
// epilogue (no fusion: the sum and the norm stay).
typedef struct split_norm_case_t {
  int64_t m, k, n;
  bool intermediate_residual, sum_read_again, relu;
  const char* target;
  size_t dispatches;  // fp32
  size_t fused;       // norm_parts executables
} split_norm_case_t;

static int32_t splitk_constant(kiln_graph_t* g, int64_t n, float base, float step) {
  float* data = malloc((size_t)n * sizeof(float));
  for (int64_t i = 0; i < n; ++i) data[i] = base + step * (float)((i * 37) % 11 - 5);
  const kiln_graph_shape_t shape = kiln_test_shape(1, &n);
  int32_t id = -1;
  KILN_EXPECT_OK(kiln_graph_add_constant(g, NULL, KILN_GRAPH_DTYPE_F32, &shape, data, &id));
  free(data);
  return id;
}

static void splitk_norm_graph(const split_norm_case_t* c, kiln_graph_t* g) {
  kiln_graph_initialize(kiln_allocator_system(), "split-k-norm", g);
  g->opset = 17;
  const int64_t a[2] = {c->m, c->k}, b[2] = {c->k, c->n}, r[2] = {c->m, c->n};
  int32_t residual = kiln_test_graph_input(g, "r", 2, r);
  const int32_t in[3] = {kiln_test_graph_input(g, "a", 2, a), kiln_test_graph_input(g, "b", 2, b),
                         splitk_constant(g, c->n, 0.25f, 0.1f)};
  int32_t node = -1, y = -1, out = -1;
  if (c->intermediate_residual) {
    KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "Relu", &residual, 1, &node, &out));
    residual = out;
  }
  KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "Gemm", in, 3, &node, &y));
  const int32_t add_in[2] = {y, residual};
  KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "Add", add_in, 2, &node, &out));
  int32_t sum = out;
  if (c->relu) {
    KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "Relu", &sum, 1, &node, &out));
    sum = out;
  }
  const int32_t norm_in[3] = {sum, splitk_constant(g, c->n, 1.0f, 0.05f),
                              splitk_constant(g, c->n, -0.5f, 0.2f)};
  KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "LayerNormalization", norm_in, 3, &node, &out));
  kiln_test_attr_int(g, node, "axis", -1);
  if (c->sum_read_again) {
    const int32_t again[2] = {out, sum};
    KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "Add", again, 2, &node, &out));
  }
  KILN_EXPECT_OK(kiln_gpu_graph_add_output(g, out));
  KILN_EXPECT_OK(kiln_graph_infer_shapes(g));
}

static void splitk_norm_check(const split_norm_case_t* c, kiln_onnx_precision_t precision) {
  kiln_graph_t g;
  splitk_norm_graph(c, &g);
  size_t dispatches = 0;
  KILN_EXPECT_EQ(splitk_executables(&g, c->target, precision, "norm_parts", &dispatches),
                 c->fused);
  if (precision != KILN_ONNX_PRECISION_F16) KILN_EXPECT_EQ(dispatches, c->dispatches);
  kiln_graph_deinitialize(&g);
  // The norm's rows of n values: the sum's tolerance over k plus the norm's.
  splitk_norm_graph(c, &g);
  splitk_check_at(&g, c->target, (double)c->k + (double)c->n, precision);
  kiln_graph_deinitialize(&g);
}

static const split_norm_case_t kSplitNormCases[] = {
    {37, 1536, 130, false, false, false, "valhall-g78", 2, 1},
    {20, 1536, 64, true, false, false, "valhall-g78", 3, 1},
    {20, 1536, 64, false, true, false, "valhall-g78", 3, 1},
    {20, 1536, 64, false, false, true, "valhall-g78", 3, 0},
    {128, 3072, 768, true, true, false, "ampere-rtx3080-windows", 4, 1},
};

KILN_TEST(OnnxGpuSplitKTest, LayerNormOfTheParts) {
  for (size_t i = 0; i < sizeof(kSplitNormCases) / sizeof(kSplitNormCases[0]); ++i) {
    fprintf(stderr, "split norm case %zu\n", i);
    splitk_norm_check(&kSplitNormCases[i], KILN_ONNX_PRECISION_F32);
  }
}

KILN_TEST(OnnxGpuSplitKTest, LayerNormOfThePartsAtF16) {
  for (size_t i = 0; i < sizeof(kSplitNormCases) / sizeof(kSplitNormCases[0]); ++i) {
    fprintf(stderr, "split norm case %zu (f16)\n", i);
    splitk_norm_check(&kSplitNormCases[i], KILN_ONNX_PRECISION_F16);
  }
}

// On tensor cores (hopper, f16; compiled only): the split products of the
// LayerNorm cases keep their parts' sum for norm_parts to take (not
// gemm_coopmat_split, which sums in the product: slower there); the case
// with Relu before the norm (no fusion) sums in the product instead.
KILN_TEST(OnnxGpuSplitKTest, LayerNormOfThePartsOnTensorCores) {
  static const split_norm_case_t kCases[] = {
      {128, 3072, 768, false, false, false, "hopper-h100-linux", 0, 1},
      {128, 3072, 768, true, true, false, "hopper-h100-linux", 0, 1},
      {128, 3072, 768, false, false, true, "hopper-h100-linux", 0, 0},
  };
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    kiln_graph_t g;
    splitk_norm_graph(&kCases[i], &g);
    kiln_onnx_compile_options_t options;
    kiln_onnx_compile_options_init(&options);
    options.precision = KILN_ONNX_PRECISION_F16;
    options.cooperative_matrix = true;
    options.targets = &kCases[i].target;
    options.target_count = 1;
    kiln_gpu_capture_t capture;
    size_t dispatches = 0;
    KILN_ASSERT_OK(kiln_gpu_capture_begin(&options, &capture));
    KILN_EXPECT_OK(kiln_gpu_dispatch_count(&g, &options, &dispatches));
    kiln_gpu_capture_end(&capture);
    const size_t norms = kiln_gpu_text_count(capture.text, "# executable 'norm_parts_f16");
    const size_t in_product =
        kiln_gpu_text_count(capture.text, "# executable 'gemm_coopmat_split_f16");
    if (norms != kCases[i].fused || in_product != 1 - kCases[i].fused) {
      KILN_ADD_FAILURE("tensor-core norm case %zu: %zu norm_parts, %zu gemm_coopmat_split", i,
                       norms, in_product);
    }
    kiln_gpu_capture_release(&capture);
    kiln_graph_deinitialize(&g);
  }
}

// The same split on fp16 storage (--precision=f16): parts start at
// multiples of 128 halves, partials are fp16 in scratch, and gemv_f16 sums
// them. Against the fp32 reference within 1e-2 of max|ref|.
static void splitk_matmul_f16_graph(kiln_graph_t* g) {
  kiln_graph_initialize(kiln_allocator_system(), "split-k-matmul-f16", g);
  g->opset = 13;
  const int64_t a[3] = {2, 3, 1000}, b[2] = {1000, 9};
  const int32_t in[2] = {kiln_test_graph_input(g, "a", 3, a), kiln_test_graph_input(g, "b", 2, b)};
  int32_t node = -1, y = -1;
  KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "MatMul", in, 2, &node, &y));
  splitk_tail(g, y, -1, true);
  KILN_EXPECT_OK(kiln_graph_infer_shapes(g));
}

KILN_TEST(OnnxGpuSplitKTest, MatMulAtF16) {
  // [2, 3, 1000] x [1000, 9]: folds to 6 x 1000 x 9; on valhall 3 parts of
  // 384 k (the last 232), plus the sum and the casts of a, b and y.
  kiln_graph_t g;
  splitk_matmul_f16_graph(&g);
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.precision = KILN_ONNX_PRECISION_F16;
  const char* const targets[1] = {"valhall-g78"};
  options.targets = targets;
  options.target_count = 1;
  size_t dispatches = 0;
  KILN_EXPECT_OK(kiln_gpu_dispatch_count(&g, &options, &dispatches));
  KILN_EXPECT_EQ(dispatches, 7u);
  kiln_graph_deinitialize(&g);
  splitk_matmul_f16_graph(&g);
  splitk_check_at(&g, "valhall-g78", 1000, KILN_ONNX_PRECISION_F16);
  kiln_graph_deinitialize(&g);
}

// One input channel whose 5 x 20000 window passes the loop budget on the
// tiled core: recorded as parts over kernel rows (conv2d_gemm's kh range),
// each adding into the output; no split-K (one channel).
KILN_TEST(OnnxGpuSplitKTest, KernelRowPartsOnTheTiledCore) {
  const conv_case_t c = {{1, 1, 5, 20003}, {2, 1, 5, 20000}, {0, 0, 0, 0}, 1, 1,
                         true, false, true, 0};
  kiln_graph_t g;
  kiln_graph_initialize(kiln_allocator_system(), "split-rows", &g);
  g.opset = 13;
  const int64_t bias_dims[1] = {2};
  const int32_t in[3] = {kiln_test_graph_input(&g, "x", 4, c.x), kiln_test_graph_input(&g, "w", 4, c.w),
                         kiln_test_graph_input(&g, "b", 1, bias_dims)};
  int32_t node = -1, y = -1;
  KILN_EXPECT_OK(kiln_gpu_graph_add_node(&g, "Conv", in, 3, &node, &y));
  splitk_tail(&g, y, -1, true);
  size_t dispatches = splitk_check(&g, "valhall-g78", 100000);
  KILN_EXPECT_GT(dispatches, 1u);
  KILN_EXPECT_LE(dispatches, 5u);  // at most one part per kernel row
  kiln_graph_deinitialize(&g);
}

// 3-D convs (lower_linear.c's conv3d: D padded, depth taps gathered as
// channels, the 2-D conv on the tiled core or its cpu variant, moved back
// to NCDHW) at f32 and f16 storage, on valhall and the default targets.
typedef struct conv3d_case_t {
  int64_t x[5], w[5];
  int64_t pads[6], strides[3], dilations[3];
  int64_t group;
  bool relu;
} conv3d_case_t;

static void splitk_conv3d_graph(const conv3d_case_t* c, kiln_graph_t* g) {
  kiln_graph_initialize(kiln_allocator_system(), "conv3d", g);
  g->opset = 13;
  const int64_t bias_dims[1] = {c->w[0]};
  const int32_t in[3] = {kiln_test_graph_input(g, "x", 5, c->x),
                         kiln_test_graph_input(g, "w", 5, c->w),
                         kiln_test_graph_input(g, "b", 1, bias_dims)};
  int32_t node = -1, y = -1;
  KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "Conv", in, 3, &node, &y));
  kiln_test_attr_ints(g, node, "pads", c->pads, 6);
  kiln_test_attr_ints(g, node, "strides", c->strides, 3);
  kiln_test_attr_ints(g, node, "dilations", c->dilations, 3);
  kiln_test_attr_int(g, node, "group", c->group);
  splitk_tail(g, y, -1, c->relu);
}

KILN_TEST(OnnxGpuSplitKTest, Conv3dAtF32AndF16) {
  static const conv3d_case_t kCases[] = {
      {{2, 8, 9, 10, 11}, {16, 8, 3, 3, 3}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1, true},
      {{1, 4, 6, 7, 8}, {6, 2, 3, 2, 3}, {1, 0, 1, 2, 1, 0}, {2, 1, 2}, {1, 2, 1}, 2, false},
  };
  const char* const targets[2] = {"valhall-g78", NULL};
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    const conv3d_case_t* c = &kCases[i];
    const double k = (double)(c->w[1] * c->w[2] * c->w[3] * c->w[4]);
    for (size_t t = 0; t < 2; ++t) {
      fprintf(stderr, "conv3d case %zu, %s\n", i, targets[t] ? targets[t] : "default targets");
      kiln_graph_t g;
      splitk_conv3d_graph(c, &g);
      KILN_EXPECT_GT(splitk_check(&g, targets[t], k), 1u);  // pad, gather, conv, copy back
      kiln_graph_deinitialize(&g);
      splitk_conv3d_graph(c, &g);
      splitk_check_at(&g, targets[t], k, KILN_ONNX_PRECISION_F16);
      kiln_graph_deinitialize(&g);
    }
  }
}
